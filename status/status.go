// Package status derives a training job's status (SPEC §12) from the objects it owns, as
// observed, and from render's decisions. It decides nothing about what should exist and talks to
// no cluster: the controller writes what Derive returns, when Changed says so, and records the
// events Events lists after that write succeeds.
package status

import (
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
	"github.com/trainyard/trainyard/render"
)

// Input is what a job's status is derived from.
type Input struct {
	// Job is the job in render's model; Generation is its metadata.generation.
	Job        *render.Job
	Generation int64
	// Current is the status the job holds now.
	Current batch.TrainingJobStatus
	// Pods are the job's pods as observed (the cache corrected by the controller's expectations).
	Pods []*corev1.Pod
	// Out is render's answer; nil when render refused the job (RenderErr says why).
	Out       *render.Output
	RenderErr error
	// TensorBoard is the live TensorBoard Deployment, or nil; TensorBoardPods are its pods, read
	// only while it is not available, to say why.
	TensorBoard     *appsv1.Deployment
	TensorBoardPods []*corev1.Pod
	// Gang is the live PodGroup of the job's gang scheduler, read while pods wait for it, or nil.
	Gang *unstructured.Unstructured
	// CreateRefused is the API server's refusal of the job's latest pod creation, if it was
	// refused and no creation has succeeded since.
	CreateRefused Refusal
	// NameTaken says which object of the job could not be made because another object, not the
	// job's, holds its name.
	NameTaken string
	// TensorBoardTaken says who holds the name of the job's TensorBoard Deployment, which the
	// job therefore has not.
	TensorBoardTaken string
	// TensorBoardRefused is the API server's refusal of the job's TensorBoard Deployment (a quota
	// on Deployments, an admission policy or webhook), which the job therefore has not.
	TensorBoardRefused string
	// GangRefused is the API server's refusal of the job's latest gang object (a Workload or a
	// PodGroup: no pod is created before it), if it was refused and no apply has succeeded since.
	GangRefused string
	Now         time.Time
}

// maxConditionMessage is the longest message a condition may have (metav1.Condition's schema);
// a longer one would fail every status write.
const maxConditionMessage = 32768

// ReasonInvalidSpec is the reason of Initialized=False when render refuses a job that admission
// let through (a check only render can make).
const ReasonInvalidSpec = "InvalidSpec"

// Derive computes the job's status. Conditions keep their lastTransitionTime when their status
// does not change.
func Derive(in Input) batch.TrainingJobStatus {
	now := metav1.NewTime(in.Now.UTC().Truncate(time.Second))
	st := *in.Current.DeepCopy()
	st.ObservedGeneration = in.Generation
	st.Selector = Selector(in.Job)
	st.DesiredReplicas = in.Job.PodCount()
	if in.Out == nil {
		msg := "the job cannot be run"
		if in.RenderErr != nil {
			msg = shorten(in.RenderErr.Error(), maxConditionMessage)
		}
		if st.Phase == "" {
			st.Phase = batch.JobPending
		}
		setCondition(&st, now, batch.ConditionInitialized, false, ReasonInvalidSpec, msg)
		setWaiting(&st, waitingCause(in, &st), now)
		return st
	}
	d := &in.Out.Decisions
	st.Phase = d.Phase
	st.BackoffCount = d.BackoffCount
	st.DisruptionCount = d.DisruptionCount
	st.GangRestarts = d.GangRestarts
	st.LastScaleDownTime = d.LastScaleDownTime
	st.StartTime = d.StartTime
	st.CompletionTime = d.CompletionTime

	byName := make(map[string]*corev1.Pod, len(in.Pods))
	for _, p := range in.Pods {
		byName[p.Name] = p
	}
	deleting := make(map[string]bool, len(d.Delete))
	for _, del := range d.Delete {
		deleting[del.Name] = true
	}
	st.Aggregate = aggregate(in.Job, d, byName, deleting)
	st.Tasks = tasks(in.Job, st.Tasks, d, byName)
	if in.Job.Kubeflow == nil {
		// A Kubeflow job's status holds counts per type (kubeflow.go), never the list.
		trimReplicaStatus(st.Tasks, replicaStatusBudget)
	}
	conditions(&st, in.Job, d, now)
	setWaiting(&st, waitingCause(in, &st), now)
	st.Tensorboard = tensorBoard(in.Job, in.TensorBoard, in.TensorBoardPods, in.TensorBoardTaken, in.TensorBoardRefused)
	return st
}

// Selector selects the job's pods; the scale subresource hands it to autoscalers.
func Selector(j *render.Job) string {
	return labels.SelectorFromSet(labels.Set{batch.LabelOwnerKind: j.Kind, batch.LabelOwnerName: j.Name}).String()
}

