package render

import (
	"fmt"
	"strings"
	"testing"
)

// TestTemplateRefusalIsBoundedAndStable: a template of many bad labels gives a short refusal
// (it becomes the job's condition and event), and the same one every time, though labels are
// a map.
func TestTemplateRefusalIsBoundedAndStable(t *testing.T) {
	job := tensorflowJob(1, 0, 2)
	labels := map[string]string{}
	for i := range 1000 {
		labels[fmt.Sprintf("bad key %03d", i)] = strings.Repeat("v", 1000)
	}
	job.Replicas[1].Template.Labels = labels

	first := Validate(&job)
	if first == nil {
		t.Fatal("Validate accepted a template of 1,000 bad labels")
	}
	msg := first.Error()
	for _, want := range []string{`spec.replicaSpecs[1].template.metadata.labels: Invalid value: "bad key 000"`,
		"spec.replicaSpecs[1].template: Invalid value: 1996 more errors of this template are not listed"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the refusal does not say %q; it says:\n%s", want, msg)
		}
	}
	if len(msg) > 4096 {
		t.Errorf("the refusal is %d bytes; want at most 4 KiB", len(msg))
	}
	for range 20 {
		if again := Validate(&job).Error(); again != msg {
			t.Fatalf("Validate changed its answer:\n%s\nthen\n%s", msg, again)
		}
	}
}
