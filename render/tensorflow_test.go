package render

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
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
