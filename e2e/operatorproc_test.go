//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"sigs.k8s.io/e2e-framework/pkg/envconf"
)

// operatorProcess is bin/trainyard running out of cluster against the test cluster, on loopback
// ports of its own, with its log in .devcluster/e2e/.
type operatorProcess struct {
	cmd     *exec.Cmd
	exited  chan error
	log     *os.File
	Metrics string // host:port of its metrics endpoint
}

var (
	// kubeconfigPath is the test cluster's kubeconfig, for features that run kubectl.
	kubeconfigPath string

	operatorMu sync.Mutex
	// sharedOperator is the operator the features run against; a feature that must stop or kill
	// it (the crash feature) replaces it under operatorMu.
	sharedOperator *operatorProcess
)

// startOperator starts bin/trainyard and waits until it reports ready.
func startOperator(cfg *envconf.Config, logName string, extra ...string) (*operatorProcess, error) {
	kc := cfg.KubeconfigFile()
	if operatorKubeconfig != "" {
		kc = operatorKubeconfig // the install's ServiceAccount and RBAC (install_test.go)
	}
	return startOperatorAs(kc, logName, extra...)
}

// startOperatorAs starts bin/trainyard with the kubeconfig kc and waits until it reports ready.
func startOperatorAs(kc, logName string, extra ...string) (*operatorProcess, error) {
	health, err := loopbackAddr()
	if err != nil {
		return nil, err
	}
	metrics, err := loopbackAddr()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(repoRoot, ".devcluster", "e2e")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	logFile, err := os.OpenFile(filepath.Join(dir, logName), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	args := append([]string{"--kubeconfig", kc, "--metrics-bind-address=" + metrics, "--health-probe-bind-address=" + health}, extra...)
	p := &operatorProcess{cmd: exec.Command(filepath.Join(repoRoot, "bin", "trainyard"), args...), exited: make(chan error, 1), log: logFile, Metrics: metrics}
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	if err := p.cmd.Start(); err != nil {
		logFile.Close()
		return nil, err
	}
	go func() { p.exited <- p.cmd.Wait() }()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-p.exited:
			logFile.Close()
			return nil, fmt.Errorf("trainyard exited before it was ready (%v); log: %s", err, logFile.Name())
		case <-time.After(100 * time.Millisecond):
		}
		if resp, err := http.Get("http://" + health + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p, nil
			}
		}
	}
	_ = p.kill()
	return nil, fmt.Errorf("trainyard was not ready within 30s; log: %s", logFile.Name())
}

// stop ends the operator with SIGTERM, and SIGKILL if it lingers.
func (p *operatorProcess) stop() error {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.exited:
		p.log.Close()
		return err
	case <-time.After(30 * time.Second):
		return p.kill()
	}
}

// kill ends the operator with SIGKILL, as a crash would.
func (p *operatorProcess) kill() error {
	_ = p.cmd.Process.Kill()
	err := <-p.exited
	p.log.Close()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return nil // killed, as asked
	}
	return err
}

// alive says whether the process has not exited.
func (p *operatorProcess) alive() bool {
	select {
	case err := <-p.exited:
		p.exited <- err // keep it for stop or kill
		return false
	default:
		return true
	}
}

// metricValue sums the samples of a metric (every label set) on a metrics endpoint.
func metricValue(addr, name string) (float64, error) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	sum, found := 0.0, false
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, name+"{") || strings.HasPrefix(line, name+" ") {
			var v float64
			if _, err := fmt.Sscan(line[strings.LastIndex(line, " ")+1:], &v); err != nil {
				return 0, fmt.Errorf("%s: %q: %w", name, line, err)
			}
			sum, found = sum+v, true
		}
	}
	if !found {
		return 0, fmt.Errorf("no metric %s at %s", name, addr)
	}
	return sum, nil
}

func loopbackAddr() (string, error) {
	l, err := netListen()
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func startSharedOperator(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
	kubeconfigPath = cfg.KubeconfigFile()
	p, err := startOperator(cfg, "operator.log")
	if err != nil {
		return ctx, err
	}
	operatorMu.Lock()
	sharedOperator = p
	operatorMu.Unlock()
	return ctx, nil
}

// standAsideSharedOperator stops the shared operator for a feature that runs operators of its own
// (two operators would both reconcile every job) and returns what starts it again, to defer. The
// caller holds operatorMu.
func standAsideSharedOperator(t *testing.T, cfg *envconf.Config) (startAgain func()) {
	t.Helper()
	if err := sharedOperator.stop(); err != nil {
		t.Fatal(err)
	}
	sharedOperator = nil
	return func() {
		p, err := startOperator(cfg, "operator.log")
		if err != nil {
			t.Fatal(err)
		}
		sharedOperator = p
	}
}

func stopSharedOperator(ctx context.Context, _ *envconf.Config) (context.Context, error) {
	operatorMu.Lock()
	defer operatorMu.Unlock()
	if sharedOperator == nil {
		return ctx, nil
	}
	err := sharedOperator.stop()
	sharedOperator = nil
	return ctx, err
}
