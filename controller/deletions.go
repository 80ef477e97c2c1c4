package controller

import (
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// deletionTracker tells render which of a job's pods someone else deleted (render.Input.
// DeletedPods): an eviction, a preemption, the taint manager, kubectl delete. Render restarts
// them as disruptions, which do not count toward backoffLimit. Only the operator knows which
// deletions are its own, so it notes each before asking for it; a pod whose deletionTimestamp
// appears, or that disappears, without such a note was deleted by someone else.
//
// A deleted pod can be gone before any reconcile sees it being deleted (a forced delete, or a
// kubelet that confirms at once, as KWOK's does): the tracker keeps its last state until a
// reconcile has handed it to render and seen it gone.
//
// Note: what the tracker holds lives in the process. After the operator restarts, a pod that
// was already being deleted when it was first seen is taken as no loss (its deleter is unknown),
// and a pod deleted while no operator ran is created again as a missing one, uncounted.
type deletionTracker struct {
	mu sync.Mutex
	// ours are pods this process deleted, or that were already being deleted when it first saw
	// them, by UID, with when they were noted (notes whose delete event never came expire).
	ours map[types.UID]time.Time
	// byOthers are pods someone else deleted, by the UID of their job, then by their own UID:
	// their last state as the watch showed it. Those of a job that is gone (the garbage collector
	// deletes its pods after it) expire.
	byOthers  map[types.UID]map[types.UID]deletedPod
	lastSweep time.Time
	now       func() time.Time
}

// deletedPod is a pod someone else deleted, as last seen, and when that was noted.
type deletedPod struct {
	pod *corev1.Pod
	at  time.Time
}

// trackTTL bounds how long a note is kept: of the operator's own deletion without its delete
// event, of someone else's deletion that no reconcile takes (its job is gone).
const trackTTL = 10 * time.Minute

func newDeletionTracker() *deletionTracker {
	return &deletionTracker{ours: map[types.UID]time.Time{}, byOthers: map[types.UID]map[types.UID]deletedPod{}, now: time.Now}
}

// deleting notes that the operator is about to delete pod uid of job; called before the request,
// so that its watch event can never be taken for someone else's.
func (t *deletionTracker) deleting(job, uid types.UID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	t.ours[uid] = now
	// A pod someone else was deleting that the operator now deletes itself (a force delete on a
	// lost node): render has restarted it in this round, so it is no longer someone else's.
	if pods := t.byOthers[job]; pods != nil {
		delete(pods, uid)
	}
	t.sweep(now)
}

// sweep drops expired notes, at most once a minute. The caller holds t.mu.
func (t *deletionTracker) sweep(now time.Time) {
	if now.Sub(t.lastSweep) < time.Minute {
		return
	}
	t.lastSweep = now
	for u, at := range t.ours {
		if now.Sub(at) > trackTTL {
			delete(t.ours, u)
		}
	}
	for job, pods := range t.byOthers {
		for u, d := range pods {
			if now.Sub(d.at) > trackTTL {
				delete(pods, u)
			}
		}
		if len(pods) == 0 {
			delete(t.byOthers, job)
		}
	}
}

// seen records a pod as the watch first shows it: one already being deleted was deleted before
// this process could know by whom, and counts as no loss.
func (t *deletionTracker) seen(p *corev1.Pod) {
	if p.DeletionTimestamp == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.ours[p.UID]; !ok {
		t.ours[p.UID] = t.now()
	}
}

// updated records a pod's update: its deletionTimestamp appearing, when the operator did not ask
// for it, is someone else's deletion.
func (t *deletionTracker) updated(old, p *corev1.Pod) {
	if p.DeletionTimestamp == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.ours[p.UID]; ok {
		return
	}
	job := controllerOf(p)
	if _, recorded := t.byOthers[job][p.UID]; old.DeletionTimestamp != nil && !recorded {
		return // being deleted before this process saw it: no loss (see seen)
	}
	t.record(job, p)
}

// deleted records a pod's removal: unless the operator deleted it (or it was being deleted when
// first seen), someone else did.
func (t *deletionTracker) deleted(p *corev1.Pod) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.ours[p.UID]; ok {
		delete(t.ours, p.UID)
		return
	}
	t.record(controllerOf(p), p)
}

func (t *deletionTracker) record(job types.UID, p *corev1.Pod) {
	if job == "" {
		return
	}
	pods := t.byOthers[job]
	if pods == nil {
		pods = map[types.UID]deletedPod{}
		t.byOthers[job] = pods
	}
	now := t.now()
	pods[p.UID] = deletedPod{pod: p, at: now}
	t.sweep(now)
}

// deletedPods lists the pods of job someone else deleted, by name: render's Input.DeletedPods.
func (t *deletionTracker) deletedPods(job types.UID) []corev1.Pod {
	t.mu.Lock()
	defer t.mu.Unlock()
	pods := t.byOthers[job]
	if len(pods) == 0 {
		return nil
	}
	out := make([]corev1.Pod, 0, len(pods))
	for _, d := range pods {
		out = append(out, *d.pod)
	}
	slices.SortFunc(out, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// handled forgets the deleted pods a round handed to render (given) once they are gone from the
// pods the round observed: render has restarted them (or found them no loss), and the round's
// status is written. Pods still there stay, for the round that sees them gone.
func (t *deletionTracker) handled(job types.UID, given []corev1.Pod, observed []*corev1.Pod) {
	if len(given) == 0 {
		return
	}
	present := make(map[types.UID]bool, len(observed))
	for _, p := range observed {
		present[p.UID] = true
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	pods := t.byOthers[job]
	for i := range given {
		if !present[given[i].UID] {
			delete(pods, given[i].UID)
		}
	}
	if len(pods) == 0 {
		delete(t.byOthers, job)
	}
}

// forget drops what is kept of a job that is gone.
func (t *deletionTracker) forget(job types.UID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.byOthers, job)
}

func controllerOf(p metav1.Object) types.UID {
	if ref := metav1.GetControllerOf(p); ref != nil {
		return ref.UID
	}
	return ""
}
