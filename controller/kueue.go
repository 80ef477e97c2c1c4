package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/source"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
	kubeflowv1 "github.com/trainyard/trainyard/apis/kubeflow/v1"
	"github.com/trainyard/trainyard/apis/kueue"
	"github.com/trainyard/trainyard/render"
	"github.com/trainyard/trainyard/status"
)

// kueueSync carries out the T9k kinds' side of Kueue's job protocol, which render decides
// (render/queue.go): it observes a queued job's Workload, the ResourceFlavors of its admission and
// its priority class, and makes the Workload what render's decisions say. Kueue's objects are read
// from a cache of their own (kueueCache), started once Kueue's CRD is installed; the job's
// controller then watches Workloads, so an admission or an eviction wakes the job.
type kueueSync struct {
	client client.Client
	// recorder records on the job what the API server's answers decided (a refused shrink).
	recorder events.EventRecorder
	// reader reads PriorityClasses (the manager's cache).
	reader client.Reader
	caches *kueueCache
	kind   jobKind
	// kubeflow: the kind is a kubeflow.org one, which Kueue's own integration queues: only the
	// Workload Kueue made for a job is read (observeKubeflow), from the cache of those.
	kubeflow bool
	// watch starts the Workload watch of the job's controller, on Kueue's cache.
	watch func(cache.Cache) error
	// cache is Kueue's cache once the watch is started.
	cache cache.Cache

	mu       sync.Mutex
	watching bool
	// patched is, by job UID, the Workload UID and resourceVersion a status patch was computed
	// from: a cache that still shows that version has not caught up, and the patch is not sent again.
	patched map[types.UID]string
}

// newKueueSync wires Kueue's protocol into the controller c of a T9k kind.
func newKueueSync(mgr ctrl.Manager, caches *kueueCache, c controller.Controller, kind jobKind, recorder events.EventRecorder) *kueueSync {
	return &kueueSync{
		client: mgr.GetClient(), recorder: recorder, reader: mgr.GetCache(), caches: caches, kind: kind, patched: map[types.UID]string{},
		watch: func(kc cache.Cache) error {
			return c.Watch(source.Kind[client.Object](kc, newWorkload(),
				handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(), kind.newJob(), handler.OnlyControllerOwner())))
		},
	}
}

// newKubeflowKueue wires, into the controller c of a kubeflow.org kind, the reading of the
// Workloads Kueue's own integration makes for its jobs: render says in Kueue's words why such a
// job is held (render/kubeflow.go kueueHold). Nothing is written to them.
func newKubeflowKueue(mgr ctrl.Manager, caches *kueueCache, c controller.Controller, kind jobKind) *kueueSync {
	return &kueueSync{
		client: mgr.GetClient(), reader: mgr.GetCache(), caches: caches, kind: kind, kubeflow: true, patched: map[types.UID]string{},
		watch: func(kc cache.Cache) error {
			return c.Watch(source.Kind[client.Object](kc, newWorkload(),
				handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(), kind.newJob(), handler.OnlyControllerOwner())))
		},
	}
}

// kueueCache is the cache of Kueue's objects, shared by the T9k kinds. Note: it is made only once
// Kueue's CRD is installed, and added to the running manager then: the manager's own cache cannot
// be told about a kind the API server does not serve (it fails to start), and Kueue may be
// installed after the operator. Workloads are cached only when they carry Trainyard's owner-kind
// label (those of the T9k jobs); ResourceFlavors and WorkloadPriorityClasses, few and small, all.
type kueueCache struct {
	mgr   ctrl.Manager
	mu    sync.Mutex
	cache cache.Cache
	// jobs is the cache of the Workloads Kueue makes for the jobs it queues itself (getJobs).
	jobs cache.Cache
}

// workloadControllerIndex indexes the cached Workloads of Kueue's own jobs by their
// controller's UID; workloadUIDIndex, by their own (a preemption names its preemptor's).
const (
	workloadControllerIndex = "trainyard.workloadController"
	workloadUIDIndex        = "trainyard.workloadUID"
)

