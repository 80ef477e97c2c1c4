package main

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
)

// The gang-restart scenario (issue 16): one worker of the big job (plain PyTorch, workers under
// OnFailure) exits 1. Without torchrun a replaced rank cannot rejoin, so the operator restarts
// every pod: all are deleted, and the new gang is created once the old pods are gone. The figure
// is the time from the exit to all 1,000 pods Running again and the status showing the job
// Running with every pod running, beside the time the same job took to get there when it was
// created; the target is at most 1.5 times that.

// gangRun is what the gang-restart scenario did.
type gangRun struct {
	job, pod string
	desired  int32
	trigger  time.Time // the bench asked the worker to exit
}

// gangRestart makes one worker of the big job exit 1 and waits until every pod of the job is a new
// one, running, and the status shows the job Running with all of them running again, settled.
func (b *bench) gangRestart(ctx context.Context, big bigRun) (gangRun, error) {
	run := gangRun{job: big.name, pod: fmt.Sprintf("%s-worker-%d", big.name, b.o.scale.bigWorkers/2), desired: int32(b.o.scale.bigPods())}
	logf("gang restart: %s exits 1; every pod of %s is restarted", run.pod, run.job)
	run.trigger = time.Now()
	patch := client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"metadata":{"annotations":{%q:"1"}}}`, simExitCode)))
	if err := b.kube.Patch(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: b.ns, Name: run.pod}}, patch); err != nil {
		return run, fmt.Errorf("making %s exit: %w", run.pod, err)
	}
	names := []string{run.job}
	err := b.waitFor(ctx, "gang restart: every pod new and running, the job Running with all of them, settled", b.o.phaseTimeout, func() (bool, string) {
		f := b.gangFigures(run, big)
		if !f.restart.ok {
			return false, b.progress(names) + "; " + f.restart.why
		}
		return b.t.quietFor() >= b.o.settle, "settling"
	})
	b.res.addPhase("gang restart", run.trigger, time.Now())
	return run, err
}

// gangFigures are the gang restart's time figures.
type gangFigures struct {
	pods int
	// start: the big job's create call to its status first showing Running with every pod running.
	start figure
	// restart: the exit asked for to the status showing the job Running with every (new) pod
	// running again, after it had shown otherwise.
	restart figure
	// failed, oldGone, newExist, newRunning: the exit asked for to the worker first seen Failed,
	// the last old pod gone, the last new pod first seen, the last new pod first seen Running.
	failed, oldGone, newExist, newRunning figure
	// counts are the status's backoffCount, disruptionCount and gangRestarts after the restart.
	counts string
}

func (b *bench) gangFigures(run gangRun, big bigRun) gangFigures {
	f := gangFigures{pods: int(run.desired)}
	if run.trigger.IsZero() {
		f.start, f.restart = missing("not run"), missing("not run")
		return f
	}
	b.t.view(func(pods map[string]*podRecord, jobs map[string]*jobRecord) {
		j := jobs[run.job]
		if j == nil {
			f.restart = missing("job not seen")
			return
		}
		if j.allRunning.IsZero() {
			f.start = missing("the job never showed all its pods running")
		} else {
			f.start = measured(j.allRunning.Sub(big.created))
		}
		var lastGone, lastSeen, lastRunning time.Time
		fresh, running := 0, 0
		for name, p := range pods {
			if p.job != run.job {
				continue
			}
			// The pod of the name at the trigger is the old gang's: the latest record seen before it.
			var prev *podRecord
			for _, r := range b.t.previous[name] {
				if r.seen.Before(run.trigger) {
					prev = r
				}
			}
			if prev != nil && prev.gone.After(run.trigger) {
				lastGone = later(lastGone, prev.gone)
				if name == run.pod && !prev.terminated.IsZero() {
					f.failed = measured(prev.terminated.Sub(run.trigger))
				}
			}
			if p.seen.After(run.trigger) && p.exists() {
				fresh++
				lastSeen = later(lastSeen, p.seen)
				if !p.running.IsZero() {
					running++
					lastRunning = later(lastRunning, p.running)
				}
			}
		}
		if fresh < f.pods || running < f.pods {
			f.restart = missing("%d of %d pods new, %d running", fresh, f.pods, running)
			return
		}
		f.oldGone, f.newExist, f.newRunning = measured(lastGone.Sub(run.trigger)), measured(lastSeen.Sub(run.trigger)), measured(lastRunning.Sub(run.trigger))
		left := false
		for _, h := range j.history {
			if !h.at.After(run.trigger) {
				continue
			}
			allRunning := h.phase == batch.JobRunning && h.running == run.desired
			switch {
			case !allRunning:
				left = true
			case left && !h.at.Before(lastRunning):
				f.restart = measured(h.at.Sub(run.trigger))
				f.counts = fmt.Sprintf("backoffCount %d, disruptionCount %d, gangRestarts %d", h.backoff, h.disruptions, h.restart)
				return
			}
		}
		f.restart = missing("the status has not shown the job Running with all %d new pods running", f.pods)
	})
	return f
}
