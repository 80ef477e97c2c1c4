package status

import (
	"fmt"
	"strings"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
	"github.com/trainyard/trainyard/render"
)

// Event is one event to record on the job.
type Event struct {
	Type    string // corev1.EventTypeNormal or corev1.EventTypeWarning
	Reason  string
	Message string
}

// Event reasons of the controller's own (render's phase reasons and warnings are used as they are).
const (
	EventPodsCreated  = "PodsCreated"
	EventCreateFailed = batch.ReasonCreateFailed
	EventRestarting   = batch.ReasonRestarting
	// EventStatusTrimmed: the job grew too big for its status to list every pod
	// (trimReplicaStatus).
	EventStatusTrimmed = "StatusTrimmed"
	// EventKueueShrinkRefused: Kueue refused to lower a sliced job's admitted Workload in place
	// (its workload slices are off), and the job is queued anew at its new size (controller's
	// kueueSync.sliceWrites).
	EventKueueShrinkRefused = "KueueShrinkRefused"
)

// Round is what one reconcile did, for the events it implies.
type Round struct {
	Prev, Next *batch.TrainingJobStatus
	Out        *render.Output
	RenderErr  error
	// Created names the pods created in this round (one event for the batch).
	Created []string
	// CreateErr is why creating pods stopped part-way, if it did.
	CreateErr error
	// Warn is true when render's warnings should be recorded: the first round of a generation.
	Warn bool
	// Job is the job rendered, if render took it: a pod the API server found invalid is traced
	// to its template (templateHint).
	Job *render.Job
	// Written is true when Next was written in this round. Events about a change of the status
	// (phase, blocked) wait for the write that records it; until then Prev still holds the old one.
	Written bool
}

// maxEventNote is the longest note an event may have: events.k8s.io/v1 refuses a longer one,
// and the event would be lost.
const maxEventNote = 1024

// Events lists the events a round implies: one for the pods created, a phase change, each
// restart, a failure, and render's warnings once per generation. A message too long for an
// event (a refusal listing many fields) is cut short; the condition keeps more of it.
func Events(r Round) []Event {
	ev := events(r)
	for i := range ev {
		ev[i].Message = shorten(ev[i].Message, maxEventNote)
	}
	return ev
}

// shorten cuts text to at most n bytes, on a character boundary, marking the cut with "...".
func shorten(text string, n int) string {
	if len(text) <= n {
		return text
	}
	const mark = "..."
	cut := n - len(mark)
	for cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	return text[:cut] + mark
}

func events(r Round) []Event {
	var ev []Event
	if r.RenderErr != nil {
		if r.Warn {
			ev = append(ev, Event{corev1.EventTypeWarning, ReasonInvalidSpec, r.RenderErr.Error()})
		}
		return ev
	}
	if n := len(r.Created); n > 0 && !midPacing(r) {
		msg := fmt.Sprintf("created %d %s: %s", n, plural(n, "pod"), names(r.Created))
		if held := r.Out.Decisions.HeldForScheduler; held > 0 {
			msg += fmt.Sprintf("; %d more follow as the scheduler binds them", held)
		}
		ev = append(ev, Event{corev1.EventTypeNormal, EventPodsCreated, msg})
	}
	if r.CreateErr != nil {
		ev = append(ev, Event{corev1.EventTypeWarning, EventCreateFailed, r.CreateErr.Error() + templateHint(r.Job, RefusalOf(r.CreateErr).InvalidPod)})
	}
	d := &r.Out.Decisions
	if len(d.Restarts) > 0 {
		ev = append(ev, Event{corev1.EventTypeWarning, kubeflowEventReason(r.Job, "Restarting", EventRestarting), restartEvent(r.Out)})
	}
	if d.Blocked != nil && r.Written && !blockedBy(r.Prev, d.Blocked.Reason) {
		ev = append(ev, Event{corev1.EventTypeWarning, d.Blocked.Reason, d.Blocked.Message})
	}
	if e, ok := waitingEvent(r); ok {
		ev = append(ev, e)
	}
	if e, ok := tensorBoardEvent(r); ok {
		ev = append(ev, e)
	}
	// Kueue's hold is no fault: a Normal event when the job starts waiting for its queue; one the
	// user must mend (Kueue not installed, a priority class missing) is a Warning.
	if d.Queued != nil && r.Written && !heldBy(r.Prev, d.Queued.Reason) && !(r.Prev.Phase != r.Next.Phase && r.Prev.Phase != "") {
		typ := corev1.EventTypeNormal
		if d.Queued.Reason != render.ReasonQueued {
			typ = corev1.EventTypeWarning
		}
		ev = append(ev, Event{typ, d.Queued.Reason, d.Queued.Message})
	}
	// A new job's first phase, Pending, is no change worth an event: PodsCreated says it.
	newPending := r.Prev.Phase == "" && r.Next.Phase == batch.JobPending
	reason, message := d.Reason, d.Message
	if q := d.Queued; q != nil {
		// Note: a kubeflow.org job Kueue holds is suspended, so its phase is Paused, as Kubeflow's
		// Suspended condition has it; the change is said in Kueue's words, and only when the hold
		// is news (the Queued event above says it for a new job).
		reason, message = q.Reason, q.Message
		newPending = newPending || r.Prev.Phase == "" || heldBy(r.Prev, q.Reason)
	}
	if r.Written && r.Prev.Phase != r.Next.Phase && !newPending {
		typ := corev1.EventTypeNormal
		if r.Next.Phase == batch.JobFailed {
			typ = corev1.EventTypeWarning
		}
		if reason == "" {
			reason = string(r.Next.Phase)
		}
		msg := "phase " + string(r.Next.Phase)
		if r.Prev.Phase != "" {
			msg = fmt.Sprintf("phase %s -> %s", r.Prev.Phase, r.Next.Phase)
		}
		if message != "" {
			msg += ": " + message
		}
		if d.Queued != nil && r.Next.Phase == batch.JobPaused {
			msg = message // Kueue's hold is no pause
		} else {
			reason, msg = kubeflowPhaseEvent(r.Job, r.Next.Phase, reason, msg)
		}
		ev = append(ev, Event{typ, reason, msg})
	}
	if n := omitted(r.Next); r.Written && n > 0 && omitted(r.Prev) == 0 {
		ev = append(ev, Event{corev1.EventTypeNormal, EventStatusTrimmed, fmt.Sprintf(
			"status.tasks[].replicaStatus lists %d of the %d pods the job has, those neither Running nor Succeeded first: every pod would take the job past the API server's object size limit. status.aggregate counts them all; `kubectl get pods -l %s` lists them",
			listed(r.Next), listed(r.Next)+n, r.Next.Selector)})
	}
	if r.Warn {
		ev = append(ev, warningEvents(d.Warnings)...)
	}
	return ev
}

