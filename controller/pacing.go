package controller

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// schedulerShares divides one bound on the pods waiting for the kube-scheduler between the jobs
// paced to it, whatever their kind: it gives each job's round its part and the room the bound
// leaves (render.Input's MaxUnscheduledPods and SchedulerRoom; render decides what a job creates
// with them).
//
// Why: the kube-scheduler binds in the order it placed pods, so a job created later waits behind
// every pod the operator has created ahead of the scheduler, whichever job they belong to. A bound
// per job alone lets three big jobs starting together keep three times as many pods waiting, and a
// small job created after them waits three times as long.
//
// A job is paced while its last round held pods back (render's Decisions.HeldForScheduler); it is
// then counted with the pods it left waiting for the scheduler (those observed waiting and those
// the round created). A job's part is an equal part of the operator's bound, the paced jobs and
// itself counted, at most the bound per job; its room is the bound less the other paced jobs'
// waiting pods. The others' counts are as of their last rounds; their bindings since then wake
// them (holdsPods), and their next rounds count again, so the room is at most one pod-event
// window behind.
type schedulerShares struct {
	// total is the operator's bound (0: none, each job has perJob); perJob is one job's (0: no
	// pacing at all).
	total, perJob int

	mu sync.Mutex
	// paced are the paced jobs' pods waiting for the scheduler, as of their last rounds; asking
	// are the rounds rendering now, with as many pods as each may leave waiting; waiting is the
	// sum of both.
	paced, asking map[types.UID]int
	waiting       int
}

func newSchedulerShares(total, perJob int) *schedulerShares {
	return &schedulerShares{total: total, perJob: perJob, paced: map[types.UID]int{}, asking: map[types.UID]int{}}
}

// parts are the job of uid's part of the bound and the room the bound leaves it, for the round
// about to render (0 and nil: not paced; a nil room: no bound for all jobs together). The round
// must be recorded with set once rendered.
//
// Until then the round counts against the others' room with as many pods as it may leave
// waiting, so that jobs whose rounds render at the same moment share the bound rather than each
// take all of it (measured: three big jobs created together kept 484 pods waiting before this,
// docs/benchmarks.md). It does not count among the paced jobs that divide the bound into parts:
// a burst's small jobs, rendering together, would otherwise shrink each other's parts below
// their few pods and be held.
func (s *schedulerShares) parts(uid types.UID) (part int, room *int) {
	if s == nil {
		return 0, nil
	}
	if s.perJob <= 0 || s.total <= 0 {
		return s.perJob, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.paced)
	own, ok := s.paced[uid]
	if !ok {
		n++
	}
	part = max(1, min(s.perJob, s.total/n))
	left := s.total - (s.waiting - own - s.asking[uid])
	s.waiting -= s.asking[uid]
	s.asking[uid] = max(0, max(1, min(part, left))-own)
	s.waiting += s.asking[uid]
	return part, &left
}

// set records the job of uid after its round: whether it held pods back and, if so, how many of
// its pods then wait for the scheduler.
func (s *schedulerShares) set(uid types.UID, held bool, waiting int) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.waiting -= s.paced[uid] + s.asking[uid]
	delete(s.paced, uid)
	delete(s.asking, uid)
	if held {
		s.paced[uid] = waiting
		s.waiting += waiting
	}
}

// paces reports whether the job of uid held pods back in its last round.
func (s *schedulerShares) paces(uid types.UID) bool {
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.paced[uid]
	return ok
}
