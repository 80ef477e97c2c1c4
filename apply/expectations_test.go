package apply

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func pod(name string, uid types.UID) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: uid}}
}

// seen is what Observe returned, as "name/uid" with a trailing "(deleting)" when marked.
func seen(pods []*corev1.Pod) []string {
	out := []string{}
	for _, p := range pods {
		s := p.Name + "/" + string(p.UID)
		if p.DeletionTimestamp != nil {
			s += " (deleting)"
		}
		out = append(out, s)
	}
	return out
}

func TestObserve(t *testing.T) {
	cases := map[string]struct {
		// created are objects created (with their server UID); deleted are UIDs being deleted.
		created []*corev1.Pod
		deleted []*corev1.Pod
		cached  []*corev1.Pod
		after   time.Duration
		want    []string
		// wantPending is what is still expected after the call: creations, deletions.
		wantPending [2]int
	}{
		"a created pod the cache does not show yet is added": {
			created:     []*corev1.Pod{pod("j-worker-1", "u1")},
			cached:      []*corev1.Pod{pod("j-worker-0", "u0")},
			want:        []string{"j-worker-0/u0", "j-worker-1/u1"},
			wantPending: [2]int{1, 0},
		},
		"a created pod the cache shows is no longer expected": {
			created: []*corev1.Pod{pod("j-worker-1", "u1")},
			cached:  []*corev1.Pod{pod("j-worker-0", "u0"), pod("j-worker-1", "u1")},
			want:    []string{"j-worker-0/u0", "j-worker-1/u1"},
		},
		"a deleted pod the cache still shows is marked as being deleted": {
			deleted:     []*corev1.Pod{pod("j-worker-0", "u0")},
			cached:      []*corev1.Pod{pod("j-worker-0", "u0"), pod("j-worker-1", "u1")},
			want:        []string{"j-worker-0/u0 (deleting)", "j-worker-1/u1"},
			wantPending: [2]int{0, 1},
		},
		"a deleted pod gone from the cache is no longer expected": {
			deleted: []*corev1.Pod{pod("j-worker-0", "u0")},
			cached:  []*corev1.Pod{pod("j-worker-1", "u1")},
			want:    []string{"j-worker-1/u1"},
		},
		"a deleted pod whose replacement the cache shows is not confused with it": {
			deleted: []*corev1.Pod{pod("j-worker-0", "old")},
			cached:  []*corev1.Pod{pod("j-worker-0", "new")},
			want:    []string{"j-worker-0/new"},
		},
		"a pod created then deleted before the cache saw it stays away": {
			created: []*corev1.Pod{pod("j-worker-0", "u0")},
			deleted: []*corev1.Pod{pod("j-worker-0", "u0")},
			cached:  []*corev1.Pod{},
			want:    []string{},
		},
		"expectations older than the ttl are dropped": {
			created: []*corev1.Pod{pod("j-worker-1", "u1")},
			deleted: []*corev1.Pod{pod("j-worker-0", "u0")},
			cached:  []*corev1.Pod{pod("j-worker-0", "u0")},
			after:   2 * time.Minute,
			want:    []string{"j-worker-0/u0"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := NewExpectations(time.Minute, nil)
			for i := range tc.created {
				p := tc.created[i].DeepCopy()
				e.ExpectCreation("job", p)
				e.Created("job", CreateResult{Object: p, Created: true})
			}
			for _, p := range tc.deleted {
				e.ExpectDeletion("job", p.Name, p.UID)
			}
			got := Observe(e, "job", tc.cached, time.Now().Add(tc.after))
			if diff := cmp.Diff(tc.want, seen(got)); diff != "" {
				t.Errorf("Observe (-want +got):\n%s", diff)
			}
			c, d := e.Pending("job")
			if diff := cmp.Diff(tc.wantPending, [2]int{c, d}); diff != "" {
				t.Errorf("pending creations, deletions (-want +got):\n%s", diff)
			}
		})
	}
}

func TestObserveLeavesTheCachedListAlone(t *testing.T) {
	e := NewExpectations(time.Minute, nil)
	e.ExpectDeletion("job", "j-worker-0", "u0")
	cached := []*corev1.Pod{pod("j-worker-0", "u0")}
	_ = Observe(e, "job", cached, time.Now())
	if cached[0].DeletionTimestamp != nil {
		t.Fatal("Observe changed the cache's object; it must work on a copy")
	}
}

func TestFailedCreationIsNotExpected(t *testing.T) {
	e := NewExpectations(time.Minute, nil)
	p := pod("j-worker-0", "")
	e.ExpectCreation("job", p)
	e.Created("job", CreateResult{Object: p, Err: errTest})
	if got := Observe(e, "job", []*corev1.Pod(nil), time.Now()); len(got) != 0 {
		t.Fatalf("a failed creation was shown as a pod: %v", seen(got))
	}
}

func TestACreatedObjectSeenDeletedIsNoLongerExpected(t *testing.T) {
	e := NewExpectations(time.Minute, nil)
	p := pod("j-worker-0", "u1")
	e.ExpectCreation("job", p)
	e.Created("job", CreateResult{Object: p, Created: true})
	e.Gone("job", "j-worker-0", "u0") // an earlier pod of that name: the new one is still expected
	if got := Observe(e, "job", []*corev1.Pod(nil), time.Now()); len(got) != 1 {
		t.Fatalf("the created pod is not shown after another of its name went: %v", seen(got))
	}
	e.Gone("job", "j-worker-0", "u1")
	if got := Observe(e, "job", []*corev1.Pod(nil), time.Now()); len(got) != 0 {
		t.Fatalf("a pod deleted before the cache showed it is still shown: %v", seen(got))
	}
}
