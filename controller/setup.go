package controller

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
	"github.com/trainyard/trainyard/apply"
)

// IntentAnnotation carries the hash of what the operator last applied to an object it owns;
// apply compares it to skip writes that would change nothing.
const IntentAnnotation = "batch.tensorstack.dev/applied-intent"

// expectationTTL is how long a creation or deletion the cache has not shown is remembered.
const expectationTTL = time.Minute

// controllerIndex indexes cached pods and Services by the UID of their controller (the job).
const controllerIndex = "trainyard.controllerUID"

// byController is an informer's index of objects by the UID of their controller: a job's pods,
// or its Services, as the cache's own objects. Note: controller-runtime's List copies every pod of
// a job into a new slice (1.2 KB a pod, a 5,000-pod job's round 6 MB, a quarter of that job's
// allocations), and a List by label scans the whole namespace (200 Kubeflow jobs of 8 pods: 1,600
// Services matched against a selector on every round of every job, 17% of that burst's CPU); the
// index gives pointers to the job's own objects, which render, status and Observe only read.
type byController[T any] struct{ index toolscache.Indexer }

// indexByController adds controllerIndex to the manager's informer of obj's kind.
func indexByController[T any](ctx context.Context, mgr ctrl.Manager, obj client.Object) (byController[T], error) {
	inf, err := mgr.GetCache().GetInformer(ctx, obj)
	if err != nil {
		return byController[T]{}, err
	}
	shared, ok := inf.(interface{ GetIndexer() toolscache.Indexer })
	if !ok {
		return byController[T]{}, fmt.Errorf("the cache's %T informer (%T) has no indexer", obj, inf)
	}
	err = inf.AddIndexers(toolscache.Indexers{controllerIndex: func(obj any) ([]string, error) {
		if o, ok := obj.(client.Object); ok {
			return controllerUID(o), nil
		}
		return nil, nil
	}})
	return byController[T]{index: shared.GetIndexer()}, err
}

// of lists the objects whose controller has uid.
func (x byController[T]) of(uid types.UID) ([]*T, error) {
	objs, err := x.index.ByIndex(controllerIndex, string(uid))
	if err != nil {
		return nil, err
	}
	out := make([]*T, 0, len(objs))
	for _, o := range objs {
		if t, ok := o.(*T); ok {
			out = append(out, t)
		}
	}
	return out, nil
}

func controllerUID(o client.Object) []string {
	if ref := metav1.GetControllerOf(o); ref != nil {
		return []string{string(ref.UID)}
	}
	return nil
}

// shared are the parts both kinds' reconcilers use.
type shared struct {
	applier   *apply.Applier
	exp       *apply.Expectations
	svcExp    *apply.Expectations
	metrics   *metrics
	crds      *crdTracker
	deletions *deletionTracker
	// shares divides the bound on pods waiting for the scheduler between the jobs paced to it.
	shares *schedulerShares
	// kueue is the cache of Kueue's objects, made once Kueue is installed (kueue.go).
	kueue    *kueueCache
	pods     byController[corev1.Pod]
	services byController[corev1.Service]
	// kinds are the job kinds served, for the check of names shared between kinds.
	kinds *kindRegistry
}

func newShared(c client.Client) *shared {
	return &shared{
		applier: apply.NewApplier(c, FieldManager, IntentAnnotation),
		exp: apply.NewExpectations(expectationTTL, func(o client.Object) {
			if p, ok := o.(*corev1.Pod); ok {
				trimPod(p)
			}
		}),
		svcExp:    apply.NewExpectations(expectationTTL, nil),
		metrics:   newMetrics(),
		crds:      newCRDTracker(),
		deletions: newDeletionTracker(),
		kinds:     &kindRegistry{},
	}
}

// setupJobController registers the reconciler of one job kind with the manager.
func setupJobController(mgr ctrl.Manager, s *shared, kind jobKind, o Options) error {
	r := &jobReconciler{
		client:            mgr.GetClient(),
		reader:            mgr.GetAPIReader(),
		kind:              kind,
		applier:           s.applier,
		exp:               s.exp,
		pods:              s.pods,
		services:          s.services,
		svcExp:            s.svcExp,
		retry:             make(chan event.GenericEvent, retryBuffer),
		recorder:          mgr.GetEventRecorder("trainyard"),
		metrics:           s.metrics,
		crds:              s.crds,
		createParallelism: o.CreateParallelism,
		statusInterval:    o.StatusInterval,
		clusterDomain:     o.ClusterDomain,
		nodeLostAfter:     o.NodeLostAfter,
		shares:            s.shares,
		deletions:         s.deletions,
		kinds:             s.kinds,
		now:               time.Now,
		jobs:              map[types.UID]*jobMemory{},
		names:             map[types.NamespacedName]types.UID{},
	}
	// The operator's own status writes change neither generation, labels nor annotations, so
	// they wake no reconcile; spec edits, /scale, and annotations (a forced reconcile) do.
	jobChanged := predicate.Or(predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}, predicate.AnnotationChangedPredicate{})
	c, err := ctrl.NewControllerManagedBy(mgr).
		Named(kind.gvk.Kind).
		For(kind.newJob(), builder.WithPredicates(jobDeletions(r.jobDeleted), jobChanged)).
		Watches(&corev1.Pod{}, podEvents(kind, o.PodEventCoalesce, r.podsOf), builder.WithPredicates(trackDeletions(s.deletions, s.exp, kind), podChanged(kind, r.holdsPods))).
		Watches(&corev1.Service{}, serviceEvents(kind, o.PodEventCoalesce, r.podsOf), builder.WithPredicates(serviceGone(s.svcExp, r.servicesChanged))).
		Owns(&appsv1.Deployment{}).
		Watches(&corev1.Node{}, jobsOnNode(mgr.GetClient(), kind), builder.WithPredicates(nodeReadyChanged())).
		WatchesMetadata(&apiextensionsv1.CustomResourceDefinition{}, s.crds.crdHandler(jobRequests(mgr.GetClient(), kind))).
		WatchesMetadata(apiService(), s.crds.apiServiceHandler(jobRequests(mgr.GetClient(), kind))).
		WatchesRawSource(source.Channel(r.retry, &handler.EnqueueRequestForObject{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: o.MaxConcurrentReconciles}).
		Build(r)
	if err != nil {
		return err
	}
	s.kinds.add(kind, wakeByName(kind, r.retry))
	s.metrics.serve(kind.gvk.Kind)
	if s.kueue == nil {
		s.kueue = &kueueCache{mgr: mgr}
	}
	if kind.gvk.Group == batch.GroupVersion.Group {
		r.kueue = newKueueSync(mgr, s.kueue, c, kind, r.recorder)
	} else {
		r.kueue = newKubeflowKueue(mgr, s.kueue, c, kind) // Kueue runs the kubeflow.org kinds itself
	}
	return nil
}

