//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
	kubeflowv1 "github.com/trainyard/trainyard/apis/kubeflow/v1"
)

// TestCLI: `trainyard get`, `describe` and `logs -f` against the cluster, as a user runs them
// (the built binary, the suite's kubeconfig), and as the kubectl plugin `kubectl trainyard`.
func TestCLI(t *testing.T) {
	f := features.New("trainyard CLI").
		WithLabel("area", "cli").
		Assess("trainyard get lists the jobs of every kind in one table, with the reason a job waits", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			c, ns := namespaced(ctx, t, cfg, "cli-get")
			create(ctx, t, c, ns, pyTorchJob("runs").Workers(2, sim("", "")).Obj())
			create(ctx, t, c, ns, withLimits(pyTorchJob("toobig").Obj(), corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("64")}))
			applyYAML(ctx, t, ns, fmt.Sprintf(`
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: kf}
spec:
  tfReplicaSpecs:
    Worker:
      replicas: 2%s
`, kfPod("tensorflow", simRunsForever)))
			waitPhase(ctx, t, c, ns, "runs", "Running")
			waitingIs(ctx, t, c, ns, "toobig", "Unschedulable", "Insufficient nvidia.com/gpu")
			var out string
			eventually(t, 60*time.Second, "get shows the three jobs", func() (bool, string) {
				out = trainyardCLI(t, cfg, "get", "-n", ns)
				return strings.Contains(out, "TFJob") && strings.Contains(out, "2/2") && rowHas(out, "runs", "PyTorchTrainingJob", "Running", "3/3") &&
					rowHas(out, "toobig", "Pending", "0/1", "Unschedulable"), out
			})
			t.Logf("trainyard get:\n%s", out)
			wide := trainyardCLI(t, cfg, "get", "-n", ns, "--wide")
			if !strings.Contains(wide, "Insufficient nvidia.com/gpu") {
				t.Errorf("get --wide shows no message:\n%s", wide)
			}
			// The same binary as the kubectl plugin.
			plugin := filepath.Join(t.TempDir(), "kubectl-trainyard")
			if err := os.Symlink(filepath.Join(repoRoot, "bin", "trainyard"), plugin); err != nil {
				t.Fatal(err)
			}
			cmd := exec.CommandContext(ctx, kubectlPath, "trainyard", "get", "--kubeconfig", cfg.KubeconfigFile(), "-n", ns)
			cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(plugin)+":"+os.Getenv("PATH"))
			pout, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(pout), "toobig") {
				t.Errorf("kubectl trainyard get: %v\n%s", err, pout)
			}
			// A mistyped command fails, in one line, so that a script does not go on.
			cmd = exec.CommandContext(ctx, kubectlPath, "trainyard", "gett", "--kubeconfig", cfg.KubeconfigFile(), "-n", ns)
			cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(plugin)+":"+os.Getenv("PATH"))
			pout, err = cmd.CombinedOutput()
			if err == nil || strings.Count(strings.TrimSpace(string(pout)), "\n") > 0 || !strings.Contains(string(pout), `unknown command "gett"`) {
				t.Errorf("kubectl trainyard gett: %v; want a failure in one line\n%s", err, pout)
			}
			return ctx
		}).
		Assess("trainyard get --watch prints the table, then a job's row each time what it shows changes, until stopped", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			c, ns := namespaced(ctx, t, cfg, "cli-watch")
			watching, lines := startCLI(t, cfg, "get", "-w", "-n", ns)
			defer watching()
			// The empty namespace is said first (on stderr, which startCLI reads too), then the header.
			next := func(what string) string {
				t.Helper()
				select {
				case l, ok := <-lines:
					if !ok {
						t.Fatalf("get -w ended while waiting for %s", what)
					}
					return l
				case <-time.After(60 * time.Second):
					t.Fatalf("get -w printed nothing in 60 s while waiting for %s", what)
				}
				return ""
			}
			for l := next("the header"); !strings.HasPrefix(l, "KIND "); l = next("the header") {
				if !strings.Contains(l, "No training jobs") {
					t.Errorf("before the header: %q", l)
				}
			}
			start := time.Now()
			create(ctx, t, c, ns, pyTorchJob("wj").Master(sim("2s", "0")).Workers(1, sim("", "")).Obj())
			// Every row the job gets, until it has Succeeded: each one differs from the one
			// before (no row for a change it does not show), and the phases come in order.
			var phases []string
			prev := ""
			for !slices.Contains(phases, "Succeeded") {
				l := next("the job's rows")
				f := strings.Fields(l)
				if len(f) < 7 || f[0] != "PyTorchTrainingJob" || f[1] != "wj" {
					t.Fatalf("a row of another job, or no row: %q", l)
				}
				row := strings.Join(f[:6], " ") // AGE aside
				if row == prev {
					t.Errorf("a row that shows no change: %q", l)
				}
				prev = row
				if len(phases) == 0 || phases[len(phases)-1] != f[2] {
					phases = append(phases, f[2])
				}
			}
			t.Logf("get -w: phases %v, Succeeded %.1f s after the create", phases, time.Since(start).Seconds())
			if i := slices.Index(phases, "Running"); i < 0 || i > slices.Index(phases, "Succeeded") {
				t.Errorf("phases %v; want Running before Succeeded", phases)
			}
			if err := c.Delete(ctx, &batch.PyTorchTrainingJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "wj"}}); err != nil {
				t.Fatal(err)
			}
			for {
				if f := strings.Fields(next("the deletion")); len(f) > 2 && f[1] == "wj" && f[2] == "Deleted" {
					break
				}
			}
			return ctx
		}).
		Assess("trainyard describe shows a job at a glance: the replica grid with states and nodes, restarts with exit codes, conditions, events", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			c, ns := namespaced(ctx, t, cfg, "cli-describe")
			// worker-1 exits 137 once; ExitCode restarts it.
			exits := map[string]string{simStartDelay: "500ms", simRunDuration: "1s", simExitCode: "137"}
			job := pyTorchJob("desc").Workers(2, sim("", "")).WorkerPolicy("ExitCode").Obj()
			create(ctx, t, c, ns, job)
			// Note: the phase turns Running with the first pod; worker-1 may not exist yet then.
			runningPods(ctx, t, c, ns, "desc", 3)
			annotatePods(ctx, t, c, ns, "desc-worker-1", exits)
			var out string
			// Plain PyTorch restarts its whole gang: wait for the new gang to run.
			eventually(t, 60*time.Second, "describe shows the restart and the new gang running", func() (bool, string) {
				out = trainyardCLI(t, cfg, "describe", "desc", "-n", ns)
				return strings.Contains(out, "backoffCount 1") && strings.Contains(out, "exited with code 137") &&
					strings.Count(out, ": Running@kwok-node-") == 3, out
			})
			t.Logf("trainyard describe:\n%s", out)
			for _, want := range []string{"PyTorchTrainingJob " + ns + "/desc", "master", "worker", "x2", "0: Running@kwok-node-", "Conditions:", "Initialized", "Events (latest last):", "PodsCreated"} {
				if !strings.Contains(out, want) {
					t.Errorf("describe lacks %q:\n%s", want, out)
				}
			}
			return ctx
		}).
		Assess("trainyard logs -f follows every rank's training container, each line prefixed with its replica", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			if localCluster == "" {
				t.Skip("the simulated container log exists only on the local cluster")
			}
			c, ns := namespaced(ctx, t, cfg, "cli-logs")
			create(ctx, t, c, ns, pyTorchJob("lg").Workers(2, sim("", "")).Obj())
			waitPhase(ctx, t, c, ns, "lg", "Running")
			follow, lines := startCLI(t, cfg, "logs", "lg", "-n", ns, "-f", "--tail", "0")
			defer follow()
			// The follow streams open at some moment after the start: a line is appended every
			// 500 ms until every rank has shown one written after its stream opened.
			marker := fmt.Sprintf("run %d step", time.Now().UnixNano())
			seen := map[string]bool{}
			deadline := time.After(30 * time.Second)
			tick := time.NewTicker(500 * time.Millisecond)
			defer tick.Stop()
			for step := 0; len(seen) < 3; {
				select {
				case <-tick.C:
					appendContainerLog(t, fmt.Sprintf("%s %d loss 0.125", marker, step))
					step++
				case l, ok := <-lines:
					if !ok {
						t.Fatalf("logs -f ended; saw %v", seen)
					}
					if strings.Contains(l, "] "+marker) {
						seen[strings.TrimSpace(strings.SplitN(l, "]", 2)[0])+"]"] = true
					}
				case <-deadline:
					t.Fatalf("logs -f: appended lines reached %v of master-0, worker-0, worker-1", seen)
				}
			}
			for _, r := range []string{"[master-0]", "[worker-0]", "[worker-1]"} {
				if !seen[r] {
					t.Errorf("no line prefixed %s]: %v", r, seen)
				}
			}
			// --replica-type and --index choose one rank.
			one := trainyardCLI(t, cfg, "logs", "lg", "-n", ns, "--replica-type", "worker", "--index", "1", "--tail", "1")
			if strings.Count(one, "\n") != 1 || !strings.HasPrefix(one, "[worker-1] ") {
				t.Errorf("logs --replica-type worker --index 1 --tail 1:\n%s", one)
			}
			return ctx
		}).
		Assess("trainyard pause and resume a PyTorchTrainingJob and a TFJob: the pods go, the job stays, then they come back", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			c, ns := namespaced(ctx, t, cfg, "cli-pause")
			create(ctx, t, c, ns, pyTorchJob("pz").Workers(1, sim("", "")).Obj())
			applyYAML(ctx, t, ns, `apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: tz}
spec:
  tfReplicaSpecs:
    Worker:
      replicas: 2`+kfPod("tensorflow", simRunsForever))
			runningPods(ctx, t, c, ns, "pz", 2)
			waitKubeflow(ctx, t, c, ns, "tz", kubeflowv1.JobRunning)

			start := time.Now()
			out := trainyardCLI(t, cfg, "pause", "tfjob/tz", "-n", ns)
			if !strings.Contains(out, "tfjob/tz paused (runPolicy.suspend)") {
				t.Errorf("trainyard pause tfjob/tz:\n%s", out)
			}
			// --wait returns once the job says Paused and its last pod is gone: one read each
			// right after it returns, no polling.
			out = trainyardCLI(t, cfg, "pause", "pz", "--wait", "--timeout", "60s", "-n", ns)
			if !strings.Contains(out, "pytorchtrainingjob/pz paused (runMode.pause)") || !strings.Contains(out, "pytorchtrainingjob/pz paused, with no pod left after") {
				t.Errorf("trainyard pause pz --wait:\n%s", out)
			}
			if st, err := jobStatus(ctx, c, ns, "pz"); err != nil || st.Phase != batch.JobPaused {
				t.Errorf("pause --wait returned with pz %q (%v); want Paused", st.Phase, err)
			}
			if n := len(jobPods(ctx, t, c, ns, "pz")); n != 0 {
				t.Errorf("pause --wait returned with %d pods of pz left", n)
			}
			t.Logf("trainyard pause --wait returned %.1f s after the first pause:\n%s", time.Since(start).Seconds(), out)
			waitKubeflow(ctx, t, c, ns, "tz", kubeflowv1.JobSuspended)
			eventually(t, 60*time.Second, "both jobs have no pod", func() (bool, string) {
				a, b := len(jobPods(ctx, t, c, ns, "pz")), len(kfPodsOf(ctx, t, c, ns, "tz"))
				return a+b == 0, fmt.Sprintf("pz %d, tz %d", a, b)
			})
			t.Logf("both jobs paused, with no pod, %.1f s after trainyard pause", time.Since(start).Seconds())
			if out := trainyardCLI(t, cfg, "pause", "pz", "-n", ns); strings.TrimSpace(out) != "pytorchtrainingjob/pz is already paused" {
				t.Errorf("trainyard pause of a paused job:\n%s", out)
			}
			if out := trainyardCLI(t, cfg, "get", "-n", ns); !rowHas(out, "pz", "Paused", "0/2") || !rowHas(out, "tz", "Paused", "0/2") {
				t.Errorf("trainyard get of the paused jobs:\n%s", out)
			}

			start = time.Now()
			if out := trainyardCLI(t, cfg, "resume", "tfjob/tz", "-n", ns); !strings.Contains(out, " resumed (") {
				t.Errorf("trainyard resume tfjob/tz:\n%s", out)
			}
			out = trainyardCLI(t, cfg, "resume", "pz", "--wait", "-n", ns)
			if !strings.Contains(out, " resumed (") || !strings.Contains(out, "pytorchtrainingjob/pz running again after") {
				t.Errorf("trainyard resume pz --wait:\n%s", out)
			}
			if st, err := jobStatus(ctx, c, ns, "pz"); err != nil || st.Phase != batch.JobRunning {
				t.Errorf("resume --wait returned with pz %q (%v); want Running", st.Phase, err)
			}
			t.Logf("trainyard resume --wait returned %.1f s after the first resume:\n%s", time.Since(start).Seconds(), out)
			runningPods(ctx, t, c, ns, "pz", 2)
			waitPhase(ctx, t, c, ns, "pz", batch.JobRunning)
			waitKubeflow(ctx, t, c, ns, "tz", kubeflowv1.JobRunning)
			t.Logf("both jobs Running again %.1f s after trainyard resume", time.Since(start).Seconds())
			return ctx
		}).
		Feature()
	testenv.Test(t, f)
}

