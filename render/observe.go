package render

import (
	"sort"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
	"github.com/trainyard/trainyard/apis/kueue"
)

// slot is one replica position of a job: a type and an index.
type slot struct {
	typ   string
	index int32
}

func slotOf(p *corev1.Pod) slot {
	i, err := strconv.ParseInt(p.Labels[batch.LabelReplicaIndex], 10, 32)
	if err != nil {
		return slot{typ: p.Labels[batch.LabelReplicaType], index: -1}
	}
	return slot{typ: p.Labels[batch.LabelReplicaType], index: int32(i)}
}

// observedPod is one pod the job owns, with what render reads from it.
type observedPod struct {
	pod  *corev1.Pod
	slot slot
	// terminated: the training container has stopped for good (the pod Succeeded or Failed, or its
	// node is lost).
	terminated bool
	succeeded  bool
	// exitCode of the training container, when it reported one; started and finished, when
	// its run began and ended (zero when the container did not report them).
	exitCode          *int32
	started, finished time.Time
	// exitReason is the kubelet's word for how the training container ended, when it says more
	// than that it exited (OOMKilled, ContainerCannotRun); lastWords, the line of its termination
	// message (its log's tail, by render's default FallbackToLogsOnError) that says why it failed.
	exitReason, lastWords string
	// disrupted: evicted, preempted, or its node lost, rather than exited by itself; cause says how.
	disrupted bool
	cause     string
	// scaledDown: it failed in a scale-down's window (endedOnScaleDown), a consequence of it.
	scaledDown bool
	// nodeLost: the pod's node has been NotReady or unreachable beyond the bound (observeNodes), so
	// a graceful delete would never finish: it is force-deleted.
	nodeLost bool
	// deletedByOther: someone other than the controller started its deletion (Input.DeletedPods).
	deletedByOther bool
	// gang is the value of the job's status.gangRestarts the pod was created under.
	gangRestarts int32
	// templateHash is the TemplateHash of the template it was made from; empty when the pod does
	// not say (made by an operator that did not write it).
	templateHash string
	// gone: deleted by someone else and no longer observed (Input.DeletedPods); nothing to delete.
	gone bool
	// deleting: render decided in this round to delete it; restarting, to create it again.
	deleting, restarting bool
}

// going reports whether the pod is being deleted: by render in this round, or already.
func (p *observedPod) going() bool { return p.deleting || p.pod.DeletionTimestamp != nil }

// Pod status reasons and DisruptionTarget condition reasons that mean the pod was disrupted from
// outside, and how render words them (in conditions and events: no volatile detail).
const (
	podReasonEvicted  = "Evicted"
	podReasonNodeLost = "NodeLost"
)

// How a replica ended, when it did not exit by itself.
const (
	causeEvicted   = "was evicted"
	causePreempted = "was preempted"
	causeNodeLost  = "lost its node"
	causeDeleted   = "was deleted by someone else"
	// causeTerminatedByKueue: Kueue failed the pod, placed by topology on a node that can no
	// longer run it (kueue.PodConditionTerminatedByKueue), and places it anew.
	causeTerminatedByKueue = "was stopped by Kueue, its node unusable, to be placed anew"
)

var disruptionCauses = map[string]string{
	"EvictionByEvictionAPI":  causeEvicted,
	"PreemptionByScheduler":  causePreempted,
	"DeletionByTaintManager": "was evicted from a node that is not ready",
	"DeletionByPodGC":        "was deleted with its node",
	"TerminationByKubelet":   "was evicted by its kubelet",
}

// observePods sorts the job's pods into replica slots, and keeps the rest apart. A pod fills a
// slot only under the slot's name: one whose labels were edited to another slot's is kept apart
// (and deleted as a stray), so that two slots never take one pod for theirs.
func observePods(j *Job, pods []*corev1.Pod) (map[slot]*observedPod, []*observedPod) {
	bySlot := make(map[slot]*observedPod, len(pods))
	var others []*observedPod
	for _, p := range pods {
		o := classify(j, p)
		if !j.fills(o) || bySlot[o.slot] != nil {
			others = append(others, o)
			continue
		}
		bySlot[o.slot] = o
	}
	sort.Slice(others, func(a, b int) bool { return others[a].pod.Name < others[b].pod.Name })
	return bySlot, others
}

