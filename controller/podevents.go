package controller

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// outcomePriority puts a job whose pod has just ended ahead of the other jobs waiting in the work
// queue (its default priority is 0).
const outcomePriority = 10

// podEvents wakes the job that controls a pod. A pod that has just ended (its phase Succeeded or
// Failed, or a container that terminated) wakes it at once and ahead of other jobs: that is an
// outcome or a restart, and its latency is what users see. So do the pod whose start makes the
// first of the job's pods run and the one that makes all of them run (runningCounts): the job's
// phase turning Running, and its status counting every pod running, are the other moments users
// wait for. Every other change (a pod created, bound, running, deleted) wakes the job within its
// coalescing window (coalesceFor): the thousands of events of a big job's start then make one
// round per window rather than one per event, each round reading all the job's pods. (Pod counts
// reach the status at most once per --status-batch-interval anyway.) podsOf is the job's number
// of pods, by its UID.
func podEvents(kind jobKind, coalesce time.Duration, podsOf func(types.UID) int) handler.EventHandler {
	return ownedEventHandler{kind: kind, coalesce: coalesce, podsOf: podsOf, urgent: podUpdateEnded, running: &runningCounts{}}
}

// serviceEvents wakes the job that controls a Service within its coalescing window, as podEvents
// does a pod change that is not an outcome. Nothing a Service does is urgent, and a Kubeflow job
// creates and deletes its per-replica Services many at a time (a 1 x 8 PyTorchJob, eight at its
// start and eight in its clean-up): woken at once, each lot made two or three rounds, and with the
// window one.
func serviceEvents(kind jobKind, coalesce time.Duration, podsOf func(types.UID) int) handler.EventHandler {
	return ownedEventHandler{kind: kind, coalesce: coalesce, podsOf: podsOf}
}

// ownedEventHandler wakes the job that controls an object; urgent (nil: never) says which updates
// wake it at once and ahead of other jobs; running (nil: not pods) counts each job's running pods.
type ownedEventHandler struct {
	kind     jobKind
	coalesce time.Duration
	podsOf   func(types.UID) int
	urgent   func(old, obj client.Object) bool
	running  *runningCounts
}

// runningCounts counts each job's pods that run (phase Running, not being deleted) as its pod
// events have shown them, so that the events of the pod whose start makes the first of the job's
// pods run, and of the one that makes all of them run, wake the job at once: without them, the
// job's status turned Running up to a coalescing window (200 ms) after its first pod ran, and
// counted all its pods running up to a window after its last one did. The informer delivers
// every change between the versions it holds (a relist too: the pods gone as deletions), so the
// counts follow its cache; a job is forgotten once none of its pods runs.
type runningCounts struct {
	mu sync.Mutex
	n  map[types.UID]int
}

// change records that a pod of job went from running (was) to running (is) or not, and returns
// how many of the job's pods run now.
func (r *runningCounts) change(job types.UID, was, is bool) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.n[job]
	switch {
	case is && !was:
		n++
	case was && !is:
		n--
	}
	if n <= 0 {
		delete(r.n, job)
		return 0
	}
	if r.n == nil {
		r.n = map[types.UID]int{}
	}
	r.n[job] = n
	return n
}

// runs: obj is a pod that runs and is not being deleted.
func runs(obj client.Object) bool {
	p, ok := obj.(*corev1.Pod)
	return ok && p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning
}

// wakeNow is how an event wakes its job: within its coalescing window, at once, or at once and
// ahead of other jobs (an outcome).
type wakeNow int

const (
	coalesced wakeNow = iota
	atOnce
	outcome
)

// podsPerWindow is the number of a job's pods that one coalescing window serves.
const podsPerWindow = 1000