// aggregate counts every desired replica once: by its pod's phase, as creating when it has no pod
// yet, or as deleted when its pod is going or gone by the job's own decision.
func aggregate(j *render.Job, d *render.Decisions, pods map[string]*corev1.Pod, deleting map[string]bool) batch.Aggregate {
	var a batch.Aggregate
	stopped := d.Phase == batch.JobSucceeded || d.Phase == batch.JobFailed || d.Phase == batch.JobPaused || j.Pause
	for _, t := range j.Replicas {
		for i := int32(0); i < t.Replicas; i++ {
			name := render.PodName(j.Name, t.Type, i)
			p := pods[name]
			switch {
			case p == nil && stopped:
				a.Deleted++
			case p == nil:
				a.Creating++
			case p.DeletionTimestamp != nil || deleting[name]:
				a.Deleted++
			default:
				switch p.Status.Phase {
				case corev1.PodRunning:
					a.Running++
				case corev1.PodSucceeded:
					a.Succeeded++
				case corev1.PodFailed:
					a.Failed++
				case corev1.PodUnknown:
					a.Unknown++
				default:
					a.Pending++
				}
			}
		}
	}
	return a
}

// tasks reports each replica type: its restarts so far and its pods by index. A replica restarted
// alone counts for its type; a gang restart once for every type.
func tasks(j *render.Job, prev []batch.TaskStatus, d *render.Decisions, pods map[string]*corev1.Pod) []batch.TaskStatus {
	out := make([]batch.TaskStatus, 0, len(j.Replicas))
	for _, t := range j.Replicas {
		ts := batch.TaskStatus{Type: t.Type}
		if i := slices.IndexFunc(prev, func(p batch.TaskStatus) bool { return p.Type == t.Type }); i >= 0 {
			ts.RestartCount = prev[i].RestartCount
		}
		switch {
		case d.GangRestart:
			ts.RestartCount++
		default:
			for _, r := range d.Restarts {
				if r.Type == t.Type {
					ts.RestartCount++
				}
			}
		}
		for i := int32(0); i < t.Replicas; i++ {
			if p := pods[render.PodName(j.Name, t.Type, i)]; p != nil {
				ts.ReplicaStatus = append(ts.ReplicaStatus, replicaStatus(p))
			}
		}
		out = append(out, ts)
	}
	return out
}

func replicaStatus(p *corev1.Pod) batch.ReplicaStatus {
	rs := batch.ReplicaStatus{Name: p.Name, UID: p.UID, Phase: p.Status.Phase}
	if rs.Phase == "" {
		rs.Phase = corev1.PodPending
	}
	for _, c := range p.Status.ContainerStatuses {
		cs := batch.ContainerStatus{Name: c.Name}
		switch {
		case c.State.Terminated != nil:
			cs.State, cs.ExitCode = "terminated", &c.State.Terminated.ExitCode
		case c.State.Running != nil:
			cs.State = "running"
		case c.State.Waiting != nil:
			cs.State = "waiting"
		}
		rs.Containers = append(rs.Containers, cs)
	}
	return rs
}

// conditions sets each condition from the phase and the round's decisions.
func conditions(st *batch.TrainingJobStatus, j *render.Job, d *render.Decisions, now metav1.Time) {
	reason := d.Reason
	if reason == "" {
		reason = string(d.Phase)
	}
	switch {
	case d.Blocked != nil:
		setCondition(st, now, batch.ConditionInitialized, false, d.Blocked.Reason, d.Blocked.Message)
	case d.Queued != nil && j.Kubeflow == nil:
		// A kubeflow.org job Kueue holds is Created all the same, as Kubeflow's operator says of
		// a job it has taken on; its Waiting condition says Queued.
		setCondition(st, now, batch.ConditionInitialized, false, d.Queued.Reason, d.Queued.Message)
	case d.StartTime != nil:
		setCondition(st, now, batch.ConditionInitialized, true, batch.ReasonCreated, "the job started creating its pods (the Waiting condition says what keeps any from running)")
	case j.Kubeflow != nil:
		// Kubeflow's Created means the operator has taken the job on, pods or not: a job
		// suspended from the start has it too.
		setCondition(st, now, batch.ConditionInitialized, true, batch.ReasonCreated, "the job was taken on; no pod is created yet")
	}
	switch {
	case d.Phase == batch.JobRunning:
		setCondition(st, now, batch.ConditionRunning, true, reason, d.Message)
	case meta.FindStatusCondition(st.Conditions, batch.ConditionRunning) != nil:
		setCondition(st, now, batch.ConditionRunning, false, reason, d.Message)
	}
	finished := d.Phase == batch.JobSucceeded || d.Phase == batch.JobFailed
	switch {
	case finished:
		// A job that ended before a pause took its pods is not paused; one resumed earlier keeps
		// the condition that says so.
	case j.Pause:
		setCondition(st, now, batch.ConditionPaused, true, reason, d.Message)
	case meta.FindStatusCondition(st.Conditions, batch.ConditionPaused) != nil:
		setCondition(st, now, batch.ConditionPaused, false, batch.ReasonResuming, "the job was resumed")
	}
	if len(d.Restarts) > 0 {
		setCondition(st, now, batch.ConditionReplicaFailure, true, batch.ReasonRestarting, restartMessage(d))
	}
	switch d.Phase {
	case batch.JobSucceeded:
		setCondition(st, now, batch.ConditionCompleted, true, reason, d.Message)
	case batch.JobFailed:
		setCondition(st, now, batch.ConditionFailed, true, reason, d.Message)
		if reason != batch.ReasonDeadlineExceeded {
			setCondition(st, now, batch.ConditionReplicaFailure, true, reason, d.Message)
		}
	}
}