// fills reports whether the pod belongs to one of the job's replica slots: its labels name a
// type and index the job has, and it bears that slot's name.
func (j *Job) fills(o *observedPod) bool {
	for _, t := range j.Replicas {
		if t.Type == o.slot.typ {
			return o.slot.index >= 0 && o.slot.index < t.Replicas && o.pod.Name == PodName(j.Name, t.Type, o.slot.index)
		}
	}
	return false
}

// classify reads how a pod ended, if it did.
func classify(j *Job, p *corev1.Pod) *observedPod {
	o := &observedPod{pod: p, slot: slotOf(p), gangRestarts: gangRestartsOf(p), templateHash: p.Annotations[batch.AnnotationTemplateHash]}
	if c := trainingContainerStatus(j, p); c != nil && c.State.Terminated != nil {
		code := c.State.Terminated.ExitCode
		o.exitCode = &code
		o.started, o.finished = c.State.Terminated.StartedAt.Time, c.State.Terminated.FinishedAt.Time
		if code != 0 {
			o.exitReason = notableExitReason(c.State.Terminated.Reason)
			o.lastWords = lastWords(c.State.Terminated.Message)
		}
	}
	for _, c := range p.Status.Conditions {
		switch {
		case c.Status != corev1.ConditionTrue:
		case c.Type == corev1.DisruptionTarget:
			o.disrupted = true
			o.cause = disruptionCauses[c.Reason]
			if o.cause == "" {
				o.cause = "was disrupted (" + c.Reason + ")"
			}
		case c.Type == kueue.PodConditionTerminatedByKueue:
			o.disrupted, o.cause = true, causeTerminatedByKueue
		}
	}
	switch p.Status.Reason {
	case podReasonEvicted:
		o.disrupted, o.cause = true, causeEvicted
	case podReasonNodeLost:
		o.disrupted, o.cause = true, causeNodeLost
	}
	switch p.Status.Phase {
	case corev1.PodSucceeded:
		o.terminated, o.succeeded = true, true
		if o.exitCode == nil {
			o.exitCode = ptr(int32(0))
		}
	case corev1.PodFailed:
		o.terminated = true
	}
	return o
}

// gangRestartsOf reads the gang a pod was created in (AnnotationGangRestarts); absent or unreadable is 0.
func gangRestartsOf(p *corev1.Pod) int32 {
	v, ok := p.Annotations[batch.AnnotationGangRestarts]
	if !ok {
		return 0
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil || n < 0 {
		return 0
	}
	return int32(n)
}

// trainingContainerStatus finds the status of the training container of a pod.
func trainingContainerStatus(j *Job, p *corev1.Pod) *corev1.ContainerStatus {
	name := ""
	if i := trainingContainer(j.Framework, &p.Spec); i >= 0 {
		name = p.Spec.Containers[i].Name
	}
	for i := range p.Status.ContainerStatuses {
		if p.Status.ContainerStatuses[i].Name == name {
			return &p.Status.ContainerStatuses[i]
		}
	}
	return nil
}

// TrainingContainer is the index of the training container of a pod of a job of framework fw
// (trainingContainer), for tools that read what render wrote.
func TrainingContainer(fw Framework, spec *corev1.PodSpec) int { return trainingContainer(fw, spec) }

// trainingContainer is the container named after the framework, else the first one.
// Environment is injected there only.
func trainingContainer(fw Framework, spec *corev1.PodSpec) int {
	want := PyTorchContainerName
	if fw == TensorFlow {
		want = TFContainerName
	}
	for i, c := range spec.Containers {
		if c.Name == want {
			return i
		}
	}
	if len(spec.Containers) == 0 {
		return -1
	}
	return 0
}

// allObserved lists every observed pod in a fixed order: slots by spec order and index, then
// the others by name.
func (r *renderer) allObserved() []*observedPod {
	out := make([]*observedPod, 0, len(r.observed)+len(r.others))
	for _, t := range r.job.Replicas {
		for i := int32(0); i < t.Replicas; i++ {
			if p := r.observed[slot{t.Type, i}]; p != nil {
				out = append(out, p)
			}
		}
	}
	return append(out, r.others...)
}

func ptr[T any](v T) *T { return &v }
