package controller

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
)

// recordingQueue is a priority queue that records how each request was added.
type recordingQueue struct {
	priorityqueue.PriorityQueue[reconcile.Request]
	adds []added
}

type added struct {
	Name     string
	After    time.Duration
	Priority int
}

func (q *recordingQueue) AddWithOpts(o priorityqueue.AddOpts, items ...reconcile.Request) {
	p := 0
	if o.Priority != nil {
		p = *o.Priority
	}
	for _, it := range items {
		q.adds = append(q.adds, added{Name: it.Name, After: o.After, Priority: p})
	}
}

func eventPod(phase corev1.PodPhase, state corev1.ContainerState) *corev1.Pod {
	yes := true
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "j-worker-0", OwnerReferences: []metav1.OwnerReference{{
			APIVersion: batch.GroupVersion.String(), Kind: "PyTorchTrainingJob", Name: "j", UID: types.UID("u"), Controller: &yes,
		}}},
		Status: corev1.PodStatus{Phase: phase, ContainerStatuses: []corev1.ContainerStatus{{Name: "pytorch", State: state}}},
	}
}

func TestPodEventsWakeAnEndedPodsJobAtOnceAndCoalesceTheRest(t *testing.T) {
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	exited := corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1}}
	waiting := corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}
	const coalesce = 200 * time.Millisecond
	cases := map[string]struct {
		old, pod *corev1.Pod
		pods     int // the job's pods (0: not reconciled yet)
		running  int // the job's pods that ran before this event
		want     added
	}{
		"a pod that starts running waits to be taken with others": {
			old: eventPod(corev1.PodPending, waiting), pod: eventPod(corev1.PodRunning, running),
			want: added{Name: "j", After: coalesce},
		},
		"a pod that succeeds wakes its job at once, ahead of others": {
			old: eventPod(corev1.PodRunning, running), pod: eventPod(corev1.PodSucceeded, corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{}}),
			want: added{Name: "j", Priority: outcomePriority},
		},
		"a container that exits in a running pod wakes its job at once": {
			old: eventPod(corev1.PodRunning, running), pod: eventPod(corev1.PodRunning, exited),
			want: added{Name: "j", Priority: outcomePriority},
		},
		"a pod that stays failed is no news": {
			old: eventPod(corev1.PodFailed, exited), pod: eventPod(corev1.PodFailed, exited),
			want: added{Name: "j", After: coalesce},
		},
		"a 1,000-pod job's pod waits no longer than a small job's": {
			old: eventPod(corev1.PodPending, waiting), pod: eventPod(corev1.PodRunning, running), pods: 1000, running: 1,
			want: added{Name: "j", After: coalesce},
		},
		"a 1,001-pod job's pod waits two windows": {
			old: eventPod(corev1.PodPending, waiting), pod: eventPod(corev1.PodRunning, running), pods: 1001, running: 1,
			want: added{Name: "j", After: 2 * coalesce},
		},
		"a 5,000-pod job's pod that starts running waits five windows": {
			old: eventPod(corev1.PodPending, waiting), pod: eventPod(corev1.PodRunning, running), pods: 5000, running: 1,
			want: added{Name: "j", After: 5 * coalesce},
		},
		"a 5,000-pod job's first pod to run wakes it at once": {
			old: eventPod(corev1.PodPending, waiting), pod: eventPod(corev1.PodRunning, running), pods: 5000,
			want: added{Name: "j"},
		},
		"a 5,000-pod job's pod that succeeds still wakes it at once": {
			old: eventPod(corev1.PodRunning, running), pod: eventPod(corev1.PodSucceeded, corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{}}), pods: 5000,
			want: added{Name: "j", Priority: outcomePriority},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			q := &recordingQueue{}
			podsOf := func(uid types.UID) int {
				if uid != "u" {
					t.Errorf("asked the size of job %q, want the pod's controller u", uid)
				}
				return tc.pods
			}
			h := podEvents(pyTorchKind, coalesce, podsOf)
			if tc.running > 0 {
				h.(ownedEventHandler).running.n = map[types.UID]int{"u": tc.running}
			}
			h.Update(context.Background(), event.UpdateEvent{ObjectOld: tc.old, ObjectNew: tc.pod}, q)
			if diff := cmp.Diff([]added{tc.want}, q.adds); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestServiceEventsWakeTheirJobWithinItsWindow(t *testing.T) {
	const coalesce = 200 * time.Millisecond
	pod := eventPod(corev1.PodRunning, corev1.ContainerState{})
	svc := &corev1.Service{ObjectMeta: *pod.ObjectMeta.DeepCopy()}
	changed := svc.DeepCopy()
	changed.Spec.ClusterIP = "None"
	other := svc.DeepCopy()
	other.OwnerReferences[0].Kind = "TensorFlowTrainingJob"
	h := serviceEvents(pyTorchKind, coalesce, func(types.UID) int { return 8 })
	q := &recordingQueue{}
	ctx := context.Background()
	h.Create(ctx, event.CreateEvent{Object: svc}, q)
	h.Update(ctx, event.UpdateEvent{ObjectOld: svc, ObjectNew: changed}, q)
	h.Delete(ctx, event.DeleteEvent{Object: svc}, q)
	h.Create(ctx, event.CreateEvent{Object: other}, q)
	want := []added{{Name: "j", After: coalesce}, {Name: "j", After: coalesce}, {Name: "j", After: coalesce}}
	if diff := cmp.Diff(want, q.adds); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestPodEventsIgnoreOtherKindsPods(t *testing.T) {
	q := &recordingQueue{}
	pod := eventPod(corev1.PodRunning, corev1.ContainerState{})
	pod.OwnerReferences[0].Kind = "TensorFlowTrainingJob"
	podEvents(pyTorchKind, time.Second, func(types.UID) int { return 8 }).Create(context.Background(), event.CreateEvent{Object: pod}, q)
	if len(q.adds) != 0 {
		t.Errorf("a TensorFlowTrainingJob's pod woke %v in the PyTorchTrainingJob controller", q.adds)
	}
}

func TestPodChangedPassesOnlyChangesOfTheKindsOwnPods(t *testing.T) {
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	waiting := corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}
	rebound := eventPod(corev1.PodPending, waiting)
	rebound.ResourceVersion, rebound.Spec.NodeName = "2", "node-1"
	holds := func(uid types.UID) bool { return uid == "u" } // the pods' job holds pods back
	holdsNone := func(types.UID) bool { return false }
	cases := map[string]struct {
		kind     jobKind
		bindings func(types.UID) bool
		old, pod *corev1.Pod
		want     bool
	}{
		"its pod starts running":                       {pyTorchKind, holdsNone, eventPod(corev1.PodPending, waiting), eventPod(corev1.PodRunning, running), true},
		"its pod bound, nothing read changed":          {pyTorchKind, holdsNone, eventPod(corev1.PodPending, waiting), rebound, false},
		"its pod bound, while its job holds pods back": {pyTorchKind, holds, eventPod(corev1.PodPending, waiting), rebound, true},
		"its pod bound, its job holding none back":     {pyTorchKind, holdsNone, eventPod(corev1.PodPending, waiting), rebound, false},
		"its pod starts running, its job holding none": {pyTorchKind, holdsNone, eventPod(corev1.PodPending, waiting), eventPod(corev1.PodRunning, running), true},
		"another kind's pod starts running":            {tensorFlowKind, holds, eventPod(corev1.PodPending, waiting), eventPod(corev1.PodRunning, running), false},
		"another kind's pod bound":                     {tensorFlowKind, holds, eventPod(corev1.PodPending, waiting), rebound, false},
		"a kubeflow.org kind sees a T9k pod":           {pyTorchJobKind, holdsNone, eventPod(corev1.PodPending, waiting), eventPod(corev1.PodRunning, running), false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := podChanged(tc.kind, tc.bindings).Update(event.UpdateEvent{ObjectOld: tc.old, ObjectNew: tc.pod}); got != tc.want {
				t.Errorf("podChanged(%s) = %v; want %v", tc.kind.gvk.Kind, got, tc.want)
			}
		})
	}
}

