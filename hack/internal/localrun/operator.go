package localrun

import (
	"bufio"
	"context"
	"errors"
	"fmt"
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

// OperatorConfig says how to start the operator under test.
type OperatorConfig struct {
	Bin        string
	Kubeconfig string
	LogPath    string   // its stdout and stderr
	ExtraFlags []string // passed through, after the caller's own (so they win)
	Pprof      bool     // ask for a pprof endpoint, if the binary has the flag
	Log        Logf
}

// Operator is bin/trainyard running as the caller's child process, on loopback ports.
type Operator struct {
	Config OperatorConfig
	// Args are the operator's command-line arguments.
	Args []string
	// PID is the operator's process ID: it is stopped and killed by this number only.
	PID int
	// MetricsAddr, HealthURL and PprofAddr are its endpoints (PprofAddr empty: none).
	MetricsAddr string
	HealthURL   string
	PprofAddr   string
	StartedAt   time.Time
	ReadyAt     time.Time

	cmd      *exec.Cmd
	log      *os.File
	exited   chan struct{}
	waitErr  error
	stopOnce sync.Once
	stopErr  error
}

// StartOperator starts the operator and waits until /readyz answers 200.
func StartOperator(ctx context.Context, cfg OperatorConfig) (*Operator, error) {
	if _, err := os.Stat(cfg.Bin); err != nil {
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
	op := &Operator{Config: cfg, MetricsAddr: metrics, HealthURL: "http://" + health + "/readyz", exited: make(chan struct{})}
	op.Args = []string{"--kubeconfig", cfg.Kubeconfig, "--metrics-bind-address=" + metrics, "--health-probe-bind-address=" + health}
	if cfg.Pprof {
		if hasFlag(cfg.Bin, "pprof-bind-address") {
			if op.PprofAddr, err = freeLoopbackAddr(); err != nil {
				return nil, err
			}
			op.Args = append(op.Args, "--pprof-bind-address="+op.PprofAddr)
		} else {
			cfg.Log("pprof: the operator has no --pprof-bind-address flag; no CPU profile")
		}
	}
	op.Args = append(op.Args, cfg.ExtraFlags...)

	if op.log, err = os.Create(cfg.LogPath); err != nil {
		return nil, err
	}
	op.cmd = exec.Command(cfg.Bin, op.Args...)
	op.cmd.Stdout, op.cmd.Stderr = op.log, op.log
	op.cmd.SysProcAttr = &syscall.SysProcAttr{
		// Out of the terminal's process group: an interrupt reaches the caller, which stops the
		// operator itself, in order.
		Setpgid: true,
		// Should the caller die without stopping it, the kernel sends the operator SIGTERM.
		Pdeathsig: syscall.SIGTERM,
	}
	cfg.Log("starting the operator: %s %s", cfg.Bin, strings.Join(op.Args, " "))
	op.StartedAt = time.Now()
	if err := op.cmd.Start(); err != nil {
		op.log.Close()
		return nil, fmt.Errorf("starting the operator: %w", err)
	}
	op.PID = op.cmd.Process.Pid
	go func() {
		op.waitErr = op.cmd.Wait()
		close(op.exited)
	}()
	if err := op.waitReady(ctx, time.Minute); err != nil {
		op.Stop()
		return nil, err
	}
	op.ReadyAt = time.Now()
	cfg.Log("operator ready (pid %d) in %.3f s; log %s", op.PID, op.ReadyAt.Sub(op.StartedAt).Seconds(), cfg.LogPath)
	return op, nil
}

func (op *Operator) waitReady(ctx context.Context, timeout time.Duration) error {
	client := http.Client{Timeout: time.Second}
	deadline := time.Now().Add(timeout)
	for {
		resp, err := client.Get(op.HealthURL)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the operator did not report ready at %s within %s (log: %s)", op.HealthURL, timeout, op.Config.LogPath)
		}
		select {
		case <-op.exited:
			return fmt.Errorf("the operator exited before it was ready: %v (log: %s)", op.waitErr, op.Config.LogPath)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Stop sends the operator SIGTERM, by its PID, and waits for it to exit (SIGKILL after 30 s).
// Safe to call more than once, and after Kill.
func (op *Operator) Stop() error {
	op.stopOnce.Do(func() {
		defer op.log.Close()
		select {
		case <-op.exited:
			op.stopErr = fmt.Errorf("the operator had exited by itself: %v (log: %s)", op.waitErr, op.Config.LogPath)
			return
		default:
		}
		op.Config.Log("stopping the operator (SIGTERM to pid %d)", op.PID)
		if err := syscall.Kill(op.PID, syscall.SIGTERM); err != nil {
			op.stopErr = err
			return
		}
		select {
		case <-op.exited:
			if op.waitErr != nil {
				op.stopErr = fmt.Errorf("the operator exited with %v after SIGTERM", op.waitErr)
			}
		case <-time.After(30 * time.Second):
			_ = syscall.Kill(op.PID, syscall.SIGKILL)
			<-op.exited
			op.stopErr = errors.New("the operator did not stop within 30 s of SIGTERM: killed")
		}
	})
	return op.stopErr
}

// Kill ends the operator with SIGKILL, by its PID, as a crash would, and waits for it to exit.
// It is an error if the operator had already exited by itself.
func (op *Operator) Kill() error {
	var err error
	op.stopOnce.Do(func() {
		defer op.log.Close()
		select {
		case <-op.exited:
			err = fmt.Errorf("the operator had exited by itself: %v (log: %s)", op.waitErr, op.Config.LogPath)
			return
		default:
		}
		if kerr := syscall.Kill(op.PID, syscall.SIGKILL); kerr != nil {
			err = kerr
			return
		}
		<-op.exited
	})
	return err
}

// Alive reports whether the operator has not exited.
func (op *Operator) Alive() bool {
	select {
	case <-op.exited:
		return false
	default:
		return true
	}
}

// RSS reads a memory field of /proc/<pid>/status (VmRSS: resident now; VmHWM: the peak), in kB.
func (op *Operator) RSS(field string) (int64, error) {
	if !op.Alive() {
		return 0, errors.New("the operator is not running")
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", op.PID))
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
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, op.PID)
}

// Profile fetches a pprof profile from the operator's pprof endpoint into path: kind "profile"
// (CPU, for seconds, blocking that long) or "heap" (seconds ignored).
func (op *Operator) Profile(ctx context.Context, kind string, seconds int, path string) error {
	query := fmt.Sprintf("/debug/pprof/%s?seconds=%d", kind, seconds)
	if kind != "profile" {
		query = "/debug/pprof/" + kind
	}
	body, err := op.get(ctx, op.PprofAddr, query)
	if err != nil {
		return err
	}
	defer body.Close()
	return writeFile(path, body)
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