// kubeflowEventReason is the reason of an event a kubeflow.org job's operator (v1.8.1) records
// as <Kind><what> (PyTorchJobRestarting), where alerts and dashboards match it; other jobs' events
// keep reason.
func kubeflowEventReason(j *render.Job, what, reason string) string {
	if j == nil || j.Kubeflow == nil {
		return reason
	}
	return j.Kind + what
}

// kubeflowPhaseEvent words a kubeflow.org job's phase change as Kubeflow's operator names it:
// <Kind>Succeeded, <Kind>Failed (the message led by Trainyard's reason, BackoffLimitExceeded or
// the like, which the Kubeflow reason does not say), <Kind>Suspended and <Kind>Resumed. A change
// Kubeflow's operator records no event for (Running) keeps Trainyard's reason.
func kubeflowPhaseEvent(j *render.Job, phase batch.JobPhase, reason, msg string) (string, string) {
	if j == nil || j.Kubeflow == nil {
		return reason, msg
	}
	switch phase {
	case batch.JobSucceeded:
		return j.Kind + "Succeeded", msg
	case batch.JobFailed:
		return j.Kind + "Failed", reason + ": " + msg
	case batch.JobPaused:
		return j.Kind + "Suspended", msg
	case batch.JobResuming:
		return j.Kind + "Resumed", msg
	}
	return reason, msg
}

// warningEvents are render's warnings as events, one a reason: the events API counts repeats of a
// reason on one event and keeps its first note, so two warnings of one reason (two environment
// variables overridden) would show as one, naming the first. Their messages are joined instead.
func warningEvents(warnings []render.Warning) []Event {
	var ev []Event
	at := map[string]int{}
	for _, w := range warnings {
		i, ok := at[w.Reason]
		if !ok {
			at[w.Reason] = len(ev)
			ev = append(ev, Event{corev1.EventTypeWarning, w.Reason, w.Message})
			continue
		}
		ev[i].Message += "; " + w.Message
	}
	return ev // Events cuts each to maxEventNote
}

// waitingEvent is the one Warning event of a Waiting reason that appears or changes, once the
// status that records it is written. Causes with events of their own (a blocked job, restarts, a
// refused creation) get no second one.
func waitingEvent(r Round) (Event, bool) {
	next := meta.FindStatusCondition(r.Next.Conditions, batch.ConditionWaiting)
	if !r.Written || next == nil {
		return Event{}, false
	}
	if prev := meta.FindStatusCondition(r.Prev.Conditions, batch.ConditionWaiting); prev != nil && prev.Reason == next.Reason {
		return Event{}, false
	}
	switch next.Reason {
	case batch.ReasonPodGroupCRDMissing, batch.ReasonRestarting, batch.ReasonCreateFailed, batch.ReasonQueued, batch.ReasonPodsPaced:
		return Event{}, false
	}
	if q := r.Out.Decisions.Queued; q != nil && q.Reason == next.Reason {
		return Event{}, false // a hold of Kueue's (KueueNotInstalled, PriorityClassNotFound): its own event says it
	}
	return Event{corev1.EventTypeWarning, next.Reason, next.Message}, true
}

