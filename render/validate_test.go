package render

import (
	"fmt"
	"strings"
	"testing"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
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

// TestTemplateOfPod: a pod's name leads to the template it is made from, in the manifest's own
// spelling, so that the API server's refusal of the pod can name the job's field.
func TestTemplateOfPod(t *testing.T) {
	job := tensorflowJob(1, 0, 2) // types chief, ps (no replicas) and worker
	job.Name = "j"
	job.Replicas = append(job.Replicas, ReplicaType{Type: "worker-2", Replicas: 1})
	cases := map[string]string{
		"j-chief-0":     "spec.replicaSpecs[0].template",
		"j-ps-0":        "spec.replicaSpecs[1].template",
		"j-worker-1":    "spec.replicaSpecs[2].template",
		"j-worker-2-0":  "spec.replicaSpecs[3].template", // not worker's index "2-0"
		"j-worker-":     "",
		"j-worker-x":    "",
		"k-worker-0":    "",
		"j-evaluator-0": "",
	}
	for name, want := range cases {
		got := ""
		if p, ok := job.TemplateOfPod(name); ok {
			got = p.String()
		}
		if got != want {
			t.Errorf("TemplateOfPod(%q) = %q; want %q", name, got, want)
		}
	}
	job.Kubeflow = &Kubeflow{}
	if p, ok := job.TemplateOfPod("j-worker-0"); !ok || p.String() != "spec.tfReplicaSpecs.Worker.template" {
		t.Errorf("a TFJob's worker pod: TemplateOfPod = %v, %v; want spec.tfReplicaSpecs.Worker.template", p, ok)
	}
}

// TestMinAvailableAboveThePods: a Kubeflow job's minAvailable is refused only when a gang is made
// and it exceeds the most pods the job can have (an elastic job's workers at maxReplicas).
func TestMinAvailableAboveThePods(t *testing.T) {
	gang := &batch.SchedulePolicy{Kubernetes: &batch.KubernetesScheduler{}}
	cases := map[string]struct {
		min     int32
		gang    *batch.SchedulePolicy
		elastic *Elastic
		refused bool
	}{
		"all the pods":                          {min: 3, gang: gang},
		"one more than the pods":                {min: 4, gang: gang, refused: true},
		"without a gang it is not read":         {min: 99},
		"an elastic job's workers at their max": {min: 5, gang: gang, elastic: &Elastic{Min: 1, Max: 4, Expected: 2}},
		"beyond an elastic job's max":           {min: 6, gang: gang, elastic: &Elastic{Min: 1, Max: 4, Expected: 2}, refused: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			job := tensorflowJob(1, 0, 2) // chief 1, worker 2
			job.Kubeflow = &Kubeflow{MinAvailable: ptr(tc.min)}
			job.Scheduler, job.Elastic = tc.gang, tc.elastic
			err := Validate(&job)
			if tc.refused {
				if err == nil || !strings.Contains(err.Error(), "spec.runPolicy.schedulingPolicy.minAvailable: Invalid value") {
					t.Errorf("Validate = %v; want minAvailable refused", err)
				}
			} else if err != nil {
				t.Errorf("Validate = %v; want no error", err)
			}
		})
	}
}

// TestReplicaTypeMessage: render refuses a PyTorch replica type in admission's words.
func TestReplicaTypeMessage(t *testing.T) {
	for typ, want := range map[string]string{
		"Worker":    "replica types are written in lower case: worker, not Worker",
		"my_worker": "must be a DNS label (lower-case letters, digits and hyphens, such as master or worker): it is part of every pod name, <job>-<type>-<index>",
	} {
		if got := replicaTypeMessage(typ); got != want {
			t.Errorf("replicaTypeMessage(%q) = %q; want %q", typ, got, want)
		}
	}
}