func setCondition(st *batch.TrainingJobStatus, now metav1.Time, typ string, status bool, reason, message string) {
	s := metav1.ConditionFalse
	if status {
		s = metav1.ConditionTrue
	}
	if reason == "" {
		reason = typ
	}
	// Note: messages are written short (render.ListEndings); the cut is the last guard of the
	// status write, which a longer message would fail.
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: typ, Status: s, Reason: reason, Message: shorten(message, maxConditionMessage), LastTransitionTime: now})
}

// restartMessage says which pods ended, how, and what is restarted: "w-1 exited with code 1;
// every pod of the job is restarted" or "w-1 was evicted; it is restarted alone". No count or
// time: the condition keeps its message until the next restart.
func restartMessage(d *render.Decisions) string {
	what := "every pod of the job is restarted"
	if !d.GangRestart {
		what = "it is restarted alone"
		if len(d.Restarts) > 1 {
			what = "they are restarted alone"
		}
	}
	return endings(d) + "; " + what
}

// endings names how the first render.EndingsListed replicas restarted in a round ended, and
// counts the others.
func endings(d *render.Decisions) string {
	n := min(len(d.Restarts), render.EndingsListed)
	parts := make([]string, 0, n)
	for _, r := range d.Restarts[:n] {
		parts = append(parts, r.Pod+" "+ended(r))
	}
	return render.ListEndings(parts, len(d.Restarts))
}

// tensorBoard reports the TensorBoard Deployment as the job's dependent.
func tensorBoard(j *render.Job, d *appsv1.Deployment, pods []*corev1.Pod, taken, refused string) *batch.DependentStatus {
	if j.TensorBoard == nil {
		return nil
	}
	st := &batch.DependentStatus{Name: "tensorboard", Type: "Normal", Reason: "Creating", Action: "Create"}
	if d == nil {
		if taken != "" {
			// Another object holds its name: it will not be made until that one goes.
			st.Type, st.Reason, st.Note = corev1.EventTypeWarning, render.ReasonNameConflict, shorten(taken, maxWaitingMessage)
		} else if refused != "" {
			// The API server refused the Deployment itself: it is not made until the cause goes.
			st.Type, st.Reason, st.Note = corev1.EventTypeWarning, batch.ReasonCreateFailed, shorten(refused, maxWaitingMessage)
		}
		return st
	}
	st.Dependent = &corev1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: d.Namespace, Name: d.Name, UID: d.UID}
	st.Action = "Apply"
	st.Reason = "Progressing"
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentAvailable && c.Status == corev1.ConditionTrue {
			st.Ready, st.Reason = true, "Available"
		}
	}
	// A TensorBoard that is not available says why its pod cannot start, as a job does.
	if !st.Ready {
		if c := podCause(pods, 1); c != nil {
			st.Type, st.Reason, st.Note = corev1.EventTypeWarning, c.reason, shorten(c.message, maxWaitingMessage)
		} else if c := replicaFailure(d); c != nil {
			// No pod to read: its ReplicaSet could not create one (Pod Security, a quota), in the
			// API server's words.
			st.Type, st.Reason, st.Note = corev1.EventTypeWarning, batch.ReasonCreateFailed, shorten(c.Message, maxWaitingMessage)
		}
	}
	return st
}

// replicaFailure is the Deployment's ReplicaFailure condition when it is True, or nil.
func replicaFailure(d *appsv1.Deployment) *appsv1.DeploymentCondition {
	for i := range d.Status.Conditions {
		if c := &d.Status.Conditions[i]; c.Type == appsv1.DeploymentReplicaFailure && c.Status == corev1.ConditionTrue {
			return c
		}
	}
	return nil
}

// Changed reports whether next differs from prev, and whether the difference is urgent: the job
// finished, or a replica was restarted (backoffCount, disruptionCount, gangRestarts, a
// restartCount), or scaled away (lastScaleDownTime, which the failures it causes are judged by).
// A controller writes urgent
// changes at once, so an outcome is never late and a counter never lost, and may batch the others
// (phase Pending or Running, counts, conditions) to save writes.
func Changed(prev, next *batch.TrainingJobStatus) (changed, urgent bool) {
	if equality.Semantic.DeepEqual(prev, next) {
		return false, false
	}
	finished := func(s *batch.TrainingJobStatus) bool {
		return s.Phase == batch.JobSucceeded || s.Phase == batch.JobFailed
	}
	if finished(next) && !finished(prev) || prev.BackoffCount != next.BackoffCount ||
		prev.DisruptionCount != next.DisruptionCount || prev.GangRestarts != next.GangRestarts ||
		!prev.LastScaleDownTime.Equal(next.LastScaleDownTime) {
		return true, true
	}
	before := make(map[string]int32, len(prev.Tasks))
	for _, t := range prev.Tasks {
		before[t.Type] = t.RestartCount
	}
	for _, t := range next.Tasks {
		if t.RestartCount != before[t.Type] {
			return true, true
		}
	}
	return true, false
}