// coalesceFor is how long a pod change that is not an outcome may wait to wake a job of pods
// pods: coalesce, and one coalesce more for each further podsPerWindow pods. A round reads,
// renders and derives over all of a job's pods, so its cost grows with them; a 5,000-pod job's
// start then makes a round a second instead of five, and a job of up to 1,000 pods is not
// slowed at all.
func coalesceFor(coalesce time.Duration, pods int) time.Duration {
	windows := max(1, (pods+podsPerWindow-1)/podsPerWindow)
	return time.Duration(windows) * coalesce
}

type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

func (h ownedEventHandler) Create(_ context.Context, e event.CreateEvent, q queue) {
	if ref := h.kind.controls(e.Object); ref != nil {
		h.wake(q, e.Object, ref, h.started(ref, false, runs(e.Object)))
	}
}

func (h ownedEventHandler) Update(_ context.Context, e event.UpdateEvent, q queue) {
	ref := h.kind.controls(e.ObjectNew)
	if ref == nil {
		return
	}
	how := h.started(ref, runs(e.ObjectOld), runs(e.ObjectNew))
	if h.urgent != nil && h.urgent(e.ObjectOld, e.ObjectNew) {
		how = outcome
	}
	h.wake(q, e.ObjectNew, ref, how)
}

// podUpdateEnded: a pod's update is urgent when the pod has ended (or is not a pod at all).
func podUpdateEnded(oldObj, obj client.Object) bool {
	old, ok1 := oldObj.(*corev1.Pod)
	pod, ok2 := obj.(*corev1.Pod)
	return !ok1 || !ok2 || podEnded(old, pod)
}

func (h ownedEventHandler) Delete(_ context.Context, e event.DeleteEvent, q queue) {
	if ref := h.kind.controls(e.Object); ref != nil {
		h.wake(q, e.Object, ref, h.started(ref, runs(e.Object), false))
	}
}

func (h ownedEventHandler) Generic(_ context.Context, e event.GenericEvent, q queue) {
	if ref := h.kind.controls(e.Object); ref != nil {
		h.wake(q, e.Object, ref, coalesced)
	}
}

// started counts a change of a pod of the job of ref from running (was) to running (is) or not,
// and says atOnce when it made the job's first pod run (the job's phase turns Running) or all its
// pods run (a job not yet reconciled wants no pods yet: its pods' events wait their window).
func (h ownedEventHandler) started(ref *metav1.OwnerReference, was, is bool) wakeNow {
	if h.running == nil || was == is {
		return coalesced
	}
	n := h.running.change(ref.UID, was, is)
	if want := h.podsOf(ref.UID); is && want > 0 && (n == 1 || n >= want) {
		return atOnce
	}
	return coalesced
}

// wake queues the job of ref, which controls obj.
func (h ownedEventHandler) wake(q queue, obj client.Object, ref *metav1.OwnerReference, how wakeNow) {
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: ref.Name}}
	after := time.Duration(0)
	if how == coalesced {
		after = coalesceFor(h.coalesce, h.podsOf(ref.UID))
	}
	if pq, ok := q.(priorityqueue.PriorityQueue[reconcile.Request]); ok {
		opts := priorityqueue.AddOpts{After: after}
		if how == outcome {
			p := outcomePriority
			opts.Priority = &p
		}
		pq.AddWithOpts(opts, req)
		return
	}
	if after > 0 {
		q.AddAfter(req, after)
		return
	}
	q.Add(req)
}

// podEnded reports whether pod has ended since old: its phase became Succeeded or Failed, or one
// of its containers terminated. (The cache keeps no restart counts: see trimPod.)
func podEnded(old, pod *corev1.Pod) bool {
	if terminal(pod.Status.Phase) && !terminal(old.Status.Phase) {
		return true
	}
	before := map[string]corev1.ContainerStatus{}
	for _, c := range old.Status.ContainerStatuses {
		before[c.Name] = c
	}
	for _, c := range pod.Status.ContainerStatuses {
		b := before[c.Name]
		if c.State.Terminated != nil && b.State.Terminated == nil {
			return true
		}
	}
	return false
}

func terminal(p corev1.PodPhase) bool { return p == corev1.PodSucceeded || p == corev1.PodFailed }
