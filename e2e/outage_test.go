//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
)

// component is a control-plane component of a local cluster (the kube-apiserver, the
// kube-scheduler) as kwokctl started it: a host process with a PID file, a command line, a working directory and a log. The
// suite started it, so the suite may stop it and start it again (the PID file then names the new
// process, so that `hack/cluster.sh down` still ends it).
type component struct {
	pidFile string
	pid     int
	args    []string
	dir     string
	env     []string
	log     string
}

func findAPIServer() (*component, error) {
	return findComponent(localCluster, clusterName, "kube-apiserver")
}

// findComponent finds the control-plane component (kube-apiserver, kube-scheduler) of the cluster
// that hack/cluster.sh started in dir (its DEVCLUSTER_DIR) under the name cluster (its CLUSTER).
func findComponent(dir, cluster, name string) (*component, error) {
	root := filepath.Join(dir, "kwok", "clusters", cluster)
	s := &component{pidFile: filepath.Join(root, "pids", name+".pid"), log: filepath.Join(root, "logs", name+".log")}
	b, err := os.ReadFile(s.pidFile)
	if err != nil {
		return nil, err
	}
	if s.pid, err = strconv.Atoi(strings.TrimSpace(string(b))); err != nil {
		return nil, fmt.Errorf("%s: %w", s.pidFile, err)
	}
	proc := fmt.Sprintf("/proc/%d/", s.pid)
	cmdline, err := os.ReadFile(proc + "cmdline")
	if err != nil {
		return nil, err
	}
	s.args = strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
	if !strings.HasSuffix(s.args[0], name) {
		return nil, fmt.Errorf("PID %d of %s is %q, not the %s", s.pid, s.pidFile, s.args[0], name)
	}
	if s.dir, err = os.Readlink(proc + "cwd"); err != nil {
		return nil, err
	}
	environ, err := os.ReadFile(proc + "environ")
	if err != nil {
		return nil, err
	}
	s.env = strings.Split(strings.TrimRight(string(environ), "\x00"), "\x00")
	return s, nil
}

// apiServerReady waits (up to a minute) until the kube-apiserver of cfg's cluster says it is ready.
func apiServerReady(ctx context.Context, t *testing.T, cfg *envconf.Config) {
	t.Helper()
	eventually(t, 60*time.Second, "the kube-apiserver is ready again", func() (bool, string) {
		out, err := kubectl(ctx, cfg, "", "get", "--raw", "/readyz")
		return err == nil, strings.TrimSpace(out)
	})
}

