package main

import (
	"cmp"
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
	kubeflowv1 "github.com/trainyard/trainyard/apis/kubeflow/v1"
	"github.com/trainyard/trainyard/hack/internal/localrun"
	"github.com/trainyard/trainyard/render"
)

// world is everything the soak's watches have seen, on the soak's own clock: each job, each pod
// and each Service the operator made, including the ones gone. The invariants are judged on it.
// Note: the history matters, not only the present: a pod that failed and was restarted is gone
// from the cluster, but its exit code decides whether the job's outcome was right.
type world struct {
	mu       sync.Mutex
	jobs     map[types.UID]*jobRecord
	pods     map[types.UID]*podRecord
	services map[types.UID]*serviceRecord
	// lastChange is when a watch last delivered anything.
	lastChange time.Time
}

func newWorld() *world {
	return &world{jobs: map[types.UID]*jobRecord{}, pods: map[types.UID]*podRecord{}, services: map[types.UID]*serviceRecord{}}
}

// jobRecord is what the watch saw of one job.
type jobRecord struct {
	kind, name string
	uid        types.UID
	created    time.Time // creationTimestamp
	spec       jobSpec   // as last seen
	st         jobStatus // as last seen
	generation int64
	// specChanged is when the watch last saw the spec change (a new generation); pauseChanged
	// when it last saw pause (suspend) switched; everPaused whether it ever was.
	specChanged, pauseChanged time.Time
	everPaused                bool
	// terminal is the first terminal phase seen, at terminalAt; leftTerminal describes a later
	// observation of another phase (terminal phases are sticky).
	terminal     string
	terminalAt   time.Time
	leftTerminal string
	// backoff is every backoffCount the status showed, with when it was first seen; disruptions
	// every disruptionCount.
	backoff, disruptions []countSeen
	// deleted is when the soak asked for the job's deletion; gone when the watch saw it go.
	deleted, gone time.Time
}

type countSeen struct {
	n  int32
	at time.Time
}

func (j *jobRecord) exists() bool { return j.gone.IsZero() }

func (j *jobRecord) String() string { return j.kind + " " + j.name }

// podRecord is what the watch saw of one pod (one UID: a restart makes a new record).
type podRecord struct {
	uid, jobUID types.UID
	name        string
	typ         string // the replica type label (lower case for the Kubeflow kinds)
	index       int
	created     time.Time // creationTimestamp
	phase       corev1.PodPhase
	exitCode    *int32 // the training container's, once terminated
	// started and finished are the terminated container's startedAt and finishedAt.
	started, finished time.Time
	disrupted         bool
	// byHand: the soak deleted it (a disruption: someone other than the operator deleted it).
	byHand bool
	// terminatedAt is when it was first seen Succeeded or Failed; deleting when its
	// deletionTimestamp was first seen; gone when its deletion was seen.
	terminatedAt, deleting, gone time.Time
}

func (p *podRecord) exists() bool { return p.gone.IsZero() }

// live: the pod exists and is not being deleted.
func (p *podRecord) live() bool { return p.exists() && p.deleting.IsZero() }

func (p *podRecord) terminated() bool {
	return p.phase == corev1.PodSucceeded || p.phase == corev1.PodFailed
}

func (p *podRecord) describe() string {
	s := fmt.Sprintf("%s (uid %.8s, created %s) %s", p.name, p.uid, p.created.Format("15:04:05"), p.phase)
	if p.exitCode != nil {
		s += fmt.Sprintf(" exit %d", *p.exitCode)
	}
	if !p.terminatedAt.IsZero() {
		s += " at " + clock(p.terminatedAt)
	}
	if !p.gone.IsZero() {
		s += ", gone " + clock(p.gone)
	}
	return s
}

// serviceRecord is what the watch saw of one Service the operator made.
type serviceRecord struct {
	uid, jobUID types.UID
	name        string
	created     time.Time
	gone        time.Time
}

