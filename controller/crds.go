package controller

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/trainyard/trainyard/apis/kueue"
	"github.com/trainyard/trainyard/render"
)

// crdTracker knows which PodGroup CRDs (and Kueue's Workload CRD) are installed, and at which
// versions the cluster serves the built-in scheduling.k8s.io PodGroup, from metadata-only watches of
// CustomResourceDefinitions and APIServices, and wakes the jobs of a kind when one appears or goes.
type crdTracker struct {
	mu  sync.RWMutex
	set map[string]bool
	// created receives the name of every CRD created (dropped when nobody listens).
	created chan string
}

func newCRDTracker() *crdTracker {
	return &crdTracker{set: map[string]bool{}, created: make(chan string, 16)}
}

// installed is the set of installed PodGroup CRDs, for render.Input.InstalledCRDs.
func (t *crdTracker) installed() map[string]bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.set
}

// discoverBuiltin records at which versions the cluster serves the built-in scheduling.k8s.io
// PodGroup (beta or alpha, behind a feature gate), under render.KubernetesGangAPIs, at start. Later
// changes (an API turned on or off, a control plane upgraded to a release that serves another
// version) come from the APIService watch: the kube-apiserver keeps an APIService named
// <version>.scheduling.k8s.io for each version it serves.
func (t *crdTracker) discoverBuiltin(mapper meta.RESTMapper) error {
	gk := schema.GroupKind{Group: render.KubernetesGangGroup, Kind: "PodGroup"}
	mappings, err := mapper.RESTMappings(gk) // every version the cluster serves, in one discovery
	switch {
	case meta.IsNoMatchError(err):
		return nil
	case err != nil:
		return fmt.Errorf("looking up %s: %w", gk, err)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	set := maps.Clone(t.set)
	for _, m := range mappings {
		if api := m.GroupVersionKind.Version + "." + gk.Group; slices.Contains(render.KubernetesGangAPIs(), api) {
			set[api] = true
		}
	}
	t.set = set
	return nil
}

// update records that name is present or not, and reports whether render cares about it: a
// PodGroup CRD, Kueue's Workload CRD or the APIService of a built-in PodGroup version. A change of
// the built-in PodGroup's versions is logged (rare: the kube-apiserver restarted with other
// flags). Note: every kind's handler shares the tracker and wakes its own jobs whenever a PodGroup
// CRD comes or goes; gating the wake on "this call changed the set" woke only the kind whose
// handler happened to run first.
func (t *crdTracker) update(name string, present bool) bool {
	if !slices.Contains(render.PodGroupCRDs(), name) && name != kueue.WorkloadCRD && !slices.Contains(render.KubernetesGangAPIs(), name) {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.set[name] == present {
		return true
	}
	set := make(map[string]bool, len(t.set)+1) // copy on write: readers hold the old map
	for k, v := range t.set {
		set[k] = v
	}
	if present {
		set[name] = true
	} else {
		delete(set, name)
	}
	t.set = set
	if slices.Contains(render.KubernetesGangAPIs(), name) {
		ctrl.Log.WithName("gang-apis").Info("the cluster's built-in Workload and PodGroup API changed", "apiService", name, "served", present)
	}
	return true
}

// crdHandler keeps the set current and requeues every job listed by jobs when a PodGroup CRD
// comes or goes. Every CRD created is also announced on t.created (for serveWhenInstalled).
func (t *crdTracker) crdHandler(jobs func(context.Context) []reconcile.Request) handler.EventHandler {
	return t.handler(jobs, func(name string) {
		select {
		case t.created <- name:
		default:
		}
	})
}

// apiServiceHandler keeps the set current and requeues every job listed by jobs when the cluster
// starts or stops serving a version of the built-in PodGroup.
func (t *crdTracker) apiServiceHandler(jobs func(context.Context) []reconcile.Request) handler.EventHandler {
	return t.handler(jobs, nil)
}

func (t *crdTracker) handler(jobs func(context.Context) []reconcile.Request, announce func(name string)) handler.EventHandler {
	wake := func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		for _, r := range jobs(ctx) {
			q.Add(r)
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if announce != nil {
				announce(e.Object.GetName())
			}
			if t.update(e.Object.GetName(), true) {
				wake(ctx, q)
			}
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if t.update(e.Object.GetName(), false) {
				wake(ctx, q)
			}
		},
	}
}

// apiService is the kube-aggregator's APIService, for a metadata-only watch (its Go type is not
// among the operator's dependencies).
func apiService() *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "apiregistration.k8s.io/v1", Kind: "APIService"}}
}

// jobRequests lists every job of a kind from the cache, as requests.
func jobRequests(c client.Client, kind jobKind) func(context.Context) []reconcile.Request {
	return func(ctx context.Context) []reconcile.Request {
		list := kind.newList()
		if err := c.List(ctx, list); err != nil {
			return nil
		}
		var reqs []reconcile.Request
		for _, j := range kind.items(list) {
			reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: j.GetNamespace(), Name: j.GetName()}})
		}
		return reqs
	}
}
