package render

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestNameTakenBy(t *testing.T) {
	at := func(minute int) metav1.Time {
		return metav1.NewTime(time.Date(2026, 1, 1, 0, minute, 0, 0, time.UTC))
	}
	self := JobRef{Kind: "PyTorchTrainingJob", Namespace: "a", Name: "mnist", Created: at(10)}
	cases := map[string]struct {
		others []JobRef
		want   string
	}{
		"an older job of another kind with the name takes it": {
			others: []JobRef{{Kind: "PyTorchJob", Namespace: "a", Name: "mnist", Created: at(5)}},
			want:   "PyTorchJob mnist",
		},
		"a newer one does not: it waits for this one": {
			others: []JobRef{{Kind: "TFJob", Namespace: "a", Name: "mnist", Created: at(11)}},
		},
		"created in the same second, the kind first in order keeps the name": {
			others: []JobRef{{Kind: "PyTorchJob", Namespace: "a", Name: "mnist", Created: at(10)}, {Kind: "TensorFlowTrainingJob", Namespace: "a", Name: "mnist", Created: at(10)}},
			want:   "PyTorchJob mnist",
		},
		"the job itself, another namespace, another name: no conflict": {
			others: []JobRef{self, {Kind: "TFJob", Namespace: "b", Name: "mnist", Created: at(1)}, {Kind: "TFJob", Namespace: "a", Name: "other", Created: at(1)}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := NameTakenBy(self, tc.others); got != tc.want {
				t.Errorf("NameTakenBy = %q; want %q", got, tc.want)
			}
		})
	}
}