// jobSpec is what the invariants read of a job's spec, the same for every kind: the pod count of
// each replica type (after elastic sizing), restart policies with the kind's defaults applied,
// which replica decides success, and the run policy. It is derived here from the API object as
// SPEC.md and the API documents state it, not by the operator's code.
type jobSpec struct {
	types    []string         // replica types as the pods' type label spells them, in spec order
	replicas map[string]int32 // desired pods by type
	policy   map[string]batch.RestartPolicy
	// leader is the replica type whose replica 0 decides success; allWorkers: every worker must
	// succeed instead (TFJob successPolicy AllWorkers, without a chief).
	leader       string
	allWorkers   bool
	backoffLimit *int32 // nil: no limit (a Kubeflow job that sets none)
	cleanUp      batch.CleanUpPolicy
	deadline     *int64
	paused       bool
}

// jobStatus is what the invariants read of a job's status: the phase (for the Kubeflow kinds read
// from their conditions), the reason of the terminal condition, and the counters.
type jobStatus struct {
	phase           string
	reason          string
	completion      time.Time
	backoffCount    int32
	disruptionCount int32
	// lastScaleDown is status.lastScaleDownTime: failures soon after it are disruptions.
	lastScaleDown time.Time
}

func terminalPhase(p string) bool {
	return p == string(batch.JobSucceeded) || p == string(batch.JobFailed)
}

// asEnded is p as the operator judges its end: a replica started before the job's last
// scale-down that exited non-zero within render.ScaleDownWindow of it ended on the peer taken
// away, a disruption (render/scaledown.go).
func (j *jobRecord) asEnded(p *podRecord) *podRecord {
	at := j.st.lastScaleDown
	if at.IsZero() || p.disrupted || p.phase != corev1.PodFailed || p.exitCode == nil || *p.exitCode == 0 {
		return p
	}
	started, end := cmp.Or(p.started, p.created), cmp.Or(p.finished, p.terminatedAt)
	if started.After(at) || end.Before(at) || end.After(at.Add(render.ScaleDownWindow)) {
		return p
	}
	q := *p
	q.disrupted = true
	return &q
}

// Retryable exit codes of the ExitCode restart policy (SPEC §7).
var retryableExitCodes = map[int32]bool{130: true, 137: true, 138: true, 143: true}

// restartVerdict is what SPEC §7 says becomes of a terminated replica under its restart policy:
// "restart", "fail" (the job fails) or "keep".
func restartVerdict(policy batch.RestartPolicy, p *podRecord) string {
	if p.byHand && p.phase != corev1.PodSucceeded && p.phase != corev1.PodFailed {
		// Deleted by someone else while it ran: a disruption (SPEC §7).
		if policy == batch.RestartPolicyNever {
			return "fail"
		}
		return "restart"
	}
	if p.phase == corev1.PodSucceeded {
		if policy == batch.RestartPolicyAlways {
			return "restart"
		}
		return "keep"
	}
	switch policy {
	case batch.RestartPolicyOnFailure, batch.RestartPolicyAlways:
		return "restart"
	case batch.RestartPolicyExitCode:
		if p.disrupted || (p.exitCode != nil && retryableExitCodes[*p.exitCode]) {
			return "restart"
		}
	}
	return "fail"
}

