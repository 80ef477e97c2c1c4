//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"
)

// TestOperatorStarts: the trainyard binary connects to the cluster, reports healthy on a
// loopback port, and stops cleanly on SIGTERM.
func TestOperatorStarts(t *testing.T) {
	f := features.New("operator process").
		WithLabel("area", "operator").
		Assess("trainyard starts, is healthy and stops on SIGTERM", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			addr := freeLoopbackAddr(t)
			cmd := exec.Command(filepath.Join(repoRoot, "bin", "trainyard"),
				"--kubeconfig", cfg.KubeconfigFile(), "--metrics-bind-address=0", "--health-probe-bind-address="+addr)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			healthy := false
			for i := 0; i < 100 && !healthy; i++ {
				select {
				case err := <-exited:
					t.Fatalf("trainyard exited before becoming healthy: %v", err)
				case <-time.After(100 * time.Millisecond):
				}
				resp, err := http.Get(fmt.Sprintf("http://%s/readyz", addr))
				if err == nil {
					healthy = resp.StatusCode == http.StatusOK
					resp.Body.Close()
				}
			}
			if !healthy {
				_ = cmd.Process.Kill()
				t.Fatalf("trainyard did not report ready on %s", addr)
			}
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case err := <-exited:
				if err != nil {
					t.Errorf("trainyard exited with %v after SIGTERM", err)
				}
			case <-time.After(30 * time.Second):
				_ = cmd.Process.Kill()
				t.Errorf("trainyard did not stop after SIGTERM")
			}
			return ctx
		}).
		Feature()
	testenv.Test(t, f)
}

func freeLoopbackAddr(t *testing.T) string {
	addr, err := loopbackAddr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

func netListen() (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") }