// trackDeletions shows the deletion tracker every event of a pod of kind (it passes them all on):
// who deleted a pod is known only from the events. A deleted pod is also no longer expected to
// show as created. It runs before the event wakes the job, so the reconcile it causes sees both.
func trackDeletions(t *deletionTracker, exp *apply.Expectations, kind jobKind) predicate.Predicate {
	ours := func(o client.Object) (*corev1.Pod, bool) {
		p, ok := o.(*corev1.Pod)
		return p, ok && kind.controls(p) != nil
	}
	return predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool {
			if p, ok := ours(e.Object); ok {
				t.seen(p)
			}
			return true
		},
		UpdateFunc: func(e event.UpdateEvent) bool {
			old, ok1 := e.ObjectOld.(*corev1.Pod)
			if p, ok := ours(e.ObjectNew); ok && ok1 {
				t.updated(old, p)
			}
			return true
		},
		DeleteFunc: func(e event.DeleteEvent) bool {
			if p, ok := ours(e.Object); ok {
				t.deleted(p)
				exp.Gone(string(controllerOf(p)), p.Name, p.UID)
			}
			return true
		},
	}
}

// jobDeletions tells deleted of each job whose deletion is seen (it passes every event on): the
// job deleted (gone), or marked for deletion (a finalizer holds it).
func jobDeletions(deleted func(job client.Object, gone bool)) predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			if e.ObjectNew.GetDeletionTimestamp() != nil {
				deleted(e.ObjectNew, false)
			}
			return true
		},
		DeleteFunc: func(e event.DeleteEvent) bool {
			deleted(e.Object, true)
			return true
		},
	}
}

// retryBuffer is how many jobs whose background clean-up failed may wait to be reconciled again.
const retryBuffer = 1024

// serviceGone tells the Services' expectations of each Service deleted (it passes every event on):
// a Service deleted before the cache showed its creation is no longer expected to show; and its
// job's Services are no longer known to be in sync.
func serviceGone(exp *apply.Expectations, changed func(job types.UID)) predicate.Predicate {
	return predicate.Funcs{DeleteFunc: func(e event.DeleteEvent) bool {
		if uid := controllerOf(e.Object); uid != "" {
			exp.Gone(string(uid), e.Object.GetName(), e.Object.GetUID())
			changed(uid)
		}
		return true
	}}
}

// podChanged passes the updates of pods of kind's jobs that change what the (trimmed) cache
// holds, beside the resourceVersion and the node: a pod's unread status fields updated wake no
// reconcile, nor does a pod bound to a node unless bindings says its job waits for bindings: it
// holds pods back under --max-unscheduled-pods-per-job (never when that is 0). A burst of small
// jobs creates every pod in its first round and holds none back, so it is not woken once more per
// binding. Another kind's pod is its own controller's (each kind's controller sees every pod
// event: the comparison, made once per kind, was 3% of a burst's CPU).
func podChanged(kind jobKind, bindings func(job types.UID) bool) predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e eventUpdate) bool {
		oldPod, ok1 := e.ObjectOld.(*corev1.Pod)
		newPod, ok2 := e.ObjectNew.(*corev1.Pod)
		if !ok1 || !ok2 {
			return true
		}
		ref := kind.controls(newPod)
		if ref == nil {
			return false
		}
		if !samePod(oldPod, newPod) {
			return true
		}
		return oldPod.Spec.NodeName != newPod.Spec.NodeName && bindings(ref.UID)
	}}
}

type eventUpdate = event.UpdateEvent

// samePod compares two cached (trimmed) versions of a pod, resourceVersion aside.
func samePod(a, b *corev1.Pod) bool {
	return equality.Semantic.DeepEqual(a.Labels, b.Labels) &&
		equality.Semantic.DeepEqual(a.Annotations, b.Annotations) &&
		equality.Semantic.DeepEqual(a.DeletionTimestamp, b.DeletionTimestamp) &&
		equality.Semantic.DeepEqual(a.OwnerReferences, b.OwnerReferences) &&
		equality.Semantic.DeepEqual(a.Spec.Containers, b.Spec.Containers) &&
		equality.Semantic.DeepEqual(a.Status, b.Status)
}