// specOf reads a job of any kind.
func specOf(obj client.Object) (jobSpec, jobStatus) {
	switch j := obj.(type) {
	case *batch.PyTorchTrainingJob:
		s := t9kSpec(j.Spec.RunPolicy, j.Spec.RunMode)
		for _, r := range j.Spec.ReplicaSpecs {
			s.add(r.Type, deref(r.Replicas, 1), r.RestartPolicy, batch.RestartPolicyNever)
		}
		if e := j.Spec.Elastic; e != nil && on(e.Enabled, e.Enable) && j.Spec.TorchrunConfig != nil && on(j.Spec.TorchrunConfig.Enabled, j.Spec.TorchrunConfig.Enable) {
			s.elastic(e)
		}
		s.leader = s.types[0]
		if _, ok := s.replicas[batch.PyTorchReplicaMaster]; ok {
			s.leader = batch.PyTorchReplicaMaster
		}
		return s, t9kStatus(&j.Status)
	case *batch.TensorFlowTrainingJob:
		s := t9kSpec(j.Spec.RunPolicy, j.Spec.RunMode)
		for _, r := range j.Spec.ReplicaSpecs {
			s.add(string(r.Type), deref(r.Replicas, 1), r.RestartPolicy, batch.RestartPolicyNever)
		}
		s.leader = firstOf(s.replicas, "chief", "worker")
		return s, t9kStatus(&j.Status)
	case *kubeflowv1.PyTorchJob:
		rp := j.Spec.EffectiveRunPolicy()
		s := kubeflowSpec(rp)
		for _, t := range []kubeflowv1.ReplicaType{kubeflowv1.ReplicaTypeMaster, kubeflowv1.ReplicaTypeWorker} {
			if r := j.Spec.PyTorchReplicaSpecs[t]; r != nil {
				s.add(strings.ToLower(string(t)), deref(r.Replicas, 1), batch.RestartPolicy(r.RestartPolicy), batch.RestartPolicy(kubeflowv1.PyTorchDefaultRestartPolicy))
			}
		}
		s.leader = firstOf(s.replicas, "master", "worker")
		return s, kubeflowStatus(&j.Status)
	case *kubeflowv1.TFJob:
		rp := j.Spec.EffectiveRunPolicy()
		s := kubeflowSpec(rp)
		for _, t := range []kubeflowv1.ReplicaType{kubeflowv1.ReplicaTypeChief, kubeflowv1.ReplicaTypeMaster, kubeflowv1.ReplicaTypePS, kubeflowv1.ReplicaTypeWorker, kubeflowv1.ReplicaTypeEvaluator} {
			if r := j.Spec.TFReplicaSpecs[t]; r != nil {
				s.add(strings.ToLower(string(t)), deref(r.Replicas, 1), batch.RestartPolicy(r.RestartPolicy), batch.RestartPolicy(kubeflowv1.TFDefaultRestartPolicy))
			}
		}
		s.leader = firstOf(s.replicas, "chief", "master", "worker")
		s.allWorkers = s.leader == "worker" && j.Spec.SuccessPolicy != nil && *j.Spec.SuccessPolicy == kubeflowv1.SuccessPolicyAllWorkers
		return s, kubeflowStatus(&j.Status)
	}
	panic(fmt.Sprintf("not a job: %T", obj))
}

func (s *jobSpec) add(typ string, n int32, policy, def batch.RestartPolicy) {
	if policy == "" {
		policy = def
	}
	s.types = append(s.types, typ)
	s.replicas[typ] = n
	s.policy[typ] = policy
}

// elastic sizes an elastic PyTorchTrainingJob's types as SPEC §10 and the README's decisions say
// for a spec without scalingWeights: expectedReplicas (default maxReplicas, clamped to the bounds)
// counts every pod; the master type keeps its replicas and the other types share the rest equally,
// the remainder going to the earlier types in spec order.
func (s *jobSpec) elastic(e *batch.ElasticConfig) {
	lo, hi := deref(e.MinReplicas, 1), deref(e.MaxReplicas, 1)
	hi = max(hi, lo)
	expected := min(max(deref(e.ExpectedReplicas, hi), lo), hi)
	var sharing []string
	rest := expected
	for _, t := range s.types {
		if t == batch.PyTorchReplicaMaster {
			rest -= s.replicas[t]
		} else {
			sharing = append(sharing, t)
		}
	}
	if len(sharing) == 0 {
		return
	}
	rest = max(rest, 0)
	n := int32(len(sharing))
	for i, t := range sharing {
		s.replicas[t] = rest / n
		if int32(i) < rest%n {
			s.replicas[t]++
		}
	}
}

func t9kSpec(rp *batch.RunPolicy, mode *batch.RunMode) jobSpec {
	s := jobSpec{replicas: map[string]int32{}, policy: map[string]batch.RestartPolicy{}, backoffLimit: ptrTo(int32(3)), cleanUp: batch.CleanUpPolicyUnfinished}
	if rp != nil {
		if rp.BackoffLimit != nil {
			s.backoffLimit = rp.BackoffLimit
		}
		s.deadline = rp.ActiveDeadlineSeconds
		switch strings.ToLower(string(rp.CleanUpPolicy)) {
		case "all":
			s.cleanUp = batch.CleanUpPolicyAll
		case "none":
			s.cleanUp = batch.CleanUpPolicyNone
		}
	}
	if mode != nil && mode.Pause != nil {
		s.paused = on(mode.Pause.Enabled, mode.Pause.Enable)
	}
	return s
}