// getJobs returns the started and synced cache of the Workloads Kueue makes for the jobs of its
// own integrations (labelled kueue.x-k8s.io/job-uid), making it on first use. Note: a cache of its
// own, as that label is no Trainyard's; it holds every such Workload, but only those of
// kubeflow.org jobs beyond their names and owners (trimJobWorkload), so its size stays small
// whatever other jobs Kueue queues.
func (k *kueueCache) getJobs(ctx context.Context) (cache.Cache, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.jobs != nil {
		return k.jobs, nil
	}
	made, err := labels.NewRequirement(kueue.LabelJobUID, selection.Exists, nil)
	if err != nil {
		return nil, err
	}
	c, err := k.start(ctx, "Kueue's Workloads of kubeflow.org jobs", cache.Options{
		ByObject: map[client.Object]cache.ByObject{newWorkload(): {
			Label: labels.NewSelector().Add(*made), Transform: trimJobWorkload,
		}},
	}, func(c cache.Cache) error {
		if err := c.IndexField(ctx, newWorkload(), workloadControllerIndex, func(o client.Object) []string {
			return controllerUID(o)
		}); err != nil {
			return err
		}
		return c.IndexField(ctx, newWorkload(), workloadUIDIndex, func(o client.Object) []string {
			return []string{string(o.GetUID())}
		})
	})
	if err != nil {
		return nil, err
	}
	k.jobs = c
	return c, nil
}

// start makes a cache of what opts selects (the manager's scheme and mapper, watch errors said
// once), sets it up (before it starts, so that an index holds from its first object), runs it
// with the manager and waits for it to sync; what names it in errors.
func (k *kueueCache) start(ctx context.Context, what string, opts cache.Options, setup func(cache.Cache) error) (cache.Cache, error) {
	opts.Scheme, opts.Mapper, opts.DefaultWatchErrorHandler = k.mgr.GetScheme(), k.mgr.GetRESTMapper(), watchErrors.handle
	c, err := cache.New(k.mgr.GetConfig(), opts)
	if err != nil {
		return nil, fmt.Errorf("making the cache of %s: %w", what, err)
	}
	if setup != nil {
		if err := setup(c); err != nil {
			return nil, err
		}
	}
	if err := k.mgr.Add(c); err != nil {
		return nil, err
	}
	wait, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if !c.WaitForCacheSync(wait) {
		return nil, fmt.Errorf("the cache of %s did not start", what)
	}
	return c, nil
}

// trimJobWorkload keeps of a Workload what render reads of a kubeflow.org job's (its owners,
// spec.active, queueName and maximumExecutionTimeSeconds, status.conditions), and of any other
// only its name and owners.
func trimJobWorkload(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	m := map[string]any{"name": u.GetName(), "namespace": u.GetNamespace(), "uid": string(u.GetUID()), "resourceVersion": u.GetResourceVersion()}
	if refs, found, _ := unstructured.NestedSlice(u.Object, "metadata", "ownerReferences"); found {
		m["ownerReferences"] = refs
	}
	trimmed := map[string]any{"apiVersion": u.GetAPIVersion(), "kind": u.GetKind(), "metadata": m}
	if c := metav1.GetControllerOfNoCopy(u); c != nil && isKubeflowKind(c) {
		if t, found, _ := unstructured.NestedFieldNoCopy(u.Object, "metadata", "creationTimestamp"); found {
			m["creationTimestamp"] = t
		}
		m["generation"] = u.GetGeneration()
		spec := map[string]any{}
		for _, f := range []string{"active", "queueName", "maximumExecutionTimeSeconds"} {
			if v, found, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", f); found {
				spec[f] = v
			}
		}
		trimmed["spec"] = spec
		if conds, found, _ := unstructured.NestedSlice(u.Object, "status", "conditions"); found {
			trimmed["status"] = map[string]any{"conditions": conds}
		}
	}
	return &unstructured.Unstructured{Object: trimmed}, nil
}

// isKubeflowKind: ref is a kubeflow.org PyTorchJob or TFJob.
func isKubeflowKind(ref *metav1.OwnerReference) bool {
	return strings.HasPrefix(ref.APIVersion, kubeflowv1.GroupVersion.Group+"/") && (ref.Kind == pyTorchJobKind.gvk.Kind || ref.Kind == tfJobKind.gvk.Kind)
}

