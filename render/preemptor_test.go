package render

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/trainyard/trainyard/apis/kueue"
)

// PreemptorOf names the preempting job only when Kueue says it preempted the Workload, names a
// Workload it can find, and that Workload is in the same namespace.
func TestPreemptorOfNamesOnlyAJobOfTheSameNamespace(t *testing.T) {
	evicted := func(reason, msg string) *kueue.Workload {
		return &kueue.Workload{ObjectMeta: metav1.ObjectMeta{Name: "w", Namespace: "team-a"}, Status: kueue.WorkloadStatus{Conditions: []metav1.Condition{
			{Type: kueue.WorkloadEvicted, Status: metav1.ConditionTrue, Reason: reason, Message: msg},
		}}}
	}
	const preempted = "Preempted to accommodate a workload (UID: u1, JobUID: j1) due to prioritization in the ClusterQueue; preemptor path: /q; preemptee path: /q"
	owned := func(ns string, controller bool) *kueue.Workload {
		return &kueue.Workload{ObjectMeta: metav1.ObjectMeta{Name: "pytorchjob-high-1", Namespace: ns, UID: "u1",
			OwnerReferences: []metav1.OwnerReference{{Kind: "PyTorchJob", Name: "high", Controller: &controller}}}}
	}
	cases := []struct {
		name  string
		w     *kueue.Workload
		found *kueue.Workload
		want  string
	}{
		{"same namespace", evicted(kueue.EvictedByPreemption, preempted), owned("team-a", true), "PyTorchJob high"},
		{"no controller", evicted(kueue.EvictedByPreemption, preempted), owned("team-a", false), "Workload pytorchjob-high-1"},
		{"another namespace", evicted(kueue.EvictedByPreemption, preempted), owned("team-b", true), ""},
		{"not found", evicted(kueue.EvictedByPreemption, preempted), nil, ""},
		{"Kueue did not know", evicted(kueue.EvictedByPreemption, "Preempted to accommodate a workload (UID: UNKNOWN, JobUID: UNKNOWN) due to UNKNOWN"), owned("team-a", true), ""},
		{"another eviction", evicted("PodsReadyTimeout", preempted), owned("team-a", true), ""},
		{"no Workload", nil, owned("team-a", true), ""},
	}
	for _, c := range cases {
		find := func(uid types.UID) metav1.Object {
			if c.found != nil && c.found.UID == uid {
				return c.found
			}
			return nil
		}
		if got := PreemptorOf(c.w, find); got != c.want {
			t.Errorf("%s: PreemptorOf = %q; want %q", c.name, got, c.want)
		}
	}
}
