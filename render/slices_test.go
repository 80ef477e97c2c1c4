package render

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/trainyard/trainyard/apis/kueue"
)

// TestSliceWorkloads: which of a sliced job's Workloads it runs or waits under, which asks for a
// new size in place of it, and which are left over, in each state of Kueue's slice protocol.
func TestSliceWorkloads(t *testing.T) {
	at := func(s int) metav1.Time { return metav1.NewTime(time.Date(2026, 1, 1, 0, 0, s, 0, time.UTC)) }
	wl := func(name string, created int, replaces string, conds ...string) *kueue.Workload {
		w := &kueue.Workload{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", CreationTimestamp: at(created)}}
		if replaces != "" {
			w.Annotations = map[string]string{kueue.AnnotationWorkloadSliceReplacementFor: "ns/" + replaces}
		}
		for i := 0; i < len(conds); i += 2 {
			w.Status.Conditions = append(w.Status.Conditions, metav1.Condition{Type: conds[i], Status: metav1.ConditionTrue, Reason: conds[i+1]})
		}
		return w
	}
	name := func(w *kueue.Workload) string {
		if w == nil {
			return ""
		}
		return w.Name
	}
	admittedW := []string{kueue.WorkloadAdmitted, "Admitted"}
	replaced := []string{kueue.WorkloadAdmitted, "Admitted", kueue.WorkloadFinished, kueue.FinishedWorkloadSliceReplaced}
	for _, c := range []struct {
		name           string
		ws             []*kueue.Workload
		w, replacement string
		others         []string
	}{
		{"none", nil, "", "", nil},
		{"the first, waiting", []*kueue.Workload{wl("a", 0, "")}, "a", "", nil},
		{"admitted, a slice waits", []*kueue.Workload{wl("b", 5, "a"), wl("a", 0, "", admittedW...)}, "a", "b", nil},
		{"Kueue finished the replaced one before admitting the slice", []*kueue.Workload{wl("a", 0, "", replaced...), wl("b", 5, "a")}, "b", "", []string{"a"}},
		{"the slice admitted", []*kueue.Workload{wl("a", 0, "", replaced...), wl("b", 5, "a", admittedW...)}, "b", "", []string{"a"}},
		{"a Kueue without slices admitted the slice and left the other", []*kueue.Workload{wl("a", 0, "", admittedW...), wl("b", 5, "a", admittedW...)}, "b", "", []string{"a"}},
		{"two unlinked, the admitted one runs", []*kueue.Workload{wl("a", 0, ""), wl("b", 5, "", admittedW...)}, "b", "", []string{"a"}},
		{"two unlinked, none admitted: the oldest", []*kueue.Workload{wl("b", 5, ""), wl("a", 0, "")}, "a", "", []string{"b"}},
		{"the job finished: its last Workload", []*kueue.Workload{wl("a", 0, "", replaced...), wl("b", 5, "a", kueue.WorkloadFinished, kueue.FinishedSucceeded)}, "b", "", []string{"a"}},
		{"only replaced ones left: none to run under", []*kueue.Workload{wl("a", 0, "", replaced...)}, "", "", []string{"a"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			w, rep, others := SliceWorkloads(c.ws)
			var got []string
			for _, o := range others {
				got = append(got, o.Name)
			}
			if name(w) != c.w || name(rep) != c.replacement || len(got) != len(c.others) || (len(got) > 0 && got[0] != c.others[0]) {
				t.Errorf("SliceWorkloads = %q, %q, %v; want %q, %q, %v", name(w), name(rep), got, c.w, c.replacement, c.others)
			}
		})
	}
}