// get returns the started and synced cache, making it on first use.
func (k *kueueCache) get(ctx context.Context) (cache.Cache, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.cache != nil {
		return k.cache, nil
	}
	owned, err := labels.NewRequirement(batch.LabelOwnerKind, selection.Exists, nil)
	if err != nil {
		return nil, err
	}
	c, err := k.start(ctx, "Kueue's objects", cache.Options{
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject:         map[client.Object]cache.ByObject{newWorkload(): {Label: labels.NewSelector().Add(*owned)}},
	}, func(c cache.Cache) error {
		// A sliced job's Workloads are listed by their controller (render.Sliced).
		return c.IndexField(ctx, newWorkload(), workloadControllerIndex, func(o client.Object) []string {
			return controllerUID(o)
		})
	})
	if err != nil {
		return nil, err
	}
	k.cache = c
	return c, nil
}

func newWorkload() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(kueue.GroupVersion.WithKind(kueue.KindWorkload))
	return u
}

// observe reads what render needs of a queued job once Kueue is installed (nil otherwise), and
// the live Workload, whose resourceVersion the writes are made against.
func (k *kueueSync) observe(ctx context.Context, job client.Object, model *render.Job, installed map[string]bool) (*render.KueueObservation, *unstructured.Unstructured, error) {
	if k != nil && k.kubeflow {
		obs, err := k.observeKubeflow(ctx, job, model, installed)
		return obs, nil, err
	}
	if k == nil || model.Queue == nil || !installed[kueue.WorkloadCRD] {
		return nil, nil, nil
	}
	if err := k.ensureWatch(ctx); err != nil {
		return nil, nil, err
	}
	obs := &render.KueueObservation{Flavors: map[string]*kueue.ResourceFlavor{}}
	var err error
	obs.Priority, obs.PriorityError = render.PriorityOf(model, func(ref kueue.PriorityClassRef) (int32, bool) {
		v, found, e := k.priorityValue(ctx, ref)
		if e != nil {
			err = e
		}
		return v, found
	})
	if err != nil {
		return nil, nil, err
	}
	if render.Sliced(model) {
		return k.observeSlices(ctx, job, obs)
	}
	live := newWorkload()
	switch err := k.cache.Get(ctx, types.NamespacedName{Namespace: job.GetNamespace(), Name: render.WorkloadName(model)}, live); {
	case apierrors.IsNotFound(err):
		return obs, nil, nil
	case err != nil:
		return nil, nil, err
	}
	// A prebuilt Workload (MultiKueue's, in a worker cluster) has no controller until the job
	// adopts it (render's Adopt).
	if c := metav1.GetControllerOfNoCopy(live); !metav1.IsControlledBy(live, job) && (c != nil || model.Queue.Prebuilt == "") {
		return nil, nil, fmt.Errorf("Workload %s is not the job's (its controller is not the job)", live.GetName())
	}
	obs.Workload = &kueue.Workload{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(live.Object, obs.Workload); err != nil {
		return nil, nil, fmt.Errorf("reading Workload %s: %w", live.GetName(), err)
	}
	obs.Preemptor = render.PreemptorOf(obs.Workload, k.workloadByUID(ctx))
	if err := k.readFlavors(ctx, obs, obs.Workload); err != nil {
		return nil, nil, err
	}
	return obs, live, nil
}

// observeSlices reads the Workloads a sliced job controls (render.Sliced): the one it runs or
// waits under (returned live too), a slice asking for a new size, and the rest
// (render.SliceWorkloads); and the ResourceFlavors of their admissions.
func (k *kueueSync) observeSlices(ctx context.Context, job client.Object, obs *render.KueueObservation) (*render.KueueObservation, *unstructured.Unstructured, error) {
	items, ws, err := k.controlledWorkloads(ctx, job)
	if err != nil {
		return nil, nil, err
	}
	obs.Workload, obs.Replacement, obs.Others = render.SliceWorkloads(ws)
	if obs.Workload == nil {
		return obs, nil, nil
	}
	obs.Preemptor = render.PreemptorOf(obs.Workload, k.workloadByUID(ctx))
	for _, w := range append([]*kueue.Workload{obs.Workload}, obs.Others...) {
		if err := k.readFlavors(ctx, obs, w); err != nil {
			return nil, nil, err
		}
	}
	return obs, &items[slices.Index(ws, obs.Workload)], nil
}

// controlledWorkloads lists the cached Workloads the job controls, as they are and read.
func (k *kueueSync) controlledWorkloads(ctx context.Context, job client.Object) ([]unstructured.Unstructured, []*kueue.Workload, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(kueue.GroupVersion.WithKind(kueue.KindWorkload + "List"))
	if err := k.cache.List(ctx, list, client.InNamespace(job.GetNamespace()), client.MatchingFields{workloadControllerIndex: string(job.GetUID())}); err != nil {
		return nil, nil, err
	}
	ws := make([]*kueue.Workload, len(list.Items))
	for i := range list.Items {
		ws[i] = &kueue.Workload{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(list.Items[i].Object, ws[i]); err != nil {
			return nil, nil, fmt.Errorf("reading Workload %s: %w", list.Items[i].GetName(), err)
		}
	}
	return list.Items, ws, nil
}

// readFlavors reads into obs.Flavors the ResourceFlavors w's admission names.
func (k *kueueSync) readFlavors(ctx context.Context, obs *render.KueueObservation, w *kueue.Workload) error {
	a := w.Status.Admission
	if a == nil {
		return nil
	}
	for _, psa := range a.PodSetAssignments {
		for _, name := range psa.Flavors {
			if obs.Flavors[name] != nil {
				continue
			}
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(kueue.GroupVersion.WithKind(kueue.KindResourceFlavor))
			switch err := k.cache.Get(ctx, types.NamespacedName{Name: name}, u); {
			case apierrors.IsNotFound(err):
				continue // render says which is missing
			case err != nil:
				return err
			}
			rf := &kueue.ResourceFlavor{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, rf); err != nil {
				return fmt.Errorf("reading ResourceFlavor %s: %w", name, err)
			}
			obs.Flavors[name] = rf
		}
	}
	return nil
}

// observeKubeflow reads the Workload Kueue's own integration made for a kubeflow.org job labelled
// kueue.x-k8s.io/queue-name, once Kueue is installed (nil otherwise); the observation has no
// Workload until Kueue has made it. Of several (Kueue's workload slices of an elastic job), the
// newest that is not finished.
func (k *kueueSync) observeKubeflow(ctx context.Context, job client.Object, model *render.Job, installed map[string]bool) (*render.KueueObservation, error) {
	if model.Kubeflow == nil || model.Kubeflow.KueueQueue == "" || !installed[kueue.WorkloadCRD] {
		return nil, nil
	}
	if err := k.ensureWatch(ctx); err != nil {
		return nil, err
	}
	_, ws, err := k.controlledWorkloads(ctx, job)
	if err != nil {
		return nil, err
	}
	obs := &render.KueueObservation{}
	for _, w := range ws {
		if prev := obs.Workload; prev == nil || newerWorkload(w, prev) {
			obs.Workload = w
		}
	}
	obs.Preemptor = render.PreemptorOf(obs.Workload, k.workloadByUID(ctx))
	return obs, nil
}

// workloadByUID finds a Workload by UID among those Kueue made for the jobs it queues (render's
// PreemptorOf's find), T9k jobs' included: they carry kueue.x-k8s.io/job-uid too. Called only
// for a preempted Workload, so that cache is made for the T9k kinds only once one is. A cache
// that cannot be had finds nothing: the preemptor goes unnamed, in Kueue's words alone.
func (k *kueueSync) workloadByUID(ctx context.Context) func(types.UID) metav1.Object {
	return func(uid types.UID) metav1.Object {
		c, err := k.caches.getJobs(ctx)
		if err != nil {
			return nil
		}
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(kueue.GroupVersion.WithKind(kueue.KindWorkload + "List"))
		if err := c.List(ctx, list, client.MatchingFields{workloadUIDIndex: string(uid)}); err != nil || len(list.Items) == 0 {
			return nil
		}
		return &list.Items[0]
	}
}

// newerWorkload: a is to be read rather than b: it is not finished and b is, or it is newer.
func newerWorkload(a, b *kueue.Workload) bool {
	fa, fb := meta.IsStatusConditionTrue(a.Status.Conditions, kueue.WorkloadFinished), meta.IsStatusConditionTrue(b.Status.Conditions, kueue.WorkloadFinished)
	if fa != fb {
		return fb
	}
	return b.CreationTimestamp.Before(&a.CreationTimestamp)
}

// errKueueNotServed: Kueue's Workload CRD is installed but the API server does not serve the
// kind yet (the CRD not yet established, discovery behind), so no cache of it can be made.
var errKueueNotServed = errors.New("Kueue's Workload CRD is installed but the API server does not serve the kind yet")

// kueueNotServedRecheck is how soon a job is reconciled again while its Kueue kind is not served:
// the CRD's establishment wakes no job (only its creation does).
const kueueNotServedRecheck = time.Second

// ensureWatch starts the watch of Workloads for the job's controller, once; errKueueNotServed
// while the kind is not served yet.
func (k *kueueSync) ensureWatch(ctx context.Context) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.watching {
		return nil
	}
	// Note: a cache, an index or a watch of a kind the RESTMapper does not know fails (the cache
	// and the index at once, which logged a reconciler error at each backoff retry; the watch in
	// its own goroutine), so the kind is looked up first.
	gvk := kueue.GroupVersion.WithKind(kueue.KindWorkload)
	switch _, err := k.caches.mgr.GetRESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version); {
	case meta.IsNoMatchError(err):
		return errKueueNotServed
	case err != nil:
		return fmt.Errorf("looking up %s: %w", gvk, err)
	}
	get := k.caches.get
	if k.kubeflow {
		get = k.caches.getJobs
	}
	c, err := get(ctx)
	if err != nil {
		return err
	}
	if err := k.watch(c); err != nil {
		return fmt.Errorf("watching Kueue Workloads: %w", err)
	}
	k.cache, k.watching = c, true
	return nil
}

