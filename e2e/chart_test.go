//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
	kubeflowv1 "github.com/trainyard/trainyard/apis/kubeflow/v1"
)

// The chart's release in e2e: its own name and namespace, so its cluster-wide objects
// (chart-trainyard-manager, ...) stand beside the suite's install of kustomize/ (trainyard-manager).
const (
	chartRelease   = "chart-trainyard"
	chartNamespace = "chart-trainyard"
)

// TestChartInstall: helm installs charts/trainyard (kubeflow kinds on) into a namespace that
// enforces the restricted Pod Security profile; the operator, started with the args of the
// chart's Deployment under the chart's ServiceAccount, runs a PyTorchTrainingJob and a Kubeflow
// PyTorchJob to Succeeded; helm uninstall leaves the CRDs.
//
// Note: the local cluster's kubelet is KWOK, which runs no container: the Deployment's pod is a
// simulation. The operator runs out of cluster as that pod would (its args, its ServiceAccount's
// token, --leader-election-namespace for the lease an in-cluster pod finds by itself), as the
// suite's shared operator runs the kustomize install's. It holds operatorMu and stops the shared
// operator meanwhile: two operators would both reconcile every job.
func TestChartInstall(t *testing.T) {
	f := features.New("the Helm chart installed with helm runs a PyTorchTrainingJob and a Kubeflow PyTorchJob to Succeeded under its ServiceAccount, and helm uninstall keeps the CRDs").
		WithLabel("area", "install").
		Assess("helm install, the operator as the chart's Deployment runs it, two jobs, helm uninstall", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			helmBin, err := pinnedHelm()
			if err != nil {
				t.Fatal(err)
			}
			operatorMu.Lock()
			defer operatorMu.Unlock()
			defer standAsideSharedOperator(t, cfg)()

			if out, err := kubectl(ctx, cfg, fmt.Sprintf(`apiVersion: v1
kind: Namespace
metadata:
  name: %s
  labels: {pod-security.kubernetes.io/enforce: restricted}
`, chartNamespace), "apply", "-f", "-"); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			t.Cleanup(func() {
				_, _ = kubectl(context.Background(), cfg, "", "delete", "namespace", chartNamespace, "--wait=false", "--ignore-not-found")
			})
			helm := func(args ...string) (string, error) {
				cmd := exec.CommandContext(ctx, helmBin, append([]string{"--kubeconfig", cfg.KubeconfigFile()}, args...)...)
				dir := filepath.Join(repoRoot, ".devcluster", "e2e", "helm")
				cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+dir, "HELM_CONFIG_HOME="+filepath.Join(dir, "config"), "HELM_DATA_HOME="+filepath.Join(dir, "data"))
				out, err := cmd.CombinedOutput()
				return string(out), err
			}
			// --take-ownership: the suite installed the CRDs (kubectl apply -k kustomize/crd), as
			// make run's cluster has them; the release adopts them.
			start := time.Now()
			out, err := helm("install", chartRelease, filepath.Join(repoRoot, "charts", "trainyard"), "--namespace", chartNamespace,
				"--set", "kubeflow.enabled=true", "--take-ownership", "--wait", "--timeout", "2m")
			if err != nil {
				t.Fatalf("helm install: %v\n%s", err, out)
			}
			t.Logf("helm install --wait: %s", time.Since(start).Round(10*time.Millisecond))
			uninstalled := false
			defer func() {
				if !uninstalled {
					_, _ = helm("uninstall", chartRelease, "--namespace", chartNamespace)
				}
			}()

			// The operator as the Deployment runs it: its args (the bind addresses aside, which the
			// suite picks on loopback), under the chart's ServiceAccount.
			out, err = kubectl(ctx, cfg, "", "get", "deployment", chartRelease, "-n", chartNamespace, "-o", "json")
			if err != nil {
				t.Fatal(err)
			}
			var dep struct {
				Spec struct {
					Template struct {
						Spec struct {
							ServiceAccountName string `json:"serviceAccountName"`
							Containers         []struct {
								Args []string `json:"args"`
							} `json:"containers"`
						} `json:"spec"`
					} `json:"template"`
				} `json:"spec"`
			}
			if err := json.Unmarshal([]byte(out), &dep); err != nil {
				t.Fatal(err)
			}
			var args []string
			for _, a := range dep.Spec.Template.Spec.Containers[0].Args {
				if !strings.HasPrefix(a, "--metrics-bind-address") && !strings.HasPrefix(a, "--health-probe-bind-address") {
					args = append(args, a)
				}
			}
			args = append(args, "--leader-election-namespace="+chartNamespace)
			kc := filepath.Join(repoRoot, ".devcluster", "e2e", "chart-operator.kubeconfig")
			if err := serviceAccountKubeconfig(ctx, cfg, chartNamespace, dep.Spec.Template.Spec.ServiceAccountName, kc); err != nil {
				t.Fatal(err)
			}
			t.Logf("the operator runs as %s with %v", dep.Spec.Template.Spec.ServiceAccountName, args)
			p, err := startOperatorAs(kc, "operator-chart.log", args...)
			if err != nil {
				t.Fatal(err)
			}
			stopped := false // stop consumes the exit: a second stop would wait forever
			defer func() {
				if !stopped {
					_ = p.stop()
				}
			}()
			eventually(t, 60*time.Second, "the chart's operator leads", func() (bool, string) {
				v, err := metricValue(p.Metrics, "leader_election_master_status")
				return err == nil && v == 1, fmt.Sprint(v, err)
			})

			c, ns := namespaced(ctx, t, cfg, "chart")
			created := time.Now()
			create(ctx, t, c, ns, pyTorchJob("chart-pt").Master(sim("3s", "0")).Workers(2, sim("", "")).Obj())
			applyYAML(ctx, t, ns, `apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: chart-kf}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      restartPolicy: OnFailure`+kfPod("pytorch", fmt.Sprintf(simExits0After, "3s"))+`
    Worker:
      replicas: 1
      restartPolicy: OnFailure`+kfPod("pytorch", simRunsForever))
			waitPhase(ctx, t, c, ns, "chart-pt", batch.JobSucceeded)
			waitKubeflow(ctx, t, c, ns, "chart-kf", kubeflowv1.JobSucceeded)
			t.Logf("both jobs Succeeded %s after they were created (masters exit 0 after 3 s)", time.Since(created).Round(10*time.Millisecond))
			stopped = true
			if err := p.stop(); err != nil {
				t.Errorf("the chart's operator on SIGTERM: %v", err)
			}

			start = time.Now()
			out, err = helm("uninstall", chartRelease, "--namespace", chartNamespace, "--wait", "--timeout", "2m")
			if err != nil {
				t.Fatalf("helm uninstall: %v\n%s", err, out)
			}
			uninstalled = true
			t.Logf("helm uninstall --wait: %s", time.Since(start).Round(10*time.Millisecond))
			for _, crd := range []string{"pytorchtrainingjobs.batch.tensorstack.dev", "tensorflowtrainingjobs.batch.tensorstack.dev", "pytorchjobs.kubeflow.org", "tfjobs.kubeflow.org"} {
				if out, err := kubectl(ctx, cfg, "", "get", "crd", crd); err != nil {
					t.Errorf("helm uninstall took the CRD %s (crds.keep): %v\n%s", crd, err, out)
				}
			}
			for _, obj := range []string{"clusterrole/" + chartRelease + "-manager", "clusterrole/" + chartRelease + "-manager-kubeflow"} {
				if out, err := kubectl(ctx, cfg, "", "get", obj, "--ignore-not-found", "-o", "name"); err != nil || out != "" {
					t.Errorf("%s is left after helm uninstall: %v %s", obj, err, out)
				}
			}
			return ctx
		}).
		Feature()
	testenv.Test(t, f)
}

// pinnedHelm finds the helm of hack/versions.sh (make tools builds it), or $HELM.
func pinnedHelm() (string, error) {
	if h := os.Getenv("HELM"); h != "" {
		return h, nil
	}
	out, err := exec.Command("bash", "-c", ". "+filepath.Join(repoRoot, "hack", "versions.sh")+` && echo "$HELM"`).Output()
	if err != nil {
		return "", fmt.Errorf("reading hack/versions.sh: %w", err)
	}
	path := strings.TrimSpace(string(out))
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("the pinned helm is not built (run make tools or hack/tools.sh helm): %w", err)
	}
	return path, nil
}
