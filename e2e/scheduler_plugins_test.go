//go:build e2e

package e2e

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"sigs.k8s.io/e2e-framework/pkg/envconf"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
)

// The real coscheduling gang scheduler: scheduler-plugins (sigs.k8s.io/scheduler-plugins, the
// version pinned in hack/versions.sh, built by hack/tools.sh). Its kube-scheduler runs beside the
// cluster's own as a second scheduler, with one profile named batch.CoschedulingSchedulerName (the
// name render gives coscheduling pods) that enables Coscheduling as scheduler-plugins documents it;
// its controller writes the PodGroups' status. With the local provider the suite starts both out of
// cluster, as children of the test process listening on loopback only, with the cluster's admin
// kubeconfig, and stops them by PID at the end.

var (
	// schedulerPluginsDir holds scheduler-plugins' binaries and CRDs (hack/tools.sh).
	schedulerPluginsDir string
	// coscheduler is the running scheduler-plugins scheduler and controller; nil when the suite did
	// not start them (a provider other than local).
	coscheduler *schedulerPlugins
)

// schedulerPluginsCRDs are scheduler-plugins' own CRDs as its module ships them: PodGroup, and
// ElasticQuota, which its controller watches too.
func schedulerPluginsCRDs() string { return filepath.Join(schedulerPluginsDir, "crd") }

type schedulerPlugins struct {
	scheduler, controller *childProcess
	// schedulerLog is the scheduler's log (-v=2: binds, Permit waits, the plugins of the profile).
	schedulerLog string
}

