package render

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ScaleDownWindow is how long after a scale-down a replica's failure is taken for its
// consequence. Scaling an elastic job down deletes its highest replicas; their peers' workers then
// fail on the lost rank, and torchrun's agents re-rendezvous in the smaller world if they can. On
// torch 2.4 to 2.7 they cannot: a stopped agent closes the rendezvous for every agent
// (local_elastic_agent.py's _shutdown calls the rendezvous handler's shutdown on a signal too,
// pytorch/pytorch#150916), so the remaining agents end with RendezvousClosedError a few seconds
// after the removed pod's agent stops (which takes up to its grace period); without maxRestarts
// they end on the first failed worker, on any torch. Those failures were asked for by the user,
// not a fault of the job's: they restart as disruptions (disruptionCount, no back-off) and leave
// backoffLimit alone. A replica that started after the scale-down, or fails later than this
// window, fails for a reason of its own and counts.
const ScaleDownWindow = 6 * time.Minute

// causeScaledDown words the end of a replica that failed in a scale-down's window.
const causeScaledDown = "exited with code %d after the job was scaled down"

// noteScaleDown records the time a running replica is deleted because the job was scaled down:
// its slot's type remains, with fewer replicas than its index (a pod of a removed type, or one
// labelled for a slot it is not named for, is a stray, not a scale-down).
func (r *renderer) noteScaleDown(p *observedPod) {
	// Note: only an elastic job's agents re-rendezvous in a smaller world. A job that is not
	// elastic and whose replicas are edited down keeps its other pods as they are (their peers
	// block until a collective times out, or, beside parameter servers, run on): a failure of
	// theirs is their own. The window used to apply to every job, so that under ExitCode a worker's
	// exit 1 within 6 minutes of an edit restarted uncounted instead of failing the job.
	if !r.job.elastic() || p.pod.DeletionTimestamp != nil || p.terminated || !p.ran() {
		return
	}
	for _, t := range r.job.Replicas {
		if t.Type == p.slot.typ && p.slot.index >= t.Replicas && p.pod.Name == PodName(r.job.Name, t.Type, p.slot.index) {
			r.out.Decisions.LastScaleDownTime = &metav1.Time{Time: r.in.Now.UTC().Truncate(time.Second)}
			return
		}
	}
}

// endedOnScaleDown marks a replica that exited with an error within ScaleDownWindow of the last
// scale-down, having started before it, as disrupted by it. Such a replica restarts the gang,
// whatever the job's restart scope: on torch 2.4 to 2.7 the rendezvous it left is closed for good
// (its state, closed flag included, lives in the store the host's agent keeps), so a replacement
// started alone beside a surviving host is refused at once (RendezvousClosedError) and, having
// started after the scale-down, would count against backoffLimit; only a new gang, with a new
// store, trains again.
func (r *renderer) endedOnScaleDown(p *observedPod) {
	at := r.out.Decisions.LastScaleDownTime
	if at == nil || !r.job.elastic() || p.disrupted || p.succeeded || p.exitCode == nil || *p.exitCode == 0 {
		return
	}
	if !p.started.IsZero() && p.started.After(at.Time) {
		return
	}
	end := p.finished
	if end.IsZero() {
		end = r.in.Now
	}
	if end.Before(at.Time) || end.After(at.Add(ScaleDownWindow)) {
		return
	}
	p.disrupted, p.scaledDown, p.cause = true, true, fmt.Sprintf(causeScaledDown, *p.exitCode)
}
