package render

import (
	"fmt"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
)

// RetryableExitCodes are the exit codes the ExitCode restart policy restarts on: a process
// ended by a signal from outside (SIGINT 130, SIGKILL 137, SIGUSR1 138, SIGTERM 143), as by an
// out-of-memory kill or a node shutdown, rather than by its own error.
var RetryableExitCodes = map[int32]bool{130: true, 137: true, 138: true, 143: true}

// verdict is what becomes of a terminated replica.
type verdict int

const (
	keep    verdict = iota // leave it as it is
	restart                // delete it and create it again
	fail                   // it failed for good: the job fails
)

// restartVerdict applies a replica's restart policy to how its pod ended.
//
// Never: never restarts. OnFailure: restarts on a non-zero exit or a disruption. Always: restarts
// on any end (the job's own success is decided before this). ExitCode: restarts on a retryable
// exit code or a disruption; any other non-zero code is permanent.
func restartVerdict(policy batch.RestartPolicy, p *observedPod) verdict {
	// Note: a pod that exited 0 finished its work, even if a disruption was under way.
	if p.succeeded {
		if policy == batch.RestartPolicyAlways {
			return restart
		}
		return keep
	}
	switch policy {
	case batch.RestartPolicyOnFailure, batch.RestartPolicyAlways:
		return restart
	case batch.RestartPolicyExitCode:
		if p.disrupted || (p.exitCode != nil && RetryableExitCodes[*p.exitCode]) {
			return restart
		}
	}
	return fail
}

// outcome decides whether the job has just finished, and restarts what its policies restart.
// It reports true when the job is now Succeeded or Failed.
func (r *renderer) outcome() bool {
	d := &r.out.Decisions
	leaderSlot := r.leaderSlot()
	if r.job.Kubeflow != nil && r.job.Kubeflow.AllWorkers && leaderSlot.typ == "worker" {
		if r.allWorkersSucceeded() {
			d.Phase, d.Reason = batch.JobSucceeded, batch.ReasonSucceeded
			d.Message = "every worker succeeded (successPolicy AllWorkers)"
			return true
		}
	} else if leader := r.observed[leaderSlot]; leader != nil && leader.succeeded && !r.otherRunMode(leader) {
		d.Phase, d.Reason = batch.JobSucceeded, batch.ReasonSucceeded
		d.Message = fmt.Sprintf("%s succeeded", leader.pod.Name)
		return true
	}
	if r.deadlinePassed() {
		d.Phase, d.Reason = batch.JobFailed, batch.ReasonDeadlineExceeded
		d.Message = fmt.Sprintf("the job ran longer than runPolicy.activeDeadlineSeconds (%ds)", *r.job.ActiveDeadlineSeconds)
		return true
	}
	var due []*observedPod
	for _, t := range r.job.Replicas {
		for i := int32(0); i < t.Replicas; i++ {
			p := r.observed[slot{t.Type, i}]
			if p == nil || !p.terminated || p.deleting || (p.pod.DeletionTimestamp != nil && !p.nodeLost) {
				continue
			}
			switch restartVerdict(t.RestartPolicy, p) {
			case fail:
				d.Phase, d.Reason = batch.JobFailed, batch.ReasonFailed
				d.Message = fmt.Sprintf("%s %s and restartPolicy %s does not restart it", p.pod.Name, howItEnded(p), t.RestartPolicy)
				return true
			case restart:
				due = append(due, p)
			}
		}
	}
	if len(due) == 0 {
		return false
	}
	if d.BackoffCount+int32(len(due)) > r.job.BackoffLimit {
		d.Phase, d.Reason = batch.JobFailed, batch.ReasonBackoffLimitExceeded
		d.Message = fmt.Sprintf("%s %s; restarting it would exceed runPolicy.backoffLimit (%d)", due[0].pod.Name, howItEnded(due[0]), r.job.BackoffLimit)
		return true
	}
	for _, p := range due {
		r.delete(p, DeleteRestart)
		d.BackoffCount++
		d.Restarts = append(d.Restarts, Restart{
			Pod: p.pod.Name, Type: p.slot.typ, Index: p.slot.index, ExitCode: p.exitCode, Disrupted: p.disrupted,
		})
	}
	return false
}

// howItEnded says in a few words how a replica ended, without volatile detail.
func howItEnded(p *observedPod) string {
	switch {
	case p.nodeLost:
		return "lost its node"
	case p.disrupted:
		return "was evicted or preempted"
	case p.exitCode != nil:
		return fmt.Sprintf("exited with code %d", *p.exitCode)
	default:
		return "failed without an exit code"
	}
}

// leaderSlot is the replica whose success is the job's success: PyTorch's master (replica 0 of
// type master, else of the first type); TensorFlow's chief, else worker 0.
func (r *renderer) leaderSlot() slot {
	types := r.job.Replicas
	if r.job.Framework == TensorFlow {
		return slot{tfLeaderType(types), 0}
	}
	return slot{types[masterTypeIndex(types)].Type, 0}
}
