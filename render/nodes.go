package render

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DefaultNodeLostAfter is how long a node may be NotReady or unreachable before render takes its
// pods for lost, when Input.NodeLostAfter is zero (the operator's --node-lost-after).
//
// Note: Kubernetes evicts the pods of such a node only after their tolerations of the
// not-ready and unreachable taints run out (300 s by default), and even then the eviction is a
// graceful delete that no kubelet ever confirms: the pod stays Terminating, holding its name,
// until someone force-deletes it. A minute is long enough for a kubelet that restarts or a network
// that blips to come back, short enough that a gang is not held for five.
const DefaultNodeLostAfter = 60 * time.Second

// NodeState is what render reads of a node: its Ready condition.
type NodeState struct {
	// Ready is the status of the node's Ready condition: False (NotReady), Unknown (the node
	// controller has not heard from the kubelet: unreachable) or True.
	Ready corev1.ConditionStatus
	// Since is the condition's lastTransitionTime: when the node stopped (or started) being Ready.
	Since time.Time
	// Missing: the cluster has no node of this name (a template's spec.nodeName).
	Missing bool
}

// NodeStateOf reads a node's Ready condition; a node without one is taken for Ready (its
// kubelet has not reported yet, and no pod of a job can be running there).
func NodeStateOf(n *corev1.Node) NodeState {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return NodeState{Ready: c.Status, Since: c.LastTransitionTime.Time}
		}
	}
	return NodeState{Ready: corev1.ConditionTrue}
}

func (r *renderer) nodeLostAfter() time.Duration {
	if r.in.NodeLostAfter > 0 {
		return r.in.NodeLostAfter
	}
	return DefaultNodeLostAfter
}

// nodeLost reports whether node has been NotReady or unreachable for the bound or longer; when it
// is not Ready but within the bound, left is the time until it is lost. A node render has no
// observation of is never lost (the node controller's PodGC deals with pods of deleted nodes).
func (r *renderer) nodeLost(node string) (lost bool, left time.Duration) {
	n, ok := r.in.Nodes[node]
	if node == "" || !ok {
		return false, 0
	}
	return n.Lost(r.in.Now, r.nodeLostAfter())
}

// Lost reports whether a node in this state at now has been NotReady or unreachable for after or
// longer; when it is not Ready but within the bound, left is the time until it is lost.
func (n NodeState) Lost(now time.Time, after time.Duration) (lost bool, left time.Duration) {
	if n.Ready == corev1.ConditionTrue || n.Ready == "" || n.Since.IsZero() {
		return false, 0
	}
	// Note: counted from the exact input time, like the deadline, so the job is looked at again
	// when the bound falls due.
	left = n.Since.Add(after).Sub(now)
	return left <= 0, max(left, 0)
}

// observeNodes marks the pods whose node is lost: their replica ended, as a disruption, and a
// graceful delete would never finish (no kubelet confirms it), so they are force-deleted. Pods on
// nodes not Ready within the bound are left alone and the job is looked at again when it falls
// due; pods on healthy nodes are never force-deleted.
func (r *renderer) observeNodes() {
	for _, p := range r.allObserved() {
		lost, left := r.nodeLost(p.pod.Spec.NodeName)
		switch {
		case lost:
			p.nodeLost = true
			if !p.terminated {
				p.terminated, p.disrupted = true, true
				p.cause = causeNodeLost
			}
		case left > 0:
			r.requeueAfter(left)
			// A pod already being deleted there (the taint manager's eviction) waits for the bound:
			// no kubelet confirms the delete, and nothing replaces it before.
			if p.pod.DeletionTimestamp == nil {
				continue
			}
			at := metav1.NewTime(r.in.Now.Add(left).UTC())
			if cur := r.out.Decisions.NodeLostAt; cur == nil || at.Before(cur) {
				r.out.Decisions.NodeLostAt = &at
			}
		}
	}
}

// requeueAfter asks to be run again within d, keeping the earliest time asked for.
func (r *renderer) requeueAfter(d time.Duration) {
	if d <= 0 {
		return
	}
	if cur := r.out.Decisions.RequeueAfter; cur == nil || d < cur.Duration {
		r.out.Decisions.RequeueAfter = &metav1.Duration{Duration: d}
	}
}