func kubeflowSpec(rp kubeflowv1.RunPolicy) jobSpec {
	s := jobSpec{replicas: map[string]int32{}, policy: map[string]batch.RestartPolicy{}, backoffLimit: rp.BackoffLimit,
		deadline: rp.ActiveDeadlineSeconds, cleanUp: batch.CleanUpPolicyUnfinished, paused: deref(rp.Suspend, false)}
	if rp.CleanPodPolicy != nil {
		switch *rp.CleanPodPolicy {
		case kubeflowv1.CleanPodPolicyAll:
			s.cleanUp = batch.CleanUpPolicyAll
		case kubeflowv1.CleanPodPolicyNone:
			s.cleanUp = batch.CleanUpPolicyNone
		}
	}
	return s
}

func t9kStatus(st *batch.TrainingJobStatus) jobStatus {
	out := jobStatus{phase: string(st.Phase), backoffCount: st.BackoffCount, disruptionCount: st.DisruptionCount}
	if st.LastScaleDownTime != nil {
		out.lastScaleDown = st.LastScaleDownTime.Time
	}
	for _, c := range st.Conditions {
		if (c.Type == batch.ConditionCompleted || c.Type == batch.ConditionFailed) && c.Status == "True" {
			out.reason = c.Reason
		}
	}
	if st.CompletionTime != nil {
		out.completion = st.CompletionTime.Time
	}
	return out
}

// kubeflowStatus reads the phase from Kubeflow's conditions: Failed or Succeeded True is the
// outcome; Suspended True is Paused (as Kubeflow's operator says it, from the moment the pods are
// asked to go: the settled check waits for them to be gone).
func kubeflowStatus(st *kubeflowv1.JobStatus) jobStatus {
	out := jobStatus{backoffCount: st.BackoffCount, disruptionCount: st.DisruptionCount}
	if st.LastScaleDownTime != nil {
		out.lastScaleDown = st.LastScaleDownTime.Time
	}
	is := map[kubeflowv1.JobConditionType]*kubeflowv1.JobCondition{}
	for i := range st.Conditions {
		if st.Conditions[i].Status == corev1.ConditionTrue {
			is[st.Conditions[i].Type] = &st.Conditions[i]
		}
	}
	switch {
	case is[kubeflowv1.JobFailed] != nil:
		out.phase, out.reason = string(batch.JobFailed), is[kubeflowv1.JobFailed].Reason
	case is[kubeflowv1.JobSucceeded] != nil:
		out.phase, out.reason = string(batch.JobSucceeded), is[kubeflowv1.JobSucceeded].Reason
	case is[kubeflowv1.JobSuspended] != nil:
		out.phase = string(batch.JobPaused)
	case is[kubeflowv1.JobRunning] != nil:
		out.phase = string(batch.JobRunning)
	case len(st.Conditions) > 0:
		out.phase = string(batch.JobPending)
	}
	if st.CompletionTime != nil {
		out.completion = st.CompletionTime.Time
	}
	return out
}

func firstOf(m map[string]int32, want ...string) string {
	for _, w := range want {
		if _, ok := m[w]; ok {
			return w
		}
	}
	return want[len(want)-1]
}

func on(canonical, alias *bool) bool {
	if canonical != nil {
		return *canonical
	}
	return alias != nil && *alias
}

func deref[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}

// observeJob records a job event.
func (w *world) observeJob(kind string) func(o client.Object, deleted bool) {
	return func(o client.Object, deleted bool) {
		now := time.Now()
		w.mu.Lock()
		defer w.mu.Unlock()
		w.lastChange = now
		j := w.jobs[o.GetUID()]
		if j == nil {
			j = &jobRecord{kind: kind, name: o.GetName(), uid: o.GetUID(), created: o.GetCreationTimestamp().Time, specChanged: now, pauseChanged: now}
			w.jobs[o.GetUID()] = j
		}
		if deleted {
			if j.gone.IsZero() {
				j.gone = now
			}
			return
		}
		spec, st := specOf(o)
		if o.GetGeneration() != j.generation {
			j.generation, j.specChanged = o.GetGeneration(), now
		}
		if spec.paused != j.spec.paused {
			j.pauseChanged = now
		}
		j.everPaused = j.everPaused || spec.paused
		j.spec, j.st = spec, st
		if n := len(j.backoff); n == 0 || j.backoff[n-1].n != st.backoffCount {
			j.backoff = append(j.backoff, countSeen{n: st.backoffCount, at: now})
		}
		if n := len(j.disruptions); n == 0 || j.disruptions[n-1].n != st.disruptionCount {
			j.disruptions = append(j.disruptions, countSeen{n: st.disruptionCount, at: now})
		}
		switch {
		case j.terminal == "" && terminalPhase(st.phase):
			j.terminal, j.terminalAt = st.phase, now
		case j.terminal != "" && st.phase != j.terminal && j.leftTerminal == "":
			j.leftTerminal = fmt.Sprintf("seen %s at %s, then %s at %s", j.terminal, clock(j.terminalAt), or(st.phase, "no phase"), clock(now))
		}
	}
}

