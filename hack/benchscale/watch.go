package main

import (
	"context"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/client"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
	kubeflowv1 "github.com/trainyard/trainyard/apis/kubeflow/v1"
	"github.com/trainyard/trainyard/hack/internal/localrun"
)

// tracker records, on the bench's own clock, when the bench's watches first saw each pod and
// each job reach each state. Every time figure of the report is a difference of these times, so
// all of them share one clock and one watch latency.
type tracker struct {
	mu   sync.Mutex
	pods map[string]*podRecord // by name: the bench works in one namespace
	jobs map[string]*jobRecord
	// previous holds, by name, the records of the pods that new pods of the same name replaced,
	// oldest first (the gang restart's old pods).
	previous map[string][]*podRecord
	// lastChange is when a watch last delivered any change of a pod or a job.
	lastChange time.Time
	// groupLabel and roleLabel are the pod labels that name a pod's job and its replica type.
	groupLabel, roleLabel string
}

// podRecord is what the watch saw of one pod.
type podRecord struct {
	job, replicaType string // replicaType in lower case: master, worker
	phase            corev1.PodPhase
	deleting         bool      // has a deletionTimestamp
	deletionSeen     time.Time // first seen with a deletionTimestamp
	seen             time.Time // first seen: the pod exists
	bound            time.Time // first seen with a node
	running          time.Time // first seen Running
	terminated       time.Time // first seen Succeeded or Failed
	gone             time.Time // deletion seen
}

func (p *podRecord) exists() bool { return p.gone.IsZero() }

// unfinished: the pod still exists and has not ended (it may be being deleted).
func (p *podRecord) unfinished() bool {
	return p.exists() && p.phase != corev1.PodSucceeded && p.phase != corev1.PodFailed
}

// jobRecord is what the watch saw of one job.
type jobRecord struct {
	desired   int32 // pods the spec asks for
	phase     batch.JobPhase
	running   int32 // status.aggregate.running, as last seen
	phaseSeen map[batch.JobPhase]time.Time
	// allRunning is when status.aggregate.running == desired was first seen.
	allRunning time.Time
	gone       time.Time
	// history is every status the watch delivered, in order: the gang restart's figures look for
	// the first one after a moment.
	history []jobSample
}

// jobSample is one status of a job as the watch delivered it.
type jobSample struct {
	at                            time.Time
	phase                         batch.JobPhase
	running                       int32
	backoff, disruptions, restart int32 // backoffCount, disruptionCount, gangRestarts
}

// newTracker tracks the operator's pods (the T9k labels, which it puts on the pods of both APIs).
func newTracker() *tracker {
	return newTrackerOf(batch.LabelOwnerName, batch.LabelReplicaType)
}

// newTrackerOf tracks pods grouped into jobs by groupLabel, their role in roleLabel.
func newTrackerOf(groupLabel, roleLabel string) *tracker {
	return &tracker{pods: map[string]*podRecord{}, jobs: map[string]*jobRecord{}, previous: map[string][]*podRecord{},
		groupLabel: groupLabel, roleLabel: roleLabel}
}

// expectJob records a job the bench is about to create, before the create call: the watch can
// deliver the job before the call returns. The watches ignore jobs not expected.
func (t *tracker) expectJob(name string, desired int32) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.jobs[name] = &jobRecord{desired: desired, phaseSeen: map[batch.JobPhase]time.Time{}}
}

// reset forgets every record: a new size starts once everything of the last one is gone, and the
// waits look at every record many times a second.
func (t *tracker) reset() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.pods, t.jobs, t.previous = map[string]*podRecord{}, map[string]*jobRecord{}, map[string][]*podRecord{}
}

// view runs f with the records, under the tracker's lock.
func (t *tracker) view(f func(pods map[string]*podRecord, jobs map[string]*jobRecord)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	f(t.pods, t.jobs)
}

// quietFor is how long no pod or job has changed.
func (t *tracker) quietFor() time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	return time.Since(t.lastChange)
}

func (t *tracker) observePod(obj client.Object, deleted bool) {
	now := time.Now()
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lastChange = now
	r := t.pods[p.Name]
	if r == nil || (!r.exists() && !deleted) { // new, or a new pod of a name seen before
		if r != nil {
			t.previous[p.Name] = append(t.previous[p.Name], r)
		}
		r = &podRecord{job: p.Labels[t.groupLabel], replicaType: strings.ToLower(p.Labels[t.roleLabel]), seen: now}
		t.pods[p.Name] = r
	}
	if deleted {
		if r.gone.IsZero() {
			r.gone = now
		}
		return
	}
	r.phase = p.Status.Phase
	r.deleting = p.DeletionTimestamp != nil
	if r.deleting && r.deletionSeen.IsZero() {
		r.deletionSeen = now
	}
	if r.bound.IsZero() && p.Spec.NodeName != "" {
		r.bound = now
	}
	switch p.Status.Phase {
	case corev1.PodRunning:
		if r.running.IsZero() {
			r.running = now
		}
	case corev1.PodSucceeded, corev1.PodFailed:
		if r.terminated.IsZero() {
			r.terminated = now
		}
	}
}

