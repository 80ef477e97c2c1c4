package controller

import (
	"cmp"
	"context"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/trainyard/trainyard/render"
)

// Jobs of different kinds with one name in a namespace would share the names of what they create;
// render decides which one waits (render/names.go). The controller gives it the other kinds' jobs
// of that name, read from the cache, and wakes a waiting job when the job that held its name is
// deleted.

// kindRegistry lists the job kinds served, each with what wakes one of its jobs by name.
type kindRegistry struct {
	mu    sync.Mutex
	kinds []servedKind
}

type servedKind struct {
	kind jobKind
	wake func(types.NamespacedName)
}

func (k *kindRegistry) add(kind jobKind, wake func(types.NamespacedName)) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.kinds = append(k.kinds, servedKind{kind, wake})
}

// others are the served kinds but kind.
func (k *kindRegistry) others(kind jobKind) []servedKind {
	k.mu.Lock()
	defer k.mu.Unlock()
	var out []servedKind
	for _, s := range k.kinds {
		if s.kind.gvk != kind.gvk {
			out = append(out, s)
		}
	}
	return out
}

// wakeOthers wakes the job named key of every other kind, if there is one: kind's job of that
// name is gone, so one that waited for the name may take it.
func (k *kindRegistry) wakeOthers(kind jobKind, key types.NamespacedName) {
	for _, s := range k.others(kind) {
		s.wake(key)
	}
}

// wakeByName is a kind's wake function: a reconcile of its job key through the controller's retry
// channel, dropped if the channel is full (the waiting job also looks again on its own,
// render's requeue).
func wakeByName(kind jobKind, retry chan<- event.GenericEvent) func(types.NamespacedName) {
	return func(key types.NamespacedName) {
		job := kind.newJob()
		job.SetNamespace(key.Namespace)
		job.SetName(key.Name)
		select {
		case retry <- event.GenericEvent{Object: job}:
		default:
		}
	}
}

// nameTakenBy is render's Input.NameTakenBy for job: the same-named jobs of the other served kinds
// in its namespace, from the cache. Note: the lists are not copied (UnsafeDisableDeepCopy), and only
// names and creation times are read.
func (r *jobReconciler) nameTakenBy(ctx context.Context, job client.Object) (string, error) {
	if r.kinds == nil {
		return "", nil
	}
	var refs []render.JobRef
	for _, s := range r.kinds.others(r.kind) {
		list := s.kind.newList()
		if err := r.client.List(ctx, list, client.InNamespace(job.GetNamespace()), client.UnsafeDisableDeepCopy); err != nil {
			return "", err
		}
		for _, o := range s.kind.items(list) {
			if o.GetName() == job.GetName() {
				refs = append(refs, render.JobRefOf(s.kind.gvk.Kind, o))
			}
		}
	}
	return render.NameTakenBy(render.JobRefOf(r.kind.gvk.Kind, job), refs), nil
}

// nameTakenError: an object the job would create exists under another owner. tensorBoard: the
// object is the job's TensorBoard, which the job runs without (status.tensorboard says so).
type nameTakenError struct {
	msg         string
	tensorBoard bool
}

func (e *nameTakenError) Error() string { return e.msg }

// nameHolder asks the server who holds the name of obj, an object of job (newObj makes one of its
// kind): nil when job does or nothing does (gone), else a nameTakenError naming the holder: one
// left by a job deleted a moment ago, one of another job whose names collide with this one's (job
// a's type b-worker and job a-b's type worker both make a-b-worker-0), or no job's. It reads past
// the cache, which holds only the operator's objects: the question is rare, and the answer must
// be the server's.
func (r *jobReconciler) nameHolder(ctx context.Context, job, obj client.Object, newObj func() client.Object) (gone bool, err error) {
	live := newObj()
	kind := kindOf(live)
	if err := r.reader.Get(ctx, client.ObjectKeyFromObject(obj), live); err != nil {
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	}
	if p, ok := live.(*corev1.Pod); ok && r.lostLeftover(ctx, p, job) {
		if err := r.applier.Delete(ctx, p, p.UID, true); err != nil {
			return false, err
		}
		log.FromContext(ctx).Info("force-deleted a deleted job's pod that held this job's pod name on a lost node",
			"pod", p.Name, "node", p.Spec.NodeName, "owner", metav1.GetControllerOf(p).Name)
		return true, nil
	}
	return false, takenError(kind, live, job)
}

