package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/trainyard/trainyard/hack/internal/localrun"
)

// incarnation is one operator process of the run: the soak kills the operator now and then and
// starts a new one, as a crash and a restart by the Deployment would.
type incarnation struct {
	n       int
	pid     int
	logPath string
	started time.Time
	ready   time.Time
	// warm: goroutines and RSS once the process has warmed up (its caches synced, the jobs
	// it found reconciled); end: just before it was killed or stopped.
	warmGoroutines, endGoroutines  float64
	warmRSSKB, endRSSKB, peakRSSKB int64
	warmed, ended                  bool
	how                            string // killed, stopped, crashed
}

// supervisor runs the operator: starts it, kills it by its PID, notices a crash, and measures
// each process.
type supervisor struct {
	base   localrun.OperatorConfig // LogPath is set per process
	dir    string
	warmUp time.Duration
	check  *checker
	log    localrun.Logf

	// life serialises the process's life: a kill and its restart, a crash and its restart.
	life sync.Mutex

	mu           sync.Mutex
	op           *localrun.Operator
	cur          *incarnation
	incarnations []*incarnation
}

// start starts a new operator process and waits until it is ready.
func (s *supervisor) start(ctx context.Context) error {
	s.mu.Lock()
	n := len(s.incarnations) + 1
	s.mu.Unlock()
	cfg := s.base
	cfg.LogPath = filepath.Join(s.dir, fmt.Sprintf("operator-%d.log", n))
	op, err := localrun.StartOperator(ctx, cfg)
	if err != nil {
		return err
	}
	inc := &incarnation{n: n, pid: op.PID, logPath: cfg.LogPath, started: op.StartedAt, ready: op.ReadyAt}
	s.mu.Lock()
	s.op, s.cur = op, inc
	s.incarnations = append(s.incarnations, inc)
	s.mu.Unlock()
	go s.warm(ctx, op, inc)
	return nil
}

// warm measures a process once it has warmed up.
func (s *supervisor) warm(ctx context.Context, op *localrun.Operator, inc *incarnation) {
	if localrun.Sleep(ctx, s.warmUp) != nil {
		return
	}
	g, rss, err := measure(ctx, op)
	if err != nil {
		return // killed meanwhile
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !inc.ended {
		inc.warmGoroutines, inc.warmRSSKB, inc.warmed = g, rss, true
	}
}

// measure reads the operator's goroutines (go_goroutines on its metrics endpoint) and RSS.
func measure(ctx context.Context, op *localrun.Operator) (float64, int64, error) {
	g, err := op.Metric(ctx, "go_goroutines")
	if err != nil {
		return 0, 0, err
	}
	rss, err := op.RSS("VmRSS")
	return g, rss, err
}

// end measures the current process and takes it out of service; the caller stops or kills it.
func (s *supervisor) end(ctx context.Context, how string) (*localrun.Operator, *incarnation) {
	s.mu.Lock()
	op, inc := s.op, s.cur
	s.op, s.cur = nil, nil
	s.mu.Unlock()
	if op == nil {
		return nil, nil
	}
	g, rss, err := measure(ctx, op)
	peak, _ := op.RSS("VmHWM")
	s.mu.Lock()
	if err == nil {
		inc.endGoroutines, inc.endRSSKB = g, rss
	}
	inc.peakRSSKB, inc.ended, inc.how = peak, true, how
	s.mu.Unlock()
	return op, inc
}

// killAndRestart ends the operator with SIGKILL, by its PID, and starts a new one after downtime.
func (s *supervisor) killAndRestart(ctx context.Context, downtime time.Duration) error {
	s.life.Lock()
	defer s.life.Unlock()
	op, inc := s.end(ctx, "killed")
	if op == nil {
		return errors.New("no operator to kill")
	}
	s.log("killing the operator (SIGKILL to pid %d, process %d, up %s); a new one in %s", op.PID, inc.n, time.Since(inc.ready).Round(time.Second), downtime)
	if err := op.Kill(); err != nil {
		return err
	}
	if err := localrun.Sleep(ctx, downtime); err != nil {
		return err
	}
	return s.start(ctx)
}

// stop ends the operator with SIGTERM, by its PID.
func (s *supervisor) stop(ctx context.Context) error {
	s.life.Lock()
	defer s.life.Unlock()
	op, _ := s.end(ctx, "stopped")
	if op == nil {
		return nil
	}
	return op.Stop()
}

// state is what the convergence invariants need: up, and ready since when.
func (s *supervisor) state() operatorState {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.op == nil {
		return operatorState{}
	}
	return operatorState{up: true, readySince: s.cur.ready}
}

// current is the running process, or nil.
func (s *supervisor) current() (*localrun.Operator, *incarnation) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.op, s.cur
}

// watchCrashes notices an operator that exited without being asked to: a violation (the log
// says why) after which a new process is started, so the run goes on.
func (s *supervisor) watchCrashes(ctx context.Context) error {
	for {
		if err := localrun.Sleep(ctx, time.Second); err != nil {
			return nil
		}
		if err := s.restartCrashed(ctx); err != nil {
			return err
		}
	}
}

// restartCrashed reports and replaces a process that exited by itself.
func (s *supervisor) restartCrashed(ctx context.Context) error {
	s.life.Lock()
	defer s.life.Unlock()
	s.mu.Lock()
	op, inc := s.op, s.cur
	crashed := op != nil && !op.Alive()
	if crashed {
		s.op, s.cur = nil, nil
		inc.ended, inc.how = true, "crashed"
	}
	s.mu.Unlock()
	if !crashed {
		return nil
	}
	_ = op.Stop() // closes its log
	s.check.report(invOperatorAlive, fmt.Sprintf("operator process %d (pid %d)", inc.n, inc.pid),
		"exited by itself %s after it was ready; see %s", time.Since(inc.ready).Round(time.Second), inc.logPath)
	if err := s.start(ctx); err != nil {
		return fmt.Errorf("restarting the operator after it crashed: %w", err)
	}
	return nil
}

func (s *supervisor) all() []incarnation {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]incarnation, len(s.incarnations))
	for i, inc := range s.incarnations {
		out[i] = *inc
	}
	return out
}
