package controller

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/trainyard/trainyard/render"
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

// The built-in Workload and PodGroup are looked up at every version render can write: a
// Kubernetes 1.37 cluster serves v1beta1 (and v1alpha3 when enabled), 1.36 v1alpha2, and a
// cluster without the gate none of them.
func TestDiscoverBuiltinRecordsTheServedVersions(t *testing.T) {
	cases := map[string]struct {
		served []string
		want   []string
	}{
		"Kubernetes 1.37, beta":           {served: []string{"v1beta1"}, want: []string{"v1beta1.scheduling.k8s.io"}},
		"Kubernetes 1.37, beta and alpha": {served: []string{"v1alpha3", "v1beta1"}, want: []string{"v1beta1.scheduling.k8s.io", "v1alpha3.scheduling.k8s.io"}},
		"Kubernetes 1.36":                 {served: []string{"v1alpha2"}, want: []string{"v1alpha2.scheduling.k8s.io"}},
		"not served":                      {served: []string{"v1"}, want: nil},
		"a version render cannot write":   {served: []string{"v1beta1", "v2"}, want: []string{"v1beta1.scheduling.k8s.io"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var gvs []schema.GroupVersion
			for _, v := range tc.served {
				gvs = append(gvs, schema.GroupVersion{Group: render.KubernetesGangGroup, Version: v})
			}
			mapper := meta.NewDefaultRESTMapper(gvs)
			for _, gv := range gvs {
				kind := "PodGroup"
				if gv.Version == "v1" {
					kind = "PriorityClass"
				}
				mapper.Add(gv.WithKind(kind), meta.RESTScopeNamespace)
			}
			tracker := newCRDTracker()
			tracker.update("podgroups.scheduling.volcano.sh", true)
			if err := tracker.discoverBuiltin(mapper); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, api := range render.KubernetesGangAPIs() {
				if tracker.installed()[api] {
					got = append(got, api)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("served versions (-want +got):\n%s", diff)
			}
			if !tracker.installed()["podgroups.scheduling.volcano.sh"] {
				t.Error("the CRDs known before were forgotten")
			}
		})
	}
}
