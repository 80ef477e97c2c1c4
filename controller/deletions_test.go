package controller

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func trackedPod(name string, deleting bool) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name),
		OwnerReferences: []metav1.OwnerReference{{Kind: "PyTorchTrainingJob", Name: "j", UID: "job-uid", Controller: ptr(true)}}}}
	if deleting {
		p.DeletionTimestamp = &metav1.Time{Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	}
	return p
}

// TestDeletionTracker: the events of a pod's deletion, in the order the watch delivers them, and
// the pods render is then told someone else deleted.
func TestDeletionTracker(t *testing.T) {
	live, going := trackedPod("j-worker-0", false), trackedPod("j-worker-0", true)
	cases := map[string]struct {
		events func(*deletionTracker)
		want   []string
	}{
		"an eviction (deletionTimestamp, then gone) is someone else's": {
			events: func(d *deletionTracker) { d.seen(live); d.updated(live, going); d.deleted(going) },
			want:   []string{"j-worker-0"},
		},
		"a forced delete seen only as gone is someone else's": {
			events: func(d *deletionTracker) { d.seen(live); d.deleted(live) },
			want:   []string{"j-worker-0"},
		},
		"the operator's own deletion is never someone else's": {
			events: func(d *deletionTracker) {
				d.seen(live)
				d.deleting("job-uid", live.UID)
				d.updated(live, going)
				d.deleted(going)
			},
		},
		"a pod already being deleted when first seen is no loss (its deleter is unknown)": {
			events: func(d *deletionTracker) { d.seen(going); d.updated(going, going); d.deleted(going) },
		},
		"a pod someone else is deleting that the operator then force-deletes is the operator's": {
			events: func(d *deletionTracker) {
				d.seen(live)
				d.updated(live, going)
				d.deleting("job-uid", live.UID)
				d.deleted(going)
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := newDeletionTracker()
			tc.events(d)
			var got []string
			for _, p := range d.deletedPods("job-uid") {
				got = append(got, p.Name)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("deleted pods (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDeletionTrackerHandsAPodOverUntilAReconcileSeesItGone: a pod someone else is deleting stays
// listed while the round's pods still show it, and is dropped by the first round that does not.
func TestDeletionTrackerHandsAPodOverUntilAReconcileSeesItGone(t *testing.T) {
	d := newDeletionTracker()
	live, going := trackedPod("j-worker-0", false), trackedPod("j-worker-0", true)
	d.seen(live)
	d.updated(live, going)
	given := d.deletedPods("job-uid")
	d.handled("job-uid", given, []*corev1.Pod{going})
	if n := len(d.deletedPods("job-uid")); n != 1 {
		t.Fatalf("a pod still being deleted was dropped: %d listed; want 1", n)
	}
	d.deleted(going)
	given = d.deletedPods("job-uid")
	d.handled("job-uid", given, nil)
	if n := len(d.deletedPods("job-uid")); n != 0 {
		t.Fatalf("a pod a round saw gone is still listed: %d; want 0", n)
	}
	// A deletion recorded after the round listed what it gives render waits for the next round.
	other := trackedPod("j-worker-1", false)
	d.seen(other)
	d.deleted(other)
	d.handled("job-uid", given, nil)
	if n := len(d.deletedPods("job-uid")); n != 1 {
		t.Fatalf("a deletion render was not given yet was dropped: %d listed; want 1", n)
	}
}

func TestDeletionTrackerForgetsNotesOfJobsThatAreGone(t *testing.T) {
	d := newDeletionTracker()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	d.now = func() time.Time { return now }
	p := trackedPod("j-worker-0", false)
	d.seen(p)
	d.deleted(p) // the garbage collector's, after its job went
	now = now.Add(trackTTL + 2*time.Minute)
	d.deleting("other-job", "uid-other") // any note sweeps
	if n := len(d.deletedPods("job-uid")); n != 0 || len(d.byOthers) != 0 {
		t.Errorf("%d deleted pods of a gone job kept after %s; want none", n, trackTTL)
	}
}
