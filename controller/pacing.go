package controller

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// schedulerShares divides one bound on the pods waiting for the kube-scheduler between the jobs
// paced to it, whatever their kind (render.Input.MaxUnscheduledPods is one job's share).
//
// Why: the kube-scheduler binds in the order it placed pods, so a job created later waits behind
// every pod the operator has created ahead of the scheduler, whichever job they belong to. A bound
// per job alone lets three big jobs starting together keep three times as many pods waiting, and a
// small job created after them waits three times as long. Shared, the pods waiting stay about the
// operator's bound however many big jobs start together, and each paced job gets an equal part.
//
// A job is paced while its last round held pods back (render's Decisions.HeldForScheduler). Its
// share is the operator's bound divided by the paced jobs, itself counted, at most the bound per
// job and at least one pod. A small job whose missing pods fit in that share creates them all and
// is not paced; nor is a gang-scheduled job, which render never holds. When a job stops being
// paced, the others' shares grow at their next round (their bindings wake them); when a job
// starts, the others create nothing until their pods waiting fall below their new share.
type schedulerShares struct {
	// total is the operator's bound (0: none, each job has perJob); perJob is one job's (0: no
	// pacing at all).
	total, perJob int

	mu    sync.Mutex
	paced map[types.UID]struct{}
}

func newSchedulerShares(total, perJob int) *schedulerShares {
	return &schedulerShares{total: total, perJob: perJob, paced: map[types.UID]struct{}{}}
}

// of is the share of the job of uid: the most of its pods that may wait for the scheduler this
// round (0: not paced).
func (s *schedulerShares) of(uid types.UID) int {
	if s == nil {
		return 0
	}
	if s.perJob <= 0 || s.total <= 0 {
		return s.perJob
	}
	s.mu.Lock()
	n := len(s.paced)
	if _, ok := s.paced[uid]; !ok {
		n++
	}
	s.mu.Unlock()
	return min(s.perJob, max(1, s.total/n))
}

// set records whether the job of uid held pods back in its last round.
func (s *schedulerShares) set(uid types.UID, held bool) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if held {
		s.paced[uid] = struct{}{}
	} else {
		delete(s.paced, uid)
	}
}