func TestThePodsThatMakeAJobsFirstAndAllPodsRunWakeItAtOnce(t *testing.T) {
	const coalesce = 200 * time.Millisecond
	waiting := corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	pending := func(i int) *corev1.Pod {
		p := eventPod(corev1.PodPending, waiting)
		p.Name = fmt.Sprintf("j-worker-%d", i)
		return p
	}
	started := func(i int) *corev1.Pod {
		p := pending(i)
		p.Status = corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: "pytorch", State: running}}}
		return p
	}
	ctx := context.Background()
	h := podEvents(pyTorchKind, coalesce, func(types.UID) int { return 3 })
	q := &recordingQueue{}
	h.Create(ctx, event.CreateEvent{Object: started(0)}, q)                           // running already (a relist): 1 of 3
	h.Update(ctx, event.UpdateEvent{ObjectOld: pending(1), ObjectNew: started(1)}, q) // 2 of 3
	h.Update(ctx, event.UpdateEvent{ObjectOld: started(1), ObjectNew: started(1)}, q) // no change: still 2
	h.Delete(ctx, event.DeleteEvent{Object: started(1)}, q)                           // 1 of 3
	h.Create(ctx, event.CreateEvent{Object: pending(1)}, q)                           // its successor
	h.Update(ctx, event.UpdateEvent{ObjectOld: pending(2), ObjectNew: started(2)}, q) // 2 of 3
	h.Update(ctx, event.UpdateEvent{ObjectOld: pending(1), ObjectNew: started(1)}, q) // 3 of 3: all run
	deleting := started(0)
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	h.Update(ctx, event.UpdateEvent{ObjectOld: started(0), ObjectNew: deleting}, q)   // 2 of 3
	h.Update(ctx, event.UpdateEvent{ObjectOld: pending(0), ObjectNew: started(0)}, q) // a new pod 0: 3 of 3 again
	later := added{Name: "j", After: coalesce}
	now := added{Name: "j"}
	want := []added{now, later, later, later, later, later, now, later, now}
	if diff := cmp.Diff(want, q.adds); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if h.(ownedEventHandler).running.n["u"] != 3 {
		t.Errorf("running pods counted: %v, want 3 of job u", h.(ownedEventHandler).running.n)
	}

	// A job not reconciled yet wants no pods as far as the events know: its pod's start waits.
	fresh := podEvents(pyTorchKind, coalesce, func(types.UID) int { return 0 })
	q = &recordingQueue{}
	fresh.Update(ctx, event.UpdateEvent{ObjectOld: pending(0), ObjectNew: started(0)}, q)
	if diff := cmp.Diff([]added{later}, q.adds); diff != "" {
		t.Errorf("a job not yet reconciled (-want +got):\n%s", diff)
	}

	// Once none of a job's pods runs, the job is forgotten.
	gone := podEvents(pyTorchKind, coalesce, func(types.UID) int { return 1 })
	q = &recordingQueue{}
	gone.Update(ctx, event.UpdateEvent{ObjectOld: pending(0), ObjectNew: started(0)}, q)
	gone.Delete(ctx, event.DeleteEvent{Object: started(0)}, q)
	if diff := cmp.Diff([]added{now, later}, q.adds); diff != "" {
		t.Errorf("a 1-pod job (-want +got):\n%s", diff)
	}
	if n := len(gone.(ownedEventHandler).running.n); n != 0 {
		t.Errorf("a job none of whose pods runs is still counted: %v", gone.(ownedEventHandler).running.n)
	}

	// After a restart, the first pod of the job's new ones to run turns it Running again.
	restarted := podEvents(pyTorchKind, coalesce, func(types.UID) int { return 3 })
	q = &recordingQueue{}
	restarted.Update(ctx, event.UpdateEvent{ObjectOld: pending(0), ObjectNew: started(0)}, q) // 1 of 3
	restarted.Update(ctx, event.UpdateEvent{ObjectOld: pending(1), ObjectNew: started(1)}, q) // 2 of 3
	restarted.Delete(ctx, event.DeleteEvent{Object: started(0)}, q)                           // 1 of 3
	restarted.Delete(ctx, event.DeleteEvent{Object: started(1)}, q)                           // none runs
	restarted.Update(ctx, event.UpdateEvent{ObjectOld: pending(2), ObjectNew: started(2)}, q) // 1 of 3 again
	if diff := cmp.Diff([]added{now, later, later, later, now}, q.adds); diff != "" {
		t.Errorf("a restarted job (-want +got):\n%s", diff)
	}
}