func (t *tracker) observeJob(obj client.Object, deleted bool) {
	now := time.Now()
	sample, ok := sampleOf(obj)
	if !ok {
		return
	}
	sample.at = now
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lastChange = now
	r := t.jobs[obj.GetName()]
	if r == nil { // not created by this bench run
		return
	}
	if deleted {
		r.gone = now
		return
	}
	r.phase, r.running = sample.phase, sample.running
	r.history = append(r.history, sample)
	if r.phase != "" {
		if _, ok := r.phaseSeen[r.phase]; !ok {
			r.phaseSeen[r.phase] = now
		}
	}
	if r.allRunning.IsZero() && r.desired > 0 && r.running == r.desired {
		r.allRunning = now
	}
}

// sampleOf reads a job's status, of either API, as the T9k status says it: the phase and the
// pods running. A kubeflow.org job's phase is its condition that is True among Succeeded, Failed,
// Running and Created (in that order); its running pods the sum of replicaStatuses' active,
// which Trainyard counts as the pods in phase Running.
func sampleOf(obj client.Object) (jobSample, bool) {
	switch j := obj.(type) {
	case *batch.PyTorchTrainingJob:
		return jobSample{phase: j.Status.Phase, running: j.Status.Aggregate.Running,
			backoff: j.Status.BackoffCount, disruptions: j.Status.DisruptionCount, restart: j.Status.GangRestarts}, true
	case *kubeflowv1.PyTorchJob:
		s := jobSample{backoff: j.Status.BackoffCount, disruptions: j.Status.DisruptionCount, restart: j.Status.GangRestarts}
		for _, rs := range j.Status.ReplicaStatuses {
			if rs != nil {
				s.running += rs.Active
			}
		}
		for _, c := range []struct {
			condition kubeflowv1.JobConditionType
			phase     batch.JobPhase
		}{{kubeflowv1.JobSucceeded, batch.JobSucceeded}, {kubeflowv1.JobFailed, batch.JobFailed}, {kubeflowv1.JobRunning, batch.JobRunning}, {kubeflowv1.JobCreated, batch.JobPending}} {
			if kubeflowConditionTrue(j.Status.Conditions, c.condition) {
				s.phase = c.phase
				break
			}
		}
		return s, true
	}
	return jobSample{}, false
}

func kubeflowConditionTrue(conditions []kubeflowv1.JobCondition, t kubeflowv1.JobConditionType) bool {
	for _, c := range conditions {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// watchJobsAndPods starts informers on the namespace's PyTorchTrainingJobs and on their pods
// (label tensorstack.dev/owner-kind=PyTorchTrainingJob), feeding t, and waits for them to sync.
// Cancelling ctx stops them.
func watchJobsAndPods(ctx context.Context, conn localrun.Connection, namespace string, t *tracker) error {
	podSelector := labels.SelectorFromSet(labels.Set{batch.LabelOwnerKind: "PyTorchTrainingJob"})
	return conn.Watch(ctx, namespace,
		localrun.Observer{Object: &corev1.Pod{}, Selector: podSelector, Observe: t.observePod},
		localrun.Observer{Object: &batch.PyTorchTrainingJob{}, Observe: t.observeJob},
	)
}

// watchBothAPIs starts informers on the namespace's jobs of both APIs and on the pods that carry
// t's group label (the operator's pods, or the floor's), feeding t, and waits for them to sync.
func watchBothAPIs(ctx context.Context, conn localrun.Connection, namespace string, t *tracker) error {
	grouped, err := labels.NewRequirement(t.groupLabel, selection.Exists, nil)
	if err != nil {
		return err
	}
	return conn.Watch(ctx, namespace,
		localrun.Observer{Object: &corev1.Pod{}, Selector: labels.NewSelector().Add(*grouped), Observe: t.observePod},
		localrun.Observer{Object: &batch.PyTorchTrainingJob{}, Observe: t.observeJob},
		localrun.Observer{Object: &kubeflowv1.PyTorchJob{}, Observe: t.observeJob},
	)
}
