//go:build e2e

// Package e2e runs Trainyard's end-to-end tests with sigs.k8s.io/e2e-framework against a real
// cluster. E2E_PROVIDER chooses it:
//
//	local (default)  the project's loopback control plane with KWOK nodes (hack/cluster.sh),
//	                 started for the run and stopped after it
//	kind             a kind cluster (needs Docker; for laptops)
//	existing         the cluster of $KUBECONFIG, left as it is
//
// Features carry labels (area=api, area=render, area=operator, area=gang, area=kueue) so a subset can be chosen with
// e2e-framework's --labels flag: go test -tags e2e ./e2e/... -args --labels=area=api
package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/e2e-framework/pkg/env"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/envfuncs"
	"sigs.k8s.io/e2e-framework/support/kind"
)

var (
	testenv env.Environment
	// repoRoot is the checkout the tests run from.
	repoRoot = mustAbs("..")
	// kubectlPath is the pinned kubectl built by hack/tools.sh, or $KUBECTL.
	kubectlPath string
	// localCluster is the DEVCLUSTER_DIR of the local cluster the suite started (provider local),
	// empty for another provider: the API server outage feature needs the processes it started.
	localCluster string
	// auditLog is the API server's audit log of write requests (hack/kwok/audit-policy.yaml), where
	// the local cluster has one; E2E_AUDIT_LOG names it for another cluster.
	auditLog string
)

const clusterName = "trainyard-e2e"

func TestMain(m *testing.M) {
	cfg, err := envconf.NewFromFlags()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: flags:", err)
		os.Exit(2)
	}
	testenv = env.NewWithConfig(cfg)
	if kubectlPath, err = pinnedKubectl(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(2)
	}
	if schedulerPluginsDir, err = versionsVar("SCHEDULER_PLUGINS_BIN"); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(2)
	}

	// Finish steps run in the order they are registered: the operator stops first, the cluster last.
	var clusterDown env.Func
	switch provider := os.Getenv("E2E_PROVIDER"); provider {
	case "", "local":
		dir := filepath.Join(repoRoot, ".devcluster", "e2e")
		localCluster = dir
		testenv.Setup(localClusterUp(dir))
		clusterDown = localClusterDown(dir)
		auditLog = filepath.Join(dir, "kwok", "clusters", clusterName, "logs", "audit.log")
	case "kind":
		testenv.Setup(envfuncs.CreateCluster(kind.NewProvider(), clusterName))
		clusterDown = envfuncs.DestroyCluster(clusterName)
	case "existing":
		cfg.WithKubeconfigFile(os.Getenv("KUBECONFIG"))
	default:
		fmt.Fprintf(os.Stderr, "e2e: E2E_PROVIDER=%q: want local, kind or existing\n", provider)
		os.Exit(2)
	}
	if a := os.Getenv("E2E_AUDIT_LOG"); a != "" {
		auditLog = a
	}
	testenv.Setup(installCRDs, startSchedulerPlugins, installOperatorRBAC, startKueue, startSharedOperator)
	testenv.Finish(stopSharedOperator, stopKueue, stopSchedulerPlugins, uninstallOperatorRBAC, uninstallCRDs)
	if clusterDown != nil {
		testenv.Finish(clusterDown)
	}
	os.Exit(testenv.Run(m))
}

// clusterScript runs `hack/cluster.sh verb` with env added to the suite's, printing what it
// prints.
func clusterScript(ctx context.Context, verb string, env ...string) error {
	cmd := exec.CommandContext(ctx, filepath.Join(repoRoot, "hack", "cluster.sh"), verb)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	return cmd.Run()
}

// localClusterEnv is the suite's cluster in dir: 12 nodes of 110 pods, room for the 1,000-pod job
// of the kill feature beside the others.
func localClusterEnv(dir string) []string {
	return []string{"DEVCLUSTER_DIR=" + dir, "CLUSTER=" + clusterName, "NODES=12"}
}

// localClusterUp starts the project's loopback cluster in dir and points the config at it.
func localClusterUp(dir string) env.Func {
	return func(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
		if err := clusterScript(ctx, "up", localClusterEnv(dir)...); err != nil {
			return ctx, fmt.Errorf("starting the local cluster: %w", err)
		}
		cfg.WithKubeconfigFile(filepath.Join(dir, "kubeconfig"))
		return ctx, nil
	}
}

// localClusterDown stops the local cluster and every process it started.
func localClusterDown(dir string) env.Func {
	return func(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
		return ctx, clusterScript(ctx, "down", localClusterEnv(dir)...)
	}
}

