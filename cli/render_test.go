package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRenderCommand: `trainyard render` prints what render decides, and refuses input it cannot
// render with an error that names the field.
func TestRenderCommand(t *testing.T) {
	kubeflowJob := filepath.Join(t.TempDir(), "pytorchjob.yaml")
	if err := os.WriteFile(kubeflowJob, []byte("apiVersion: batch.tensorstack.dev/v1beta1\nkind: PyTorchJob\nmetadata: {name: kf}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The lost-node case's pods and nodes in two files, as `kubectl get pods` and `kubectl get
	// nodes` would write them.
	lost, err := os.ReadFile("../render/testdata/worker-on-lost-node-is-force-deleted/observed.yaml")
	if err != nil {
		t.Fatal(err)
	}
	at := strings.Index(string(lost), "---\napiVersion: v1\nkind: Node")
	if at < 0 {
		t.Fatal("the lost-node case's observed.yaml has no Node document")
	}
	lostPods, lostNodes := filepath.Join(t.TempDir(), "pods.yaml"), filepath.Join(t.TempDir(), "nodes.yaml")
	if err := os.WriteFile(lostPods, lost[:at], 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(lostNodes, lost[at+len("---\n"):], 0o644); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		args        []string
		wantOut     []string
		wantErrText string
	}{
		"an example renders its pods, Service and decisions": {
			args: []string{"-f", "../examples/tensorflow-ps.yaml", "--now", "2026-01-01T00:00:00Z"},
			wantOut: []string{
				"kind: Service", "name: tensorflow-ps-chief-0", "name: tensorflow-ps-worker-2", "TF_CONFIG",
				"uid: " + placeholderUID, "# decisions:", `#   startTime: "2026-01-01T00:00:00Z"`,
			},
		},
		"a gang job shows its PodGroup when nothing is observed": {
			args:    []string{"-f", "../examples/gang/pytorch-t9k-scheduler.yaml"},
			wantOut: []string{"kind: PodGroup", "apiVersion: scheduler.tensorstack.dev/v1beta1", "queue: default", "name: pytorch-gang-t9k-worker-2"},
		},
		"--observed without the PodGroup CRD blocks the gang job": {
			args:    []string{"-f", "../render/testdata/podgroup-crd-missing-blocks-pods/job.yaml", "--observed", "../render/testdata/podgroup-crd-missing-blocks-pods/observed.yaml"},
			wantOut: []string{"#     reason: PodGroupCRDMissing"},
		},
		"the observed pods shape the decisions": {
			args:    []string{"-f", "../render/testdata/exitcode-worker-exit-137-is-restarted/job.yaml", "--observed", "../render/testdata/exitcode-worker-exit-137-is-restarted/observed.yaml"},
			wantOut: []string{"#     reason: Restart", "#   - cause: exited with code 137", "#   backoffCount: 1", "#   gangRestart: true"},
		},
		"observed nodes decide which pods are lost, within --node-lost-after": {
			args: []string{"-f", "../render/testdata/worker-on-lost-node-is-force-deleted/job.yaml", "--observed", "../render/testdata/worker-on-lost-node-is-force-deleted/observed.yaml",
				"--now", "2026-01-01T00:00:00Z", "--node-lost-after", "5m"},
			wantOut: []string{"#   requeueAfter: 3m30s"},
		},
		"--observed twice: both files are observed, the pods and their nodes": {
			args: []string{"-f", "../render/testdata/worker-on-lost-node-is-force-deleted/job.yaml", "--observed", lostPods, "--observed", lostNodes,
				"--now", "2026-01-01T00:00:00Z", "--node-lost-after", "5m"},
			wantOut: []string{"#   requeueAfter: 3m30s"},
		},
		"a name too long for the pod hostnames is refused naming metadata.name": {
			args:        []string{"-f", "../render/testdata/rejects-name-too-long-for-pod-hostname/job.yaml"},
			wantErrText: "metadata.name: Invalid value",
		},
		"an unknown kind is refused naming kind": {
			args:        []string{"-f", kubeflowJob},
			wantErrText: `kind: unsupported value "PyTorchJob"`,
		},
		"several documents are refused": {
			args:        []string{"-f", "../kustomize/manager/manager.yaml"},
			wantErrText: "want exactly one job manifest, found 2 YAML documents",
		},
		"a bad --now is refused naming the flag": {
			args:        []string{"-f", "../examples/tensorflow-ps.yaml", "--now", "yesterday"},
			wantErrText: "--now",
		},
		"-f is required": {
			args:        nil,
			wantErrText: "-f is required",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := runRender(tc.args, &stdout, &stderr)
			if tc.wantErrText != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErrText) {
					t.Fatalf("runRender error = %v, want one containing %q", err, tc.wantErrText)
				}
				if stdout.Len() != 0 {
					t.Errorf("a refused render printed objects:\n%s", stdout.String())
				}
				return
			}
			if err != nil {
				t.Fatalf("runRender: %v", err)
			}
			for _, want := range tc.wantOut {
				if !strings.Contains(stdout.String(), want) {
					t.Errorf("the output lacks %q", want)
				}
			}
		})
	}
}
