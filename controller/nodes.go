package controller

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/trainyard/trainyard/render"
)

// Nodes are watched for one thing: a node that stops being Ready takes its pods with it once it
// has been so for --node-lost-after (render decides; SPEC §7). The cache keeps of a node only its
// name and its Ready condition, and pods are indexed by the node they are bound to, so that a
// node's change wakes exactly the jobs with pods there.

// podNodeIndex indexes cached pods by spec.nodeName.
const podNodeIndex = "trainyard.nodeName"

func indexPodsByNode(ctx context.Context, mgr ctrl.Manager) error {
	return mgr.GetFieldIndexer().IndexField(ctx, &corev1.Pod{}, podNodeIndex, func(o client.Object) []string {
		if p, ok := o.(*corev1.Pod); ok && p.Spec.NodeName != "" {
			return []string{p.Spec.NodeName}
		}
		return nil
	})
}

func trimNodeTransform(obj any) (any, error) {
	if n, ok := obj.(*corev1.Node); ok {
		trimNode(n)
	}
	return obj, nil
}

// trimNode keeps a node's identity and its Ready condition (status, reason, when it changed):
// all render reads. Note: the cached nodes are therefore partial.
func trimNode(n *corev1.Node) {
	var ready []corev1.NodeCondition
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			ready = append(ready, corev1.NodeCondition{Type: c.Type, Status: c.Status, Reason: c.Reason, LastTransitionTime: c.LastTransitionTime})
		}
	}
	n.ObjectMeta = metav1.ObjectMeta{Name: n.Name, UID: n.UID, ResourceVersion: n.ResourceVersion}
	n.Spec = corev1.NodeSpec{}
	n.Status = corev1.NodeStatus{Conditions: ready}
}

// nodeReadyChanged passes node events that change the Ready condition (or add or remove a node);
// heartbeats and everything else about a node wake nothing.
func nodeReadyChanged() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		a, ok1 := e.ObjectOld.(*corev1.Node)
		b, ok2 := e.ObjectNew.(*corev1.Node)
		if !ok1 || !ok2 {
			return true
		}
		return render.NodeStateOf(a) != render.NodeStateOf(b)
	}}
}

// jobsOnNode maps a node to the jobs of kind with a pod bound to it.
func jobsOnNode(c client.Reader, kind jobKind) handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
		var pods corev1.PodList
		if err := c.List(ctx, &pods, client.MatchingFields{podNodeIndex: o.GetName()}, client.UnsafeDisableDeepCopy); err != nil {
			log.FromContext(ctx).Error(err, "listing the pods of a node", "node", o.GetName())
			return nil
		}
		seen := map[types.NamespacedName]bool{}
		var out []reconcile.Request
		for i := range pods.Items {
			p := &pods.Items[i]
			ref := metav1.GetControllerOf(p)
			if ref == nil || ref.Kind != kind.gvk.Kind || ref.APIVersion != kind.gvk.GroupVersion().String() {
				continue
			}
			key := types.NamespacedName{Namespace: p.Namespace, Name: ref.Name}
			if !seen[key] {
				seen[key] = true
				out = append(out, reconcile.Request{NamespacedName: key})
			}
		}
		return out
	})
}

// nodeStates reads, from the cache, the Ready condition of each node the pods are bound to. A node
// the cache does not hold is left out (render never takes it for lost).
func (r *jobReconciler) nodeStates(ctx context.Context, model *render.Job, pods []*corev1.Pod) map[string]render.NodeState {
	out := map[string]render.NodeState{}
	// The nodes the templates name (spec.nodeName): one the cluster has not blocks the job.
	for _, t := range model.Replicas {
		if t.Template == nil || t.Template.Spec.NodeName == "" {
			continue
		}
		name := t.Template.Spec.NodeName
		var n corev1.Node
		switch err := r.client.Get(ctx, types.NamespacedName{Name: name}, &n); {
		case err == nil:
			out[name] = render.NodeStateOf(&n)
		case apierrors.IsNotFound(err):
			out[name] = render.NodeState{Missing: true}
		}
	}
	for _, p := range pods {
		name := p.Spec.NodeName
		if name == "" {
			continue
		}
		if _, done := out[name]; done {
			continue
		}
		var n corev1.Node
		if err := r.client.Get(ctx, types.NamespacedName{Name: name}, &n); err != nil {
			continue
		}
		out[name] = render.NodeStateOf(&n)
	}
	return out
}
