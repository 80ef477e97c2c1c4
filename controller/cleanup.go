package controller

import (
	"context"
	"errors"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"

	kubeflowv1 "github.com/trainyard/trainyard/apis/kubeflow/v1"
	"github.com/trainyard/trainyard/apply"
	"github.com/trainyard/trainyard/render"
)

// deletion is one object the reconciler deletes, with its UID as a precondition.
type deletion struct {
	obj    client.Object
	uid    types.UID
	force  bool
	reason string // render's Delete* reason, for the metrics ("" for a Service)
	// exp holds the expectation of the deletion (pods' or Services'); nil: none (a deleted job's).
	exp *apply.Expectations
	pod bool
	// resourceVersion, when set, is a precondition beside the UID: the object is deleted only if
	// unchanged since the cache showed it (releaseDeleted).
	resourceVersion string
}

// deletePods deletes the pods render lets go. A finished job's clean-up is sent in the background
// (deleteInBackground): its outcome is already written, and it must not hold a reconcile worker
// that another job's outcome waits for. Every other deletion (a restart, a pause, a scale-down)
// precedes what the round does next, and is waited for.
func (r *jobReconciler) deletePods(ctx context.Context, job client.Object, dels []render.Deletion, errs []error) (map[string]int, []error) {
	var now, later []deletion
	for _, d := range dels {
		x := deletion{obj: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: job.GetNamespace(), Name: d.Name}},
			uid: d.UID, force: d.Force, reason: d.Reason, exp: r.exp, pod: true}
		if d.Reason == render.DeleteCleanUp {
			later = append(later, x)
		} else {
			now = append(now, x)
		}
	}
	r.deleteInBackground(ctx, job, later)
	if len(now) == 0 {
		return nil, errs
	}
	r.expectDeletions(job, now)
	return r.sendDeletions(ctx, job, now, errs)
}

// expectDeletions records each deletion as expected before it is sent, so that the next round
// neither deletes it again nor takes its delete event for someone else's.
func (r *jobReconciler) expectDeletions(job client.Object, dels []deletion) {
	owner := string(job.GetUID())
	for _, d := range dels {
		d.exp.ExpectDeletion(owner, d.obj.GetName(), d.uid)
		if d.pod {
			r.deletions.deleting(job.GetUID(), d.uid)
		}
	}
}

// sendDeletions sends the deletions, up to createParallelism at a time (within the write gate),
// and forgets the expectation of each that fails. It returns the pods deleted by reason.
func (r *jobReconciler) sendDeletions(ctx context.Context, job client.Object, dels []deletion, errs []error) (map[string]int, []error) {
	owner := string(job.GetUID())
	deleted := map[string]int{}
	var mu sync.Mutex
	sem := make(chan struct{}, r.createParallelism)
	var wg sync.WaitGroup
	for _, d := range dels {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			done, err := true, error(nil)
			if d.resourceVersion != "" {
				done, err = r.applier.DeleteUnchanged(ctx, d.obj, d.uid, d.resourceVersion)
			} else {
				err = r.applier.Delete(ctx, d.obj, d.uid, d.force)
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if d.exp != nil {
					d.exp.DeletionFailed(owner, d.uid)
				}
				errs = append(errs, err)
				return
			}
			if d.pod && done {
				deleted[d.reason]++
			}
		}()
	}
	wg.Wait()
	return deleted, errs
}

// deleteInBackground sends dels without holding the reconcile: they are expected at once, sent
// through the write gate as clean-up (last, within a small share), counted in the metrics when
// done, and a failure brings the job back for another round (r.retry), which sends what is
// still there again.
func (r *jobReconciler) deleteInBackground(ctx context.Context, job client.Object, dels []deletion) {
	if len(dels) == 0 {
		return
	}
	r.expectDeletions(job, dels)
	// Note: the reconcile's context may end with the reconcile; the deletions must not.
	bg := apply.WithCleanUp(context.WithoutCancel(ctx))
	key := client.ObjectKeyFromObject(job)
	go func() {
		deleted, errs := r.sendDeletions(bg, job, dels, nil)
		for reason, n := range deleted {
			r.metrics.podsDeleted.WithLabelValues(r.kind.gvk.Kind, reason).Add(float64(n))
		}
		if err := errors.Join(errs...); err != nil {
			log.FromContext(bg).Error(err, "clean-up deletions failed; the job is reconciled again")
			again := r.kind.newJob()
			again.SetNamespace(key.Namespace)
			again.SetName(key.Name)
			r.retry <- event.GenericEvent{Object: again}
		}
	}()
}

