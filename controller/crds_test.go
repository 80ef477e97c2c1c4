package controller

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Both kinds' controllers watch CRDs through one tracker: each must wake its own jobs when a
// PodGroup CRD is installed, whichever handler sees the event first.
func TestEveryKindIsWokenWhenAPodGroupCRDIsInstalled(t *testing.T) {
	tracker := newCRDTracker()
	jobsOf := func(name string) func(context.Context) []reconcile.Request {
		return func(context.Context) []reconcile.Request {
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: "ns", Name: name}}}
		}
	}
	queues := map[string]workqueue.TypedRateLimitingInterface[reconcile.Request]{}
	for _, kind := range []string{"tf-job", "pt-job"} { // the TensorFlow handler runs first
		queues[kind] = workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
		defer queues[kind].ShutDown()
	}
	crd := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "podgroups.scheduling.volcano.sh"}}
	for _, kind := range []string{"tf-job", "pt-job"} {
		tracker.handler(jobsOf(kind)).Create(context.Background(), event.CreateEvent{Object: crd}, queues[kind])
	}
	for kind, q := range queues {
		if q.Len() != 1 {
			t.Errorf("%s: %d requests queued after the CRD was installed; want 1", kind, q.Len())
		}
	}
	if !tracker.installed()["podgroups.scheduling.volcano.sh"] {
		t.Error("the tracker does not know the CRD is installed")
	}
	other := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"}}
	tracker.handler(jobsOf("pt-job")).Create(context.Background(), event.CreateEvent{Object: other}, queues["pt-job"])
	if queues["pt-job"].Len() != 1 {
		t.Error("an unrelated CRD woke jobs")
	}
}