// priorityValue looks a priority class up in the cache.
func (k *kueueSync) priorityValue(ctx context.Context, ref kueue.PriorityClassRef) (int32, bool, error) {
	if ref.Group == kueue.PriorityClassGroupPod {
		var pc schedulingv1.PriorityClass
		switch err := k.reader.Get(ctx, types.NamespacedName{Name: ref.Name}, &pc); {
		case apierrors.IsNotFound(err):
			return 0, false, nil
		case err != nil:
			return 0, false, err
		}
		return pc.Value, true, nil
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(kueue.GroupVersion.WithKind(kueue.KindWorkloadPriorityClass))
	switch err := k.cache.Get(ctx, types.NamespacedName{Name: ref.Name}, u); {
	case apierrors.IsNotFound(err):
		return 0, false, nil
	case err != nil:
		return 0, false, err
	}
	v, _, err := unstructured.NestedInt64(u.Object, "value")
	return int32(v), true, err
}

// sync makes the job's Workload what render decided: created, replaced, (de)activated, and its
// status conditions and admission written.
func (k *kueueSync) sync(ctx context.Context, job client.Object, out *render.Output, live *unstructured.Unstructured) error {
	if k == nil || out == nil || out.Decisions.Kueue == nil {
		return nil
	}
	d := out.Decisions.Kueue
	logger := log.FromContext(ctx).WithValues("workload", d.Workload)
	if err := k.sliceWrites(ctx, job, d, live); err != nil {
		return err
	}
	switch {
	case d.Create && out.KueueWorkload != nil:
		err := k.client.Create(ctx, out.KueueWorkload.DeepCopy(), client.FieldOwner(FieldManager))
		if apierrors.IsAlreadyExists(err) || namespaceTerminating(err) {
			return nil // the cache has not shown it yet, or the namespace (the job with it) is going
		}
		if err == nil {
			logger.V(1).Info("created the job's Kueue Workload")
		}
		return err
	case live == nil:
		return nil
	case d.Replace:
		logger.Info("replacing the job's Kueue Workload: it no longer matches the job's replicas or queue")
		uid := live.GetUID()
		err := k.client.Delete(ctx, live, client.Preconditions{UID: &uid})
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return nil
		}
		return err
	}
	if d.Adopt {
		// The rest is written from the adopted Workload, whose update wakes the job.
		return k.adopt(ctx, job, live)
	}
	if d.SetActive != nil {
		annotation := any(nil)
		if !*d.SetActive {
			annotation = "true"
		}
		patch, _ := json.Marshal(map[string]any{
			"metadata": map[string]any{"annotations": map[string]any{render.AnnotationDeactivated: annotation}},
			"spec":     map[string]any{"active": *d.SetActive},
		})
		if err := k.client.Patch(ctx, live.DeepCopy(), client.RawPatch(types.MergePatchType, patch), client.FieldOwner(FieldManager)); err != nil {
			return fmt.Errorf("setting Workload %s active=%t: %w", live.GetName(), *d.SetActive, err)
		}
		logger.V(1).Info("Workload activation set", "active", *d.SetActive)
	}
	if len(d.Conditions) == 0 && !d.ReleaseAdmission {
		return nil
	}
	version := string(live.GetUID()) + "/" + live.GetResourceVersion()
	k.mu.Lock()
	already := k.patched[job.GetUID()] == version
	k.mu.Unlock()
	if already {
		return nil // written from this version already; the cache will show it
	}
	var w kueue.Workload
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(live.Object, &w); err != nil {
		return err
	}
	conds := w.Status.Conditions
	for _, c := range d.Conditions {
		meta.SetStatusCondition(&conds, c)
	}
	status := map[string]any{"conditions": conds}
	if d.ReleaseAdmission {
		status["admission"] = nil
	}
	// Note: a merge patch replaces the whole list of conditions; the resourceVersion makes it
	// fail, rather than drop a condition Kueue wrote meanwhile.
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"resourceVersion": live.GetResourceVersion()}, "status": status})
	if err != nil {
		return err
	}
	if err := k.client.Status().Patch(ctx, live.DeepCopy(), client.RawPatch(types.MergePatchType, patch), client.FieldOwner(FieldManager)); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			logger.V(1).Info("Workload changed meanwhile; its status is written again from the new version", "error", err.Error())
			return nil // the Workload's update wakes the job again
		}
		return fmt.Errorf("writing Workload %s status: %w", live.GetName(), err)
	}
	k.mu.Lock()
	k.patched[job.GetUID()] = version
	k.mu.Unlock()
	set := make([]string, 0, len(d.Conditions))
	for _, c := range d.Conditions {
		set = append(set, c.Type+"="+string(c.Status))
	}
	logger.V(1).Info("Workload status written", "conditions", set, "admissionReleased", d.ReleaseAdmission)
	return nil
}