// tensorBoardEvent is the one Warning event of a reason the job's TensorBoard cannot work for
// (its claim missing, its pod refused, its name taken) that appears or changes, once the status
// that records it is written: status.tensorboard says it, and the events say it as the Waiting
// condition's do.
func tensorBoardEvent(r Round) (Event, bool) {
	next := r.Next.Tensorboard
	if !r.Written || next == nil || next.Ready || next.Type != corev1.EventTypeWarning {
		return Event{}, false
	}
	if prev := r.Prev.Tensorboard; prev != nil && prev.Type == corev1.EventTypeWarning && prev.Reason == next.Reason {
		return Event{}, false
	}
	name := next.Name
	if next.Dependent != nil {
		name = next.Dependent.Name
	}
	return Event{corev1.EventTypeWarning, next.Reason, "TensorBoard " + name + ": " + next.Note}, true
}

// midPacing: the round created some of a paced job's pods, neither its first batch (the status did
// not say PodsPaced yet) nor its last (some are still held). Such a job creates a batch each time
// the scheduler catches up; one event says the pacing started and one that it ended.
func midPacing(r Round) bool {
	prev := meta.FindStatusCondition(r.Prev.Conditions, batch.ConditionWaiting)
	return r.Out.Decisions.HeldForScheduler > 0 && prev != nil && prev.Reason == batch.ReasonPodsPaced
}

// blockedBy reports whether the status already says the job is blocked for reason.
func blockedBy(s *batch.TrainingJobStatus, reason string) bool {
	c := meta.FindStatusCondition(s.Conditions, batch.ConditionInitialized)
	return c != nil && c.Status == metav1.ConditionFalse && c.Reason == reason
}

// heldBy reports whether the status already says the job is held for reason: blockedBy, or its
// Waiting condition (a kubeflow.org job Kueue holds stays Created, so only Waiting says it).
func heldBy(s *batch.TrainingJobStatus, reason string) bool {
	c := meta.FindStatusCondition(s.Conditions, batch.ConditionWaiting)
	return blockedBy(s, reason) || c != nil && c.Status == metav1.ConditionTrue && c.Reason == reason
}

// RestartedPod is the pod a round's Restarting event is about, as the event's related object: the
// first replica restarted (with its uid when the round deletes it), or nil without a restart.
//
// Note: the events API folds an event into an earlier one of the same type, reason, action,
// regarding and related object (the job's reference with its resourceVersion) from the last six
// minutes: it counts the repeat and keeps the earlier note. Two replicas that end in one instant
// are restarted in two rounds, the second often reading the job from a cache that has not seen
// the first round's status write yet, so its event (the other pod, backoffCount 2) was lost in a
// count of 2 on the first. The pod in the related object keeps them apart.
func RestartedPod(namespace string, out *render.Output) *corev1.ObjectReference {
	if out == nil || len(out.Decisions.Restarts) == 0 {
		return nil
	}
	name := out.Decisions.Restarts[0].Pod
	ref := &corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: namespace, Name: name}
	for _, del := range out.Decisions.Delete {
		if del.Name == name {
			ref.UID = del.UID
		}
	}
	return ref
}

// restartEvent says which pods ended, how, what is restarted and the count after it:
// "j-worker-1 exited with code 1; restarting every pod of the job, 3 deleted (backoffCount 2)",
// "j-worker-1 was evicted; restarting it (disruptionCount 1, not counted toward backoffLimit)".
func restartEvent(out *render.Output) string {
	d := &out.Decisions
	disrupted := true
	for _, r := range d.Restarts {
		disrupted = disrupted && r.Disrupted
	}
	what := "restarting it"
	switch {
	case d.GangRestart:
		n := 0
		for _, del := range d.Delete {
			if del.Reason == render.DeleteRestart {
				n++
			}
		}
		what = fmt.Sprintf("restarting every pod of the job, %d deleted", n)
	case len(d.Restarts) > 1:
		what = "restarting each alone"
	}
	count := fmt.Sprintf("backoffCount %d", d.BackoffCount)
	if disrupted {
		count = fmt.Sprintf("disruptionCount %d, not counted toward backoffLimit", d.DisruptionCount)
	}
	return fmt.Sprintf("%s; %s (%s)", endings(d), what, count)
}

func ended(r render.Restart) string {
	switch {
	case r.Cause != "":
		return r.Cause
	case r.Disrupted:
		return "was disrupted (evicted, preempted or its node lost)"
	case r.ExitCode != nil:
		return fmt.Sprintf("exited with code %d", *r.ExitCode)
	}
	return "failed"
}

// names lists a few names and says how many more there are.
func names(ns []string) string {
	const shown = 3
	if len(ns) <= shown {
		return strings.Join(ns, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(ns[:shown], ", "), len(ns)-shown)
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// omitted counts the pods the status leaves out of its lists (trimReplicaStatus).
func omitted(st *batch.TrainingJobStatus) int {
	n := 0
	for _, t := range st.Tasks {
		n += int(t.ReplicaStatusOmitted)
	}
	return n
}

// listed counts the pods the status lists.
func listed(st *batch.TrainingJobStatus) int {
	n := 0
	for _, t := range st.Tasks {
		n += len(t.ReplicaStatus)
	}
	return n
}