// podGroupCRDs are stand-ins for the PodGroup CRDs of the gang schedulers that do not run here, T9k
// and Volcano (see the file's header); coscheduling's is scheduler-plugins' own
// (schedulerPluginsCRDs).
var podGroupCRDs = filepath.Join(repoRoot, "e2e", "testdata", "podgroup-crds.yaml")

// kubeflowCRDs are the kubeflow.org CRDs of the opt-in overlay kustomize/kubeflow.
var kubeflowCRDs = filepath.Join(repoRoot, "kustomize", "kubeflow", "crd")

// installCRDs installs Trainyard's CRDs the way `make install` does, the PodGroup stand-ins and
// scheduler-plugins' CRDs.
func installCRDs(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
	if _, err := kubectl(ctx, cfg, "", "apply", "--server-side", "--force-conflicts", "-k", filepath.Join(repoRoot, "kustomize", "crd")); err != nil {
		return ctx, err
	}
	if _, err := kubectl(ctx, cfg, "", "apply", "--server-side", "-f", podGroupCRDs); err != nil {
		return ctx, err
	}
	if _, err := os.Stat(schedulerPluginsCRDs()); err != nil {
		return ctx, fmt.Errorf("scheduler-plugins' CRDs are not in the cache (run make tools): %w", err)
	}
	if _, err := kubectl(ctx, cfg, "", "apply", "--server-side", "-f", schedulerPluginsCRDs()); err != nil {
		return ctx, err
	}
	// The kubeflow.org CRDs, as the opt-in overlay installs them (its RBAC aside: the suite's
	// operator runs as the cluster admin).
	if _, err := kubectl(ctx, cfg, "", "apply", "--server-side", "--force-conflicts", "-f", kubeflowCRDs); err != nil {
		return ctx, err
	}
	return ctx, waitCRDsEstablished(ctx, cfg)
}

// waitCRDsEstablished waits for every CRD to be Established. Note: kubectl wait fails at once,
// rather than waiting, on a CRD created so recently that it has no conditions yet ("accessor
// error"), so it is asked again until the deadline.
func waitCRDsEstablished(ctx context.Context, cfg *envconf.Config) error {
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, err := kubectl(ctx, cfg, "", "wait", "--for=condition=Established", "--timeout=60s", "crd", "--all")
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func uninstallCRDs(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
	for _, f := range []string{podGroupCRDs, schedulerPluginsCRDs(), kubeflowCRDs} {
		if _, err := kubectl(ctx, cfg, "", "delete", "--ignore-not-found", "-f", f); err != nil {
			return ctx, err
		}
	}
	_, err := kubectl(ctx, cfg, "", "delete", "--ignore-not-found", "-k", filepath.Join(repoRoot, "kustomize", "crd"))
	return ctx, err
}

// kubectl runs the pinned kubectl against the test cluster, with stdin if given, and returns
// its combined output; a non-zero exit is an error that carries the output.
func kubectl(ctx context.Context, cfg *envconf.Config, stdin string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, kubectlPath, append([]string{"--kubeconfig", cfg.KubeconfigFile()}, args...)...)
	cmd.Env = append(os.Environ(), "KUBECACHEDIR="+filepath.Join(repoRoot, ".devcluster", "e2e", "cache"))
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("kubectl %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// pinnedKubectl finds the kubectl of hack/versions.sh: the tests never use one that happens to
// be on the machine.
func pinnedKubectl() (string, error) {
	if k := os.Getenv("KUBECTL"); k != "" {
		return k, nil
	}
	out, err := exec.Command("bash", "-c", ". "+filepath.Join(repoRoot, "hack", "versions.sh")+` && echo "$KUBE_BIN/kubectl"`).Output()
	if err != nil {
		return "", fmt.Errorf("reading hack/versions.sh: %w", err)
	}
	path := strings.TrimSpace(string(out))
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("the pinned kubectl is not built (run make tools): %w", err)
	}
	return path, nil
}

// versionsVar is a variable of hack/versions.sh, such as a tool's cache folder.
func versionsVar(name string) (string, error) {
	out, err := exec.Command("bash", "-c", ". "+filepath.Join(repoRoot, "hack", "versions.sh")+` && echo "$`+name+`"`).Output()
	if err != nil {
		return "", fmt.Errorf("reading %s from hack/versions.sh: %w", name, err)
	}
	return strings.TrimSpace(string(out)), nil
}

func mustAbs(p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		panic(err)
	}
	return a
}
