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

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
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
		tracker.crdHandler(jobsOf(kind)).Create(context.Background(), event.CreateEvent{Object: crd}, queues[kind])
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
	tracker.crdHandler(jobsOf("pt-job")).Create(context.Background(), event.CreateEvent{Object: other}, queues["pt-job"])
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

// A control plane upgraded from 1.36 to 1.37 under a running operator stops serving the gang
// objects at v1alpha2 and starts serving them at v1beta1: the kube-apiserver deletes the one
// APIService and creates the other. The tracker follows, every job is woken each time, and render
// then writes the new version. An unrelated APIService changes nothing and wakes nobody, and no
// APIService is announced as a newly installed CRD.
func TestTheServedGangVersionFollowsTheAPIServices(t *testing.T) {
	tracker := newCRDTracker()
	tracker.update("v1alpha2.scheduling.k8s.io", true) // as discoverBuiltin found it at start
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	woken := func() int {
		n := q.Len()
		for range n {
			r, _ := q.Get()
			q.Done(r)
			q.Forget(r)
		}
		return n
	}
	h := tracker.apiServiceHandler(func(context.Context) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "gang"}}}
	})
	job := &render.Job{Scheduler: &batch.SchedulePolicy{Kubernetes: &batch.KubernetesScheduler{}}}
	version := func() string {
		kinds := render.GangKinds(job, tracker.installed())
		if len(kinds) == 0 {
			return "none"
		}
		return kinds[0].Version
	}
	apiService := func(name string) *metav1.PartialObjectMetadata {
		return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: name}}
	}
	if got := version(); got != "v1alpha2" {
		t.Fatalf("before the upgrade render writes %s; want v1alpha2", got)
	}
	h.Delete(context.Background(), event.DeleteEvent{Object: apiService("v1alpha2.scheduling.k8s.io")}, q)
	if got, n := version(), woken(); got != "none" || n != 1 {
		t.Errorf("v1alpha2 gone: render writes %s, %d jobs woken; want none, 1", got, n)
	}
	h.Create(context.Background(), event.CreateEvent{Object: apiService("v1beta1.scheduling.k8s.io")}, q)
	if got, n := version(), woken(); got != "v1beta1" || n != 1 {
		t.Errorf("v1beta1 served: render writes %s, %d jobs woken; want v1beta1, 1", got, n)
	}
	h.Create(context.Background(), event.CreateEvent{Object: apiService("v1.apps")}, q)
	if got, n := version(), woken(); got != "v1beta1" || n != 0 {
		t.Errorf("an unrelated APIService: render writes %s, %d jobs woken; want v1beta1, 0", got, n)
	}
	if tracker.installed()["v1.apps"] {
		t.Error("the tracker recorded an unrelated APIService")
	}
	select {
	case name := <-tracker.created:
		t.Errorf("the APIService %s was announced as a newly installed CRD", name)
	default:
	}
}