// schedulerConfig is the KubeSchedulerConfiguration of the second scheduler: Coscheduling at every
// extension point it has (multiPoint: preFilter, postFilter, reserve, permit) and as the only
// queue sort, as scheduler-plugins' Coscheduling documentation configures it; a Permit wait of
// 10 s (its sample configuration; a PodGroup's scheduleTimeoutSeconds overrides it); no leader
// election (one instance).
func schedulerConfig(kubeconfig string) string {
	return fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
clientConnection:
  kubeconfig: %q
profiles:
- schedulerName: %s
  plugins:
    multiPoint:
      enabled:
      - name: Coscheduling
    queueSort:
      enabled:
      - name: Coscheduling
      disabled:
      - name: "*"
  pluginConfig:
  - name: Coscheduling
    args:
      permitWaitingTimeSeconds: 10
`, kubeconfig, batch.CoschedulingSchedulerName)
}

// startSchedulerPlugins starts scheduler-plugins' scheduler and controller against the local
// cluster (the PodGroup CRD must be installed first) and waits until both report ready.
func startSchedulerPlugins(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
	if localCluster == "" {
		fmt.Fprintln(os.Stderr, "e2e: scheduler-plugins is started with E2E_PROVIDER=local only; the features that need it are skipped")
		return ctx, nil
	}
	for _, bin := range []string{"kube-scheduler", "controller"} {
		if _, err := os.Stat(filepath.Join(schedulerPluginsDir, bin)); err != nil {
			return ctx, fmt.Errorf("scheduler-plugins is not built (run make tools): %w", err)
		}
	}
	config := filepath.Join(localCluster, "scheduler-plugins-config.yaml")
	if err := os.WriteFile(config, []byte(schedulerConfig(cfg.KubeconfigFile())), 0o644); err != nil {
		return ctx, err
	}
	port, err := loopbackAddr()
	if err != nil {
		return ctx, err
	}
	sp := &schedulerPlugins{schedulerLog: filepath.Join(localCluster, "scheduler-plugins-scheduler.log")}
	// The secure port serves /readyz and /metrics on loopback with an in-memory self-signed
	// certificate; those paths need no credentials.
	sp.scheduler, err = startChild(sp.schedulerLog, filepath.Join(schedulerPluginsDir, "kube-scheduler"),
		"--config="+config, "--bind-address=127.0.0.1", "--secure-port="+port[strings.LastIndex(port, ":")+1:],
		"--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics", "-v=2")
	if err != nil {
		return ctx, err
	}
	if err := sp.scheduler.waitReady("https://"+port+"/readyz", 60*time.Second); err != nil {
		_ = sp.scheduler.stop()
		return ctx, fmt.Errorf("scheduler-plugins kube-scheduler: %w", err)
	}
	metrics, err := loopbackAddr()
	if err != nil {
		return ctx, err
	}
	probe, err := loopbackAddr()
	if err != nil {
		return ctx, err
	}
	sp.controller, err = startChild(filepath.Join(localCluster, "scheduler-plugins-controller.log"), filepath.Join(schedulerPluginsDir, "controller"),
		"--kubeconfig="+cfg.KubeconfigFile(), "--metricsAddr="+metrics, "--probeAddr="+probe, "--enableLeaderElection=false")
	if err == nil {
		err = sp.controller.waitReady("http://"+probe+"/readyz", 60*time.Second)
		if err != nil {
			_ = sp.controller.stop()
		}
	}
	if err != nil {
		_ = sp.scheduler.stop()
		return ctx, fmt.Errorf("scheduler-plugins controller: %w", err)
	}
	coscheduler = sp
	return ctx, nil
}

// stopSchedulerPlugins stops what startSchedulerPlugins started, whatever the tests' outcome.
func stopSchedulerPlugins(ctx context.Context, _ *envconf.Config) (context.Context, error) {
	if coscheduler == nil {
		return ctx, nil
	}
	err := errors.Join(coscheduler.controller.stop(), coscheduler.scheduler.stop())
	coscheduler = nil
	if err != nil {
		// e2e-framework logs a finish step's error only at verbosity 2.
		fmt.Fprintln(os.Stderr, "e2e: stopping scheduler-plugins:", err)
	}
	return ctx, err
}

// requireCoscheduler skips a feature that needs the real coscheduling scheduler when the suite did
// not start it.
func requireCoscheduler(t *testing.T) {
	t.Helper()
	if coscheduler == nil {
		t.Skip("scheduler-plugins' scheduler is not running (the suite starts it with E2E_PROVIDER=local)")
	}
}

// schedulerLogLines are the lines of the scheduler's log that contain every one of words.
func schedulerLogLines(t *testing.T, words ...string) []string {
	t.Helper()
	raw, err := os.ReadFile(coscheduler.schedulerLog)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(string(raw), "\n") {
		all := true
		for _, w := range words {
			all = all && strings.Contains(line, w)
		}
		if all {
			out = append(out, line)
		}
	}
	return out
}

// childProcess is a binary the suite runs as its child, its output in a log file.
type childProcess struct {
	cmd    *exec.Cmd
	exited chan error
	log    *os.File
}

func startChild(logPath, bin string, args ...string) (*childProcess, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	p := &childProcess{cmd: exec.Command(bin, args...), exited: make(chan error, 1), log: logFile}
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	if err := p.cmd.Start(); err != nil {
		logFile.Close()
		return nil, err
	}
	go func() { p.exited <- p.cmd.Wait() }()
	return p, nil
}

// waitReady polls url until it answers 200. Note: the scheduler's certificate is self-signed and
// made at its start; the address is loopback and the suite started the process, so it is not
// verified.
func (p *childProcess) waitReady(url string, timeout time.Duration) error {
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		select {
		case err := <-p.exited:
			p.exited <- err
			return fmt.Errorf("exited before it was ready (%v); log: %s", err, p.log.Name())
		case <-time.After(100 * time.Millisecond):
		}
		if resp, err := client.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
	}
	return fmt.Errorf("not ready at %s within %s; log: %s", url, timeout, p.log.Name())
}

// stop ends the process by its PID: SIGTERM, then SIGKILL after 15 s. Any exit after the SIGTERM
// is accepted: kube-scheduler without leader election exits 1 when stopped ("finished without
// leader elect"). One that had already exited is reported.
func (p *childProcess) stop() error {
	defer p.log.Close()
	select {
	case err := <-p.exited:
		return fmt.Errorf("%s had exited before the end of the run (%v); log: %s", p.cmd.Path, err, p.log.Name())
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		return nil
	case <-time.After(15 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
		return fmt.Errorf("%s did not stop within 15 s of SIGTERM: killed", p.cmd.Path)
	}
}