// sliceWrites makes a sliced job's slices what render decided (render.Sliced): the Workloads it no
// longer needs deleted, the running Workload's elastic count lowered in place.
func (k *kueueSync) sliceWrites(ctx context.Context, job client.Object, d *render.KueueDecisions, live *unstructured.Unstructured) error {
	logger := log.FromContext(ctx)
	for _, name := range d.Delete {
		w := newWorkload()
		w.SetNamespace(job.GetNamespace())
		w.SetName(name)
		if err := k.client.Delete(ctx, w); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting Workload %s: %w", name, err)
		}
		logger.V(1).Info("deleted a Workload slice the job no longer needs", "slice", name)
	}
	if s := d.ScaleDown; s != nil && live != nil {
		// Note: spec.podSets is a list keyed by name; the test makes the patch fail rather than
		// change another pod set's count.
		path := fmt.Sprintf("/spec/podSets/%d/", s.Index)
		patch, err := json.Marshal([]map[string]any{
			{"op": "test", "path": path + "name", "value": s.Name},
			{"op": "replace", "path": path + "count", "value": s.Count},
		})
		if err != nil {
			return err
		}
		switch err := k.client.Patch(ctx, live.DeepCopy(), client.RawPatch(types.JSONPatchType, patch), client.FieldOwner(FieldManager)); {
		case apierrors.IsNotFound(err):
			return nil
		case apierrors.IsInvalid(err) || apierrors.IsForbidden(err):
			// Kueue's webhook allows an admitted Workload's count to fall only with its workload
			// slices on (ElasticJobsViaWorkloadSlices): without them the job is queued anew at its
			// new size, as a job without slices is.
			logger.Info("Kueue refused to lower the job's admitted Workload in place (are its workload slices off?): the Workload is replaced", "error", err.Error())
			uid := live.GetUID()
			switch err := k.client.Delete(ctx, live, client.Preconditions{UID: &uid}); {
			case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
				return nil
			case err != nil:
				return err
			}
			k.recorder.Eventf(job, live, corev1.EventTypeWarning, status.EventKueueShrinkRefused, "Reconcile",
				"Kueue refused to lower Workload %s's %s count to %d in place (without its workload slices, ElasticJobsViaWorkloadSlices, an admitted count cannot fall): the Workload is deleted and the job queued anew at its new size; its pods are created again once Kueue admits it",
				live.GetName(), s.Name, s.Count)
			return nil
		case err != nil:
			return fmt.Errorf("lowering Workload %s pod set %s to %d: %w", live.GetName(), s.Name, s.Count, err)
		}
		logger.Info("lowered the job's Workload in place: the job shrank", "podSet", s.Name, "count", s.Count)
	}
	return nil
}

