package render

import (
	"fmt"
	"math"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
)

// cleanUp applies the clean-up policy once the job is finished: All deletes every pod,
// Unfinished (the default) those still pending or running, so no GPU stays held after the
// outcome is known, None keeps them all.
func (r *renderer) cleanUp() {
	if r.job.CleanUpPolicy == batch.CleanUpPolicyNone {
		return
	}
	for _, p := range r.allObserved() {
		finished := p.pod.Status.Phase == corev1.PodSucceeded || p.pod.Status.Phase == corev1.PodFailed
		if r.job.CleanUpPolicy == batch.CleanUpPolicyAll || !finished {
			r.delete(p, DeleteCleanUp)
		}
	}
}

// pause deletes every pod; the phase turns Paused once none is left (a Kubeflow job's at once).
func (r *renderer) pause() {
	d := &r.out.Decisions
	for _, p := range r.allObserved() {
		r.delete(p, DeletePaused)
	}
	if len(r.observed)+len(r.others) == 0 {
		d.Phase, d.Reason, d.Message = batch.JobPaused, batch.ReasonPaused, "the job is paused and all its pods are gone"
		return
	}
	d.Phase, d.Reason, d.Message = r.job.Status.Phase, batch.ReasonPausing, "deleting the job's pods"
	if r.job.Kubeflow != nil {
		// Note: Kubeflow's operator calls a job suspended (Suspended True, Running False) as soon as
		// it has asked for the pods' deletion, and its status cannot say "pausing": the phase,
		// read back from those conditions, is Paused from this round on.
		d.Phase = batch.JobPaused
	}
	if d.Phase == "" {
		d.Phase = batch.JobPending
	}
}

// succeededBeforePause reports whether a paused job had succeeded on its own, and decides so. A
// pod that succeeded while being deleted may have exited 0 on the pause's SIGTERM (a script that
// saves a checkpoint and ends cleanly): that is no outcome, and the job stays paused.
func (r *renderer) succeededBeforePause() bool {
	for _, p := range r.allObserved() {
		if p.succeeded && p.pod.DeletionTimestamp != nil {
			return false
		}
	}
	return r.succeeded()
}

// deleteStrays deletes pods that match no replica slot (a removed type, an index scaled away)
// and pods started in another run mode than the current one (debug switched on or off).
func (r *renderer) deleteStrays() {
	for _, p := range r.others {
		r.noteScaleDown(p)
		r.delete(p, DeleteScaledDown)
	}
	for _, p := range r.allObserved() {
		if !p.deleting && r.otherRunMode(p) {
			r.delete(p, DeleteRunModeChanged)
		}
	}
}

// otherRunMode reports whether p was created in another run mode than the job's current one. Such
// a pod is replaced, and how it ended says nothing about the job: a debug pod's exit is not the
// training's outcome.
func (r *renderer) otherRunMode(p *observedPod) bool {
	got := p.pod.Annotations[batch.AnnotationRunMode]
	return got != "" && got != runModeName(r.job)
}

// debugPhase: in debug mode exits neither fail nor restart the job; it runs while pods run.
func (r *renderer) debugPhase() {
	d := &r.out.Decisions
	d.Phase, d.Reason, d.Message = batch.JobPending, batch.ReasonDebugging, "debug mode: pods run the debug command"
	if r.countRunning() > 0 {
		d.Phase = batch.JobRunning
	}
}

// runningPhase is the phase of a job that is neither finished nor paused: Resuming after a
// pause until every replica runs, Running once a replica runs, else Pending.
func (r *renderer) runningPhase() {
	d := &r.out.Decisions
	running, want := r.countRunning(), r.job.PodCount()
	resuming := r.job.Status.Phase == batch.JobPaused || r.job.Status.Phase == batch.JobResuming
	switch {
	case r.holdCreates:
		// Note: a constant message, so that the status is not rewritten as the old pods go.
		d.Phase, d.Reason = batch.JobPending, batch.ReasonRestarting
		d.Message = "every pod of the job is restarted: the new ones are created once the old ones are gone"
	case r.backoff != nil:
		d.Phase, d.Reason, d.Message = batch.JobPending, batch.ReasonRestarting, r.backoff.message()
	case resuming && running < want:
		d.Phase, d.Reason = batch.JobResuming, batch.ReasonResuming
		d.Message = fmt.Sprintf("%d of %d replicas running after the pause", running, want)
	case running > 0:
		d.Phase, d.Reason = batch.JobRunning, batch.ReasonPodsRunning
		d.Message = ""
	default:
		d.Phase, d.Reason = batch.JobPending, batch.ReasonPodsPending
		d.Message = ""
	}
}

func (r *renderer) countRunning() int32 {
	var n int32
	for _, p := range r.observed {
		if p.pod.Status.Phase == corev1.PodRunning && !p.deleting && p.pod.DeletionTimestamp == nil {
			n++
		}
	}
	return n
}