// lostLeftover reports whether p, a pod holding one of job's pod names, is one the operator made
// for another job of its kinds (a job deleted, or its predecessor of the same name), already being
// deleted, on a node lost by --node-lost-after's rule: its kubelet will never confirm the delete,
// so the pod would keep the name until the node came back. The operator force-deletes its own
// jobs' pods on a lost node (render's observeNodes); the pods of a job deleted meanwhile, which no
// job owns any more, are force-deleted when a job needs their names, as the node's out-of-service
// taint would have PodGC do. A pod not being deleted, or of no job of the operator's, is left alone.
func (r *jobReconciler) lostLeftover(ctx context.Context, p *corev1.Pod, job client.Object) bool {
	ref := metav1.GetControllerOf(p)
	if p.DeletionTimestamp == nil || p.Spec.NodeName == "" || ref == nil || ref.UID == job.GetUID() || !operatorMade(p) {
		return false
	}
	var n corev1.Node
	if err := r.client.Get(ctx, types.NamespacedName{Name: p.Spec.NodeName}, &n); err != nil {
		return false // a node gone is PodGC's (it deletes the pods of deleted nodes)
	}
	lost, _ := render.NodeStateOf(&n).Lost(r.now(), cmp.Or(r.nodeLostAfter, render.DefaultNodeLostAfter))
	return lost
}

// operatorMade: p's controller is a job of one of the kinds the operator serves.
func operatorMade(p *corev1.Pod) bool {
	for _, k := range []jobKind{pyTorchKind, tensorFlowKind, pyTorchJobKind, tfJobKind} {
		if k.controls(p) != nil {
			return true
		}
	}
	return false
}

// takenError is the nameTakenError of live, an object of kind named like one of job's, or nil
// when job controls it.
func takenError(kind string, live, job client.Object) error {
	ref := metav1.GetControllerOf(live)
	switch {
	case ref != nil && ref.UID == job.GetUID():
		return nil
	case ref != nil:
		return &nameTakenError{msg: fmt.Sprintf("%s %s exists already and belongs to %s %s, not to this job: a job names its pods <job>-<type>-<index>, its Services <job> (Kubeflow's also like the pods) and its TensorBoard <job>-tensorboard, and that one's names meet this job's; rename this job or that one (or wait, if that %s is going, until it is gone)%s", kind, live.GetName(), ref.Kind, ref.Name, kind, goingNote(live))}
	default:
		return &nameTakenError{msg: fmt.Sprintf("%s %s exists already and belongs to no job: a job names its pods <job>-<type>-<index>, its Services <job> (Kubeflow's also like the pods) and its TensorBoard <job>-tensorboard; delete that %s or rename this job%s", kind, live.GetName(), kind, goingNote(live))}
	}
}

// goingNote says, for a holder being deleted, since when and, for a pod, on which node: a pod
// goes only once its node's kubelet confirms it, and one on a node that is not Ready (a deleted
// job's pod, which no job of the operator's owns any more, so nothing forces it) keeps its name
// until that node is back or gone. Empty for a holder not being deleted.
func goingNote(live client.Object) string {
	dt := live.GetDeletionTimestamp()
	if dt == nil {
		return ""
	}
	note := fmt.Sprintf("; it is being deleted since %s", dt.UTC().Format(time.RFC3339))
	if p, ok := live.(*corev1.Pod); ok && p.Spec.NodeName != "" {
		note += fmt.Sprintf(" and goes once node %s confirms it, which a node that is not Ready never does: ", p.Spec.NodeName)
		if operatorMade(p) {
			note += "if the node stays not Ready for --node-lost-after, the operator force-deletes the pod"
		} else {
			note += "then it holds the name until the node is Ready again or deleted (or the pod is deleted with --grace-period=0 --force)"
		}
	}
	return note
}

// ownObject is CreateAll's Exists for job's objects of newObj's kind: nil for the job's own (a
// retry of an earlier creation, or a cache behind), else why it cannot be created.
func (r *jobReconciler) ownObject(ctx context.Context, job client.Object, newObj func() client.Object) func(client.Object) error {
	return func(obj client.Object) error {
		gone, err := r.nameHolder(ctx, job, obj, newObj)
		if err != nil || !gone {
			return err
		}
		// Deleted meanwhile (another owner's, going): the name is free, so it is created now.
		switch err := r.client.Create(ctx, obj, client.FieldOwner(FieldManager)); {
		case err == nil:
			return nil
		case apierrors.IsAlreadyExists(err):
			if gone, err = r.nameHolder(ctx, job, obj, newObj); gone {
				return fmt.Errorf("%s %s exists and is gone by turns: created again next round", kindOf(newObj()), obj.GetName())
			}
			return err
		default:
			return err
		}
	}
}

// kindOf is the kind of a typed core object, for messages.
func kindOf(obj client.Object) string {
	switch obj.(type) {
	case *corev1.Pod:
		return "pod"
	case *corev1.Service:
		return "Service"
	case *appsv1.Deployment:
		return "Deployment"
	}
	return fmt.Sprintf("%T", obj)
}
