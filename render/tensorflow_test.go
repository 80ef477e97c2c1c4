package render

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

// TestTFConfigIsValidJSON: the concatenated TF_CONFIG parses as the structure TensorFlow reads.
func TestTFConfigIsValidJSON(t *testing.T) {
	j := tensorflowJob(1, 2, 3)
	env := newTFEnv(&j)
	var got struct {
		Cluster map[string][]string `json:"cluster"`
		Task    struct {
			Type  string
			Index int
		}
		Environment string `json:"environment"`
	}
	if err := json.Unmarshal([]byte(env.vars(&j.Replicas[2], 2)[0].Value), &got); err != nil {
		t.Fatalf("TF_CONFIG is not JSON: %v", err)
	}
	want := map[string][]string{
		"chief":  {"tf-chief-0.tf:2222"},
		"ps":     {"tf-ps-0.tf:2222", "tf-ps-1.tf:2222"},
		"worker": {"tf-worker-0.tf:2222", "tf-worker-1.tf:2222", "tf-worker-2.tf:2222"},
	}
	if diff := cmp.Diff(want, got.Cluster); diff != "" {
		t.Errorf("cluster (-want +got):\n%s", diff)
	}
	if got.Task.Type != "worker" || got.Task.Index != 2 || got.Environment != "cloud" {
		t.Errorf("task = %+v, environment = %q; want worker 2 in cloud", got.Task, got.Environment)
	}
}

// TestSparseTFConfigOfAWorkerWithoutPS: under enableDynamicWorker a Worker of a job with no PS
// gets "ps":[] (Kubeflow writes null, which TensorFlow's ClusterSpec cannot take), and itself
// alone among the Workers, keyed by its index.
func TestSparseTFConfigOfAWorkerWithoutPS(t *testing.T) {
	tmpl := &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "tensorflow"}}}}
	j := Job{Name: "dyn", Namespace: "ns", Framework: TensorFlow, Kubeflow: &Kubeflow{DynamicWorker: true}, Replicas: []ReplicaType{
		{Type: "chief", Replicas: 1, Template: tmpl}, {Type: "worker", Replicas: 3, Template: tmpl},
	}}
	got := newKubeflowTFEnv(&j).vars(&j.Replicas[1], 2)[0].Value
	want := `{"cluster":{"worker":{"2":"dyn-worker-2.ns.svc:2222"},"ps":[]},"task":{"type":"worker","index":2}}`
	if got != want {
		t.Errorf("TF_CONFIG = %s; want %s", got, want)
	}
}