// stop ends the API server with SIGTERM (SIGKILL after 30 s) and waits until it is gone.
func (s *component) stop() error {
	if err := syscall.Kill(s.pid, syscall.SIGTERM); err != nil {
		return err
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		if err := syscall.Kill(s.pid, 0); errors.Is(err, syscall.ESRCH) {
			return nil
		}
		if time.Now().After(deadline) {
			_ = syscall.Kill(s.pid, syscall.SIGKILL)
			deadline = time.Now().Add(10 * time.Second)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// start runs the same command again, in its own session as kwokctl does, logging where it did.
func (s *component) start() error {
	log, err := os.OpenFile(s.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer log.Close()
	cmd := exec.Command(s.args[0], s.args[1:]...)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = s.dir, s.env, log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	s.pid = cmd.Process.Pid
	go func() { _ = cmd.Wait() }() // reaped if it exits while the suite runs
	return os.WriteFile(s.pidFile, []byte(strconv.Itoa(s.pid)+"\n"), 0o644)
}

// TestAPIServerOutage: the API server stopped for 10 s while jobs run and finish. No job is lost,
// the outcomes that happened in the dark are recorded, and the same operator process carries on
// (its watches come back by themselves): a job created afterwards runs to its end.
func TestAPIServerOutage(t *testing.T) {
	if localCluster == "" {
		t.Skip("needs the local cluster, whose kube-apiserver the suite started (E2E_PROVIDER=local)")
	}
	faultFeature(t, "the kube-apiserver stopped for 10 s while jobs run and finish: no job lost, every outcome recorded, the operator recovers without a restart",
		"stop the API server, start it again, look", "outage",
		func(ctx context.Context, t *testing.T, cfg *envconf.Config, c client.Client, ns string) {
			operatorPID := sharedOperator.cmd.Process.Pid
			// The pods end about 6 s after they start: inside the outage.
			want := map[string]batch.JobPhase{"succeeds": batch.JobSucceeded, "fails": batch.JobFailed, "runs": batch.JobRunning}
			create(ctx, t, c, ns, pyTorchJob("succeeds").Master(sim("6s", "0")).Workers(2, sim("6s", "0")).Obj())
			create(ctx, t, c, ns, pyTorchJob("fails").Workers(2, sim("6s", "1")).WorkerPolicy(batch.RestartPolicyNever).Obj())
			create(ctx, t, c, ns, tensorFlowJob("runs").Replica(batch.TensorFlowReplicaChief, 1, sim("", "")).Replica(batch.TensorFlowReplicaWorker, 2, sim("", "")).Obj())
			for j := range want {
				waitPhase(ctx, t, c, ns, j, batch.JobRunning)
			}

			server, err := findAPIServer()
			if err != nil {
				t.Fatal(err)
			}
			if err := server.stop(); err != nil {
				t.Fatal(err)
			}
			stopped := time.Now()
			restarted := false
			defer func() {
				if !restarted { // never leave the suite without its API server
					_ = server.start()
				}
			}()
			t.Logf("stopped the kube-apiserver (PID %d)", server.pid)
			time.Sleep(10 * time.Second)
			if err := server.start(); err != nil {
				t.Fatal(err)
			}
			started := time.Now()
			restarted = true
			apiServerReady(ctx, t, cfg)
			ready := time.Now()
			t.Logf("the kube-apiserver was down %.1f s; ready %.1f s after it was started again (PID %d)", ready.Sub(stopped).Seconds(), ready.Sub(started).Seconds(), server.pid)

			// Who takes how long after the outage: the fake kubelet to show the pods' exits, then
			// the operator to record the outcomes.
			exited, recorded := map[string]time.Duration{}, map[string]time.Duration{}
			eventually(t, 2*time.Minute, "every outcome is recorded and every status matches its pods", func() (bool, string) {
				var why []string
				for j, phase := range want {
					if _, ok := exited[j]; !ok && phase != batch.JobRunning {
						ended := 0
						pods := jobPods(ctx, t, c, ns, j)
						for _, p := range pods {
							if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
								ended++
							}
						}
						if ended > 0 {
							exited[j] = time.Since(ready)
						}
					}
					if _, ok := recorded[j]; ok {
						continue
					}
					st, err := jobStatus(ctx, c, ns, j)
					if ok, diff := truthfulStatus(ctx, t, c, ns, j); err != nil || st.Phase != phase || !ok {
						why = append(why, fmt.Sprintf("%s: %s", j, diff))
						continue
					}
					recorded[j] = time.Since(ready)
				}
				return len(why) == 0, strings.Join(why, "; ")
			})
			for j := range want {
				t.Logf("%s: first pod exit shown %.1f s, outcome recorded %.1f s after the API server was ready", j, exited[j].Seconds(), recorded[j].Seconds())
			}
			st, _ := jobStatus(ctx, c, ns, "fails")
			if got := condition(st, batch.ConditionFailed); !strings.HasPrefix(got, "True/") {
				t.Errorf("fails: Failed condition %q; want True", got)
			}
			if !sharedOperator.alive() || sharedOperator.cmd.Process.Pid != operatorPID {
				t.Errorf("the operator (PID %d) did not live through the outage", operatorPID)
			}
			// The operator's watches are back: a new job is seen, run and finished.
			create(ctx, t, c, ns, pyTorchJob("after").Master(sim("1s", "0")).Workers(1, sim("1s", "0")).Obj())
			waitPhase(ctx, t, c, ns, "after", batch.JobSucceeded)
			t.Logf("a job created after the outage succeeded; the operator is still PID %d", operatorPID)
		})
}