// adopt makes the job the controller of its prebuilt Workload and labels the Workload with the
// job's UID, as Kueue's jobframework does; the resourceVersion makes it fail rather than drop an
// owner written meanwhile.
func (k *kueueSync) adopt(ctx context.Context, job client.Object, live *unstructured.Unstructured) error {
	gvk := k.kind.gvk
	owners := append(live.GetOwnerReferences(), *metav1.NewControllerRef(job, gvk))
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"resourceVersion": live.GetResourceVersion(),
		"ownerReferences": owners,
		"labels":          map[string]any{kueue.LabelJobUID: string(job.GetUID())},
	}})
	if err != nil {
		return err
	}
	if err := k.client.Patch(ctx, live.DeepCopy(), client.RawPatch(types.MergePatchType, patch), client.FieldOwner(FieldManager)); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return nil // the Workload's update wakes the job again
		}
		return fmt.Errorf("adopting Workload %s: %w", live.GetName(), err)
	}
	log.FromContext(ctx).V(1).Info("adopted the prebuilt Workload", "workload", live.GetName())
	return nil
}

// workloadDeletions are the deletions of a deleted job's Workloads, as Kueue's cache shows them: a
// T9k job's (a sliced job's slices too), and those Kueue's own integration made for a kubeflow.org
// job. Kueue releases a Workload's quota only when it goes, and neither Kueue nor the garbage
// collector is prompt: on a cluster whose Workload CRD the garbage collector had not watched yet,
// both kinds' Workloads stayed admitted 39-40 s after their job was gone (e2e TestKueueTopology).
func (k *kueueSync) workloadDeletions(job client.Object) []deletion {
	if k == nil {
		return nil
	}
	k.mu.Lock()
	watching := k.cache != nil
	k.mu.Unlock()
	if !watching {
		return nil
	}
	items, _, err := k.controlledWorkloads(context.Background(), job)
	if err != nil {
		return nil // the garbage collector's
	}
	var dels []deletion
	for _, w := range items {
		if w.GetDeletionTimestamp() != nil {
			continue
		}
		obj := newWorkload()
		obj.SetNamespace(w.GetNamespace())
		obj.SetName(w.GetName())
		// Note: under its UID only: Kueue writes a Workload's status as the job's pods go, and a
		// deletion at the version the cache showed was refused as often as not, leaving it to the
		// garbage collector.
		dels = append(dels, deletion{obj: obj, uid: w.GetUID()})
	}
	return dels
}

// forget drops what is remembered of a job's Workload.
func (k *kueueSync) forget(job types.UID) {
	if k == nil {
		return
	}
	k.mu.Lock()
	delete(k.patched, job)
	k.mu.Unlock()
}