// syncReplicaServices makes a Kubeflow job's per-replica Services those render wants: the
// missing ones are created (once: they are never patched, like pods), the job's others deleted in
// the background. The cache's list is corrected by the Services' expectations, as pods' are: a
// Service created a moment ago is not created again (AlreadyExists), one being deleted is not
// deleted twice.
//
// A round creates at most maxPodsPerRound Services, in render's order (the pods' order), and
// reports whether more are missing: a 5,000-pod job's Services then go out a slice per round
// beside its pods, rather than all 5,000 ahead of the first round's pods.
//
// create false: the missing Services are not created in this round (the job's pods go first, see
// replicaServicesNow); more then reports them. Services not due yet (a paced job's unbound pods',
// ReplicaServices.Due) are neither created nor reported: the bindings wake the job.
func (r *jobReconciler) syncReplicaServices(ctx context.Context, job client.Object, desired render.ReplicaServices, create bool) (more bool, err error) {
	// Note: a 5,000-pod job has 5,000 Services. Once they are in sync they are looked at again only
	// when the job's generation or the number wanted changes, or one is deleted. This was meant to
	// cut the 5,000-pod PyTorchJob's CPU; make bench-scale measured no change (19.2 and 19.9
	// CPU-seconds per 1,000 pods without and with it), so that cost is elsewhere.
	want := servicesSync{generation: job.GetGeneration(), desired: desired.Len()}
	uid := job.GetUID()
	r.mu.Lock()
	synced := r.memory(uid).servicesInSync
	r.mu.Unlock()
	if synced != nil && *synced == want {
		return false, nil
	}
	// Note: the cache's own Services (a 1,000-pod job has as many): they are only read.
	cached, err := r.services.of(uid)
	if err != nil {
		return false, err
	}
	owner := string(uid)
	services := apply.Observe(r.svcExp, owner, cached, r.now())
	live := make(map[string]*corev1.Service, len(services))
	for _, s := range services {
		if ownedBy(s, job) && s.Labels[kubeflowv1.LabelReplicaType] != "" {
			live[s.Name] = s
		}
	}
	var missing []client.Object
	waiting := false // Services not due yet: their pods' bindings wake the job (holdsPods)
	for i := range desired.Len() {
		name := desired.Name(i)
		switch {
		case live[name] != nil:
		case !desired.Due(i):
			waiting = true
		case len(missing) == maxPodsPerRound:
			more = true
		default:
			missing = append(missing, desired.Service(i))
		}
		delete(live, name)
	}
	var gone []deletion
	for _, s := range live {
		if s.DeletionTimestamp == nil {
			obj := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: s.Name}}
			gone = append(gone, deletion{obj: obj, uid: s.UID, exp: r.svcExp})
		}
	}
	r.deleteInBackground(ctx, job, gone)
	if len(missing) > 0 && !create {
		return true, nil
	}
	if len(missing) == 0 {
		if len(gone) == 0 && !waiting && !r.servicesPending(owner) {
			r.mu.Lock()
			r.memory(uid).servicesInSync = &want
			r.mu.Unlock()
		}
		return false, nil
	}
	ctx, release := r.untilDeleted(ctx, uid)
	defer release()
	_, err = r.applier.CreateAll(ctx, missing, r.createParallelism, apply.CreateHooks{
		Before:  func(o client.Object) { r.svcExp.ExpectCreation(owner, o) },
		Done:    func(res apply.CreateResult) { r.svcExp.Created(owner, res) },
		Proceed: r.jobStillHere(ctx, job),
		Exists:  r.ownObject(ctx, job, func() client.Object { return &corev1.Service{} }),
	})
	if errors.Is(err, errJobGone) {
		return false, nil
	}
	return more, err
}

// servicesSync is what a Kubeflow job's per-replica Services were last found in sync with.
type servicesSync struct {
	generation int64
	desired    int
}

