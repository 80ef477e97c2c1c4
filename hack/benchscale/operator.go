package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// operatorConfig says how to start the operator under test.
type operatorConfig struct {
	bin        string
	kubeconfig string
	logPath    string   // its stdout and stderr
	extraFlags []string // passed through, after the bench's own (so they win)
	pprof      bool     // ask for a pprof endpoint, if the binary has the flag
}

// operator is bin/trainyard running as the bench's child process, on loopback ports.
type operator struct {
	cfg       operatorConfig
	args      []string
	cmd       *exec.Cmd
	pid       int
	log       *os.File
	healthURL string
	pprofAddr string // empty: no pprof endpoint
	startedAt time.Time
	readyAt   time.Time
	exited    chan struct{}
	waitErr   error
	stopOnce  sync.Once
	stopErr   error
}

// startOperator starts the operator and waits until /readyz answers 200.
func startOperator(ctx context.Context, cfg operatorConfig) (*operator, error) {
	if _, err := os.Stat(cfg.bin); err != nil {
		return nil, fmt.Errorf("the operator binary: %w (run make build)", err)
	}
	metrics, err := freeLoopbackAddr()
	if err != nil {
		return nil, err
	}
	health, err := freeLoopbackAddr()
	if err != nil {
		return nil, err
	}
	op := &operator{cfg: cfg, healthURL: "http://" + health + "/readyz", exited: make(chan struct{})}
	op.args = []string{"--kubeconfig", cfg.kubeconfig, "--metrics-bind-address=" + metrics, "--health-probe-bind-address=" + health}
	if cfg.pprof {
		if hasFlag(cfg.bin, "pprof-bind-address") {
			if op.pprofAddr, err = freeLoopbackAddr(); err != nil {
				return nil, err
			}
			op.args = append(op.args, "--pprof-bind-address="+op.pprofAddr)
		} else {
			logf("--pprof: the operator has no --pprof-bind-address flag; no CPU profile")
		}
	}
	op.args = append(op.args, cfg.extraFlags...)

	if op.log, err = os.Create(cfg.logPath); err != nil {
		return nil, err
	}
	op.cmd = exec.Command(cfg.bin, op.args...)
	op.cmd.Stdout, op.cmd.Stderr = op.log, op.log
	op.cmd.SysProcAttr = &syscall.SysProcAttr{
		// Out of the terminal's process group: an interrupt reaches the bench, which stops the
		// operator itself, in order.
		Setpgid: true,
		// Should the bench die without stopping it, the kernel sends the operator SIGTERM.
		Pdeathsig: syscall.SIGTERM,
	}
	logf("starting the operator: %s %s", cfg.bin, strings.Join(op.args, " "))
	op.startedAt = time.Now()
	if err := op.cmd.Start(); err != nil {
		op.log.Close()
		return nil, fmt.Errorf("starting the operator: %w", err)
	}
	op.pid = op.cmd.Process.Pid
	go func() {
		op.waitErr = op.cmd.Wait()
		close(op.exited)
	}()
	if err := op.waitReady(ctx, time.Minute); err != nil {
		op.stop()
		return nil, err
	}
	op.readyAt = time.Now()
	logf("operator ready (pid %d) in %s; log %s", op.pid, seconds(op.readyAt.Sub(op.startedAt)), cfg.logPath)
	return op, nil
}

func (op *operator) waitReady(ctx context.Context, timeout time.Duration) error {
	client := http.Client{Timeout: time.Second}
	deadline := time.Now().Add(timeout)
	for {
		resp, err := client.Get(op.healthURL)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the operator did not report ready at %s within %s (log: %s)", op.healthURL, timeout, op.cfg.logPath)
		}
		select {
		case <-op.exited:
			return fmt.Errorf("the operator exited before it was ready: %v (log: %s)", op.waitErr, op.cfg.logPath)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// stop sends the operator SIGTERM, by its PID, and waits for it to exit (SIGKILL after 30 s).
// Safe to call more than once.
func (op *operator) stop() error {
	op.stopOnce.Do(func() {
		defer op.log.Close()
		select {
		case <-op.exited:
			op.stopErr = fmt.Errorf("the operator had exited by itself: %v (log: %s)", op.waitErr, op.cfg.logPath)
			return
		default:
		}
		logf("stopping the operator (SIGTERM to pid %d)", op.pid)
		if err := syscall.Kill(op.pid, syscall.SIGTERM); err != nil {
			op.stopErr = err
			return
		}
		select {
		case <-op.exited:
			if op.waitErr != nil {
				op.stopErr = fmt.Errorf("the operator exited with %v after SIGTERM", op.waitErr)
			}
		case <-time.After(30 * time.Second):
			_ = syscall.Kill(op.pid, syscall.SIGKILL)
			<-op.exited
			op.stopErr = errors.New("the operator did not stop within 30 s of SIGTERM: killed")
		}
	})
	return op.stopErr
}

// alive: the operator has not exited.
func (op *operator) alive() bool {
	select {
	case <-op.exited:
		return false
	default:
		return true
	}
}

// rss reads a memory field of /proc/<pid>/status (VmRSS: resident now; VmHWM: the peak), in kB.
func (op *operator) rss(field string) (int64, error) {
	if !op.alive() {
		return 0, errors.New("the operator is not running")
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", op.pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		name, value, ok := strings.Cut(s.Text(), ":")
		if !ok || name != field {
			continue
		}
		return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, op.pid)
}

// cpuProfile fetches a CPU profile of the given length from the operator's pprof endpoint into
// path. It blocks for the profile's length.
func (op *operator) cpuProfile(ctx context.Context, seconds int, path string) error {
	if op.pprofAddr == "" {
		return errors.New("no pprof endpoint")
	}
	url := fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", op.pprofAddr, seconds)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("GET %s: %s: %s", url, resp.Status, body)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// hasFlag: the binary's -help lists the flag.
func hasFlag(bin, name string) bool {
	out, _ := exec.Command(bin, "-help").CombinedOutput()
	return strings.Contains(string(out), "-"+name+" ")
}

// freeLoopbackAddr returns a 127.0.0.1 port that was free a moment ago.
func freeLoopbackAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}
