//go:build e2e

package e2e

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"
)

// TestAPI: the CRDs installed in a real cluster accept the examples, show the printer columns,
// refuse bad input naming the field, and the default kustomize overlay is accepted.
func TestAPI(t *testing.T) {
	examples := filepath.Join(repoRoot, "examples")
	f := features.New("batch.tensorstack.dev APIs").
		WithLabel("area", "api").
		Assess("the examples are accepted", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			out, err := kubectl(ctx, cfg, "", "apply", "-n", "default", "-f", examples)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("kubectl apply -f examples/:\n%s", out)
			return ctx
		}).
		Assess("kubectl get shows phase, running, desired, the reason a job waits and age", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			for _, resource := range []string{"pytorchtrainingjobs", "tensorflowtrainingjobs", "ptj", "tfj"} {
				out, err := kubectl(ctx, cfg, "", "get", "-n", "default", resource)
				if err != nil {
					t.Fatal(err)
				}
				header := strings.Fields(strings.SplitN(out, "\n", 2)[0])
				if want := []string{"NAME", "PHASE", "RUNNING", "DESIRED", "REASON", "AGE"}; strings.Join(header, " ") != strings.Join(want, " ") {
					t.Errorf("kubectl get %s header = %v, want %v", resource, header, want)
				}
				if strings.Count(strings.TrimSpace(out), "\n") < 1 {
					t.Errorf("kubectl get %s lists no job:\n%s", resource, out)
				}
			}
			return ctx
		}).
		Assess("a job with two master replicas is refused naming the field", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			out, err := kubectl(ctx, cfg, twoMasters, "apply", "-n", "default", "-f", "-")
			if err == nil {
				t.Fatalf("kubectl apply accepted a job with two masters:\n%s", out)
			}
			for _, want := range []string{"spec.replicaSpecs[0]", "master replica type has at most 1 replica"} {
				if !strings.Contains(out, want) {
					t.Errorf("the refusal does not say %q:\n%s", want, out)
				}
			}
			return ctx
		}).
		Assess("the default kustomize overlay is accepted", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			// A server dry run cannot see the namespace the overlay itself creates; the suite's
			// setup made it (the operator runs under the install's ServiceAccount there).
			out, err := kubectl(ctx, cfg, "", "apply", "--dry-run=server", "-k", filepath.Join(repoRoot, "kustomize", "default"))
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"customresourcedefinition.apiextensions.k8s.io/pytorchtrainingjobs.batch.tensorstack.dev", "deployment.apps/trainyard", "clusterrole.rbac.authorization.k8s.io/trainyard-manager"} {
				if !strings.Contains(out, want) {
					t.Errorf("kubectl apply -k kustomize/default did not apply %s:\n%s", want, out)
				}
			}
			return ctx
		}).
		Teardown(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			if _, err := kubectl(ctx, cfg, "", "delete", "-n", "default", "--ignore-not-found", "-f", examples); err != nil {
				t.Error(err)
			}
			return ctx
		}).
		Feature()
	testenv.Test(t, f)
}

const twoMasters = `
apiVersion: batch.tensorstack.dev/v1beta1
kind: PyTorchTrainingJob
metadata:
  name: two-masters
spec:
  replicaSpecs:
  - type: master
    replicas: 2
    template:
      spec:
        containers:
        - name: pytorch
          image: example/train:1
`