// servicesPending: Services of owner created or deleted that the cache does not show yet.
func (r *jobReconciler) servicesPending(owner string) bool {
	c, d := r.svcExp.Pending(owner)
	return c > 0 || d > 0
}

// servicesChanged forgets that the Services of job uid were in sync (one was deleted).
func (r *jobReconciler) servicesChanged(uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if m := r.jobs[uid]; m != nil {
		m.servicesInSync = nil
	}
}

// reasonJobDeleted is the metrics' reason for the pods of a deleted job (releaseDeleted).
const reasonJobDeleted = "JobDeleted"

// releaseDeleted deletes the gang objects (PodGroup, Workload), the pods, then the Services, of a
// job that was deleted with its dependents (kubectl's default, or foreground), rather than leave
// them all to the garbage collector. It deletes each at the version the cache shows, so it never deletes what the garbage
// collector orphaned (kubectl delete --cascade=orphan removes the job's ownerReference from each
// dependent, a change, before the job goes): a dependent that changed since is left to the
// garbage collector, as is one whose deletion fails.
//
// Why: the garbage collector deletes dependents at the controller-manager's client rate (20 a
// second by default), so a 5,000-pod job's pods, and their GPUs, went over four minutes, and a
// job resubmitted under the same name found its pods' names taken meanwhile; its PodGroup, queued
// among them, could hold a scheduler queue's capacity as long. The deletions go
// through the write gate as clean-up, within its small share, behind every other job's writes.
func (r *jobReconciler) releaseDeleted(job client.Object) {
	uid := job.GetUID()
	dels := append(r.gangDeletions(job), r.kueue.workloadDeletions(job)...)
	pods, _ := r.pods.of(uid) // on an error, the garbage collector deletes them
	for _, p := range pods {
		if p.DeletionTimestamp == nil {
			obj := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name}}
			dels = append(dels, deletion{obj: obj, uid: p.UID, resourceVersion: p.ResourceVersion, reason: reasonJobDeleted, pod: true})
			r.deletions.deleting(uid, p.UID) // noted before it is sent, as every deletion of the operator's
		}
	}
	var services []*corev1.Service
	if r.services != nil {
		services, _ = r.services.of(uid) // on an error, the garbage collector deletes them
	}
	for _, s := range services {
		if s.DeletionTimestamp == nil {
			obj := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: s.Name}}
			dels = append(dels, deletion{obj: obj, uid: s.UID, resourceVersion: s.ResourceVersion})
		}
	}
	if len(dels) == 0 {
		return
	}
	ctx := apply.WithCleanUp(apply.WithOwner(context.Background(), string(uid)))
	r.releasing.Add(1)
	go func() {
		defer r.releasing.Done()
		deleted, errs := r.sendDeletions(ctx, job, dels, nil)
		r.metrics.podsDeleted.WithLabelValues(r.kind.gvk.Kind, reasonJobDeleted).Add(float64(deleted[reasonJobDeleted]))
		if err := errors.Join(errs...); err != nil {
			log.Log.Info("some of a deleted job's objects were left to the garbage collector",
				"job", client.ObjectKeyFromObject(job), "error", err.Error())
		}
	}()
}

// gangDeletions are the deletions of a deleted job's gang objects, as the cache shows them (only
// the kinds its spec chose, once their CRD is installed; none the job does not own).
func (r *jobReconciler) gangDeletions(job client.Object) []deletion {
	model := r.kind.model(job)
	kinds := render.GangKinds(&model, r.crds.installed())
	if len(kinds) == 0 {
		return nil
	}
	var dels []deletion
	for _, gvk := range slices.Backward(kinds) { // the PodGroup before the Workload it is made from
		live, owned, err := r.liveGangObject(context.Background(), job, gvk)
		if err != nil || !owned || live.GetDeletionTimestamp() != nil {
			continue // gone, someone else's, going, or unreadable: the garbage collector's
		}
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(gvk)
		obj.SetNamespace(job.GetNamespace())
		obj.SetName(job.GetName())
		dels = append(dels, deletion{obj: obj, uid: live.GetUID(), resourceVersion: live.GetResourceVersion()})
	}
	return dels
}