// markByHand records that the soak deleted a pod (it may already be gone from the watch).
func (w *world) markByHand(uid types.UID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if r := w.pods[uid]; r != nil {
		r.byHand = true
	}
}

// observePod records a pod event.
func (w *world) observePod(obj client.Object, deleted bool) {
	now := time.Now()
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.lastChange = now
	r := w.pods[p.UID]
	if r == nil {
		index, err := strconv.Atoi(p.Labels[batch.LabelReplicaIndex])
		if err != nil {
			index = -1
		}
		r = &podRecord{uid: p.UID, jobUID: controllerUID(p), name: p.Name, typ: p.Labels[batch.LabelReplicaType], index: index, created: p.CreationTimestamp.Time}
		w.pods[p.UID] = r
	}
	if deleted {
		if r.gone.IsZero() {
			r.gone = now
		}
		return
	}
	r.phase = p.Status.Phase
	if p.DeletionTimestamp != nil && r.deleting.IsZero() {
		r.deleting = now
	}
	if r.terminated() && r.terminatedAt.IsZero() {
		r.terminatedAt = now
		for _, c := range p.Status.ContainerStatuses {
			if c.State.Terminated != nil {
				code := c.State.Terminated.ExitCode
				r.exitCode = &code
				r.started, r.finished = c.State.Terminated.StartedAt.Time, c.State.Terminated.FinishedAt.Time
				break
			}
		}
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue {
			r.disrupted = true
		}
	}
	if p.Status.Reason == "Evicted" {
		r.disrupted = true
	}
}

// observeService records a Service event.
func (w *world) observeService(obj client.Object, deleted bool) {
	now := time.Now()
	s, ok := obj.(*corev1.Service)
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.lastChange = now
	r := w.services[s.UID]
	if r == nil {
		r = &serviceRecord{uid: s.UID, jobUID: controllerUID(s), name: s.Name, created: s.CreationTimestamp.Time}
		w.services[s.UID] = r
	}
	if deleted && r.gone.IsZero() {
		r.gone = now
	}
}

func controllerUID(o client.Object) types.UID {
	for _, ref := range o.GetOwnerReferences() {
		if ref.Controller != nil && *ref.Controller {
			return ref.UID
		}
	}
	return ""
}

// quietFor is how long no watch has delivered anything.
func (w *world) quietFor() time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return time.Since(w.lastChange)
}

// watch starts informers on the namespace's jobs of the four kinds and on the pods and Services
// the operator labels (tensorstack.dev/owner-kind), feeding w, and waits for them to sync.
func (w *world) watch(ctx context.Context, conn localrun.Connection, namespace string) error {
	owned, err := labels.NewRequirement(batch.LabelOwnerKind, selection.Exists, nil)
	if err != nil {
		return err
	}
	selector := labels.NewSelector().Add(*owned)
	return conn.Watch(ctx, namespace,
		localrun.Observer{Object: &batch.PyTorchTrainingJob{}, Observe: w.observeJob(kindPTJ)},
		localrun.Observer{Object: &batch.TensorFlowTrainingJob{}, Observe: w.observeJob(kindTFJ)},
		localrun.Observer{Object: &kubeflowv1.PyTorchJob{}, Observe: w.observeJob(kindPT)},
		localrun.Observer{Object: &kubeflowv1.TFJob{}, Observe: w.observeJob(kindTF)},
		localrun.Observer{Object: &corev1.Pod{}, Selector: selector, Observe: w.observePod},
		localrun.Observer{Object: &corev1.Service{}, Selector: selector, Observe: w.observeService},
	)
}

func clock(t time.Time) string { return t.Format("15:04:05.000") }

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