// rowHas reports whether a line of out starts with the job's name column and holds every word.
func rowHas(out, name string, words ...string) bool {
	for _, line := range strings.Split(out, "\n") {
		fields := strings.Fields(line)
		if len(fields) < 2 || fields[1] != name {
			continue
		}
		for _, w := range words {
			if !strings.Contains(line, w) {
				return false
			}
		}
		return true
	}
	return false
}

// trainyardCLI runs bin/trainyard with args against the test cluster and returns its output.
func trainyardCLI(t *testing.T, cfg *envconf.Config, args ...string) string {
	t.Helper()
	return trainyardCLIAt(t, cfg.KubeconfigFile(), args...)
}

// trainyardCLIAt is trainyardCLI against the cluster of the kubeconfig file.
func trainyardCLIAt(t *testing.T, kubeconfig string, args ...string) string {
	t.Helper()
	cmd := exec.Command(filepath.Join(repoRoot, "bin", "trainyard"), append(args, "--kubeconfig", kubeconfig)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("trainyard %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// startCLI starts bin/trainyard in the background and returns its output lines; stop ends it by
// its PID.
func startCLI(t *testing.T, cfg *envconf.Config, args ...string) (stop func(), lines <-chan string) {
	t.Helper()
	cmd := exec.Command(filepath.Join(repoRoot, "bin", "trainyard"), append(args, "--kubeconfig", cfg.KubeconfigFile())...)
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ch := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			ch <- sc.Text()
		}
		close(ch)
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			pw.Close()
		})
	}, ch
}

// appendContainerLog appends a line to the local cluster's simulated container log (every
// container's, followed by the KWOK kubelet), in the CRI log format.
func appendContainerLog(t *testing.T, line string) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(localCluster, "container.log"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := fmt.Fprintf(f, "%s stdout F %s\n", time.Now().UTC().Format(time.RFC3339Nano), line); err != nil {
		t.Fatal(err)
	}
}

// annotatePods sets annotations on a pod.
func annotatePods(ctx context.Context, t *testing.T, c client.Client, ns, pod string, ann map[string]string) {
	t.Helper()
	for k, v := range ann {
		annotatePod(ctx, t, c, ns, pod, k, v)
	}
}