// deadlinePassed reports whether activeDeadlineSeconds, counted from startTime, is over.
func (r *renderer) deadlinePassed() bool {
	end := r.deadlineAt()
	return end != nil && !r.now.Time.Before(*end)
}

func (r *renderer) deadlineAt() *time.Time {
	if r.job.Status.Phase == batch.JobPaused {
		return nil
	}
	return r.job.deadlineFrom(r.out.Decisions.StartTime)
}

// leavingDebug reports whether debug mode was switched off and pods of the debug session remain.
func (r *renderer) leavingDebug() bool {
	if r.job.Debug {
		return false
	}
	for _, p := range r.allObserved() {
		if p.pod.Annotations[batch.AnnotationRunMode] == runModeName(&Job{Debug: true}) {
			return true
		}
	}
	return false
}

// maxDeadlineSeconds is the longest activeDeadlineSeconds a time.Duration holds: about 292 years.
const maxDeadlineSeconds = int64(math.MaxInt64 / time.Second)

// deadlineFrom is when activeDeadlineSeconds runs out for a job started at start, or nil.
func (j *Job) deadlineFrom(start *metav1.Time) *time.Time {
	// Note: a longer deadline would overflow time.Duration and could land in the past, failing
	// the job at once; one that far ahead never falls due.
	if j.ActiveDeadlineSeconds == nil || start == nil || *j.ActiveDeadlineSeconds > maxDeadlineSeconds {
		return nil
	}
	end := start.Add(time.Duration(*j.ActiveDeadlineSeconds) * time.Second)
	return &end
}

// deadline asks to be run again when the active deadline falls due.
func (r *renderer) deadline() {
	if !r.create || r.job.Debug {
		return
	}
	end := r.job.deadlineFrom(r.out.Decisions.StartTime)
	if end == nil {
		return
	}
	// Note: counted from the exact input time, not the second-truncated one render stamps
	// objects with, so the job is looked at again when the deadline falls due, not up to a
	// second after.
	r.requeueAfter(end.Sub(r.in.Now))
}

// ReasonNodeNotFound: a template's spec.nodeName names a node the cluster has not.
const ReasonNodeNotFound = "NodeNotFound"

// nodeRecheck is how often a job whose template names a missing node looks for it again.
const nodeRecheck = time.Minute

// blocked reports what keeps the job from creating anything: its name taken by an older job of
// another kind, a template naming a node the cluster has not, or a missing PodGroup CRD for the
// chosen gang scheduler.
func (r *renderer) blocked() *Blocked {
	if other := r.in.NameTakenBy; other != "" {
		// That job's deletion wakes this one; a look now and then in case the wake was lost.
		r.requeueAfter(nameRecheck)
		return &Blocked{
			Reason: ReasonNameConflict,
			Message: fmt.Sprintf("%s, created before this job, is in the namespace with the same name: training jobs of every kind name their pods, Services and PodGroups after the job (%s-<type>-<index>, %s), so this job creates nothing while that one exists; rename this job, or delete that one",
				other, r.job.Name, r.job.Name),
		}
	}
	for i, t := range r.job.Replicas {
		if t.Template == nil {
			continue
		}
		if name := t.Template.Spec.NodeName; name != "" && r.in.Nodes[name].Missing {
			// Note: a pod bound to a node that does not exist is deleted by the pod garbage
			// collector, and replaced as a disruption, which no backoffLimit ends. A node's
			// creation wakes no job without pods on it: the job looks again now and then.
			r.requeueAfter(nodeRecheck)
			return &Blocked{Reason: ReasonNodeNotFound, Message: fmt.Sprintf(
				"%s names node %s, which the cluster has not: its pods would be deleted by the pod garbage collector and made again, forever; name an existing node, or choose nodes with a nodeSelector",
				r.job.replicaPath(i).Child("template", "spec", "nodeName"), name)}
		}
	}
	g := gangOf(r.job)
	if g == nil {
		return nil
	}
	if _, ok := g.served(r.in.InstalledCRDs); ok {
		return nil
	}
	if g.builtin {
		return &Blocked{
			Reason: batch.ReasonPodGroupCRDMissing,
			Message: fmt.Sprintf("spec.scheduler.%s needs the %s Workload and PodGroup API (%s), which this cluster does not serve; enable %s, or choose another scheduler",
				g.field, g.group, strings.Join(kubernetesGangVersions, ", "), g.product),
		}
	}
	return &Blocked{
		Reason: batch.ReasonPodGroupCRDMissing,
		Message: fmt.Sprintf("spec.scheduler.%s needs the %s PodGroup CRD (%s), which is not installed; install %s or choose another scheduler",
			g.field, g.group, g.crd, g.product),
	}
}

// runModeName is the value of the run-mode annotation on the job's pods.
func runModeName(j *Job) string {
	if j.Debug {
		return "Debug"
	}
	return "Immediate"
}
