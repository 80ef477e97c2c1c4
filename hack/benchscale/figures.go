package main

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
)

// figure is one measured duration, or why there is none.
type figure struct {
	d   time.Duration
	ok  bool
	why string // when !ok
}

func measured(d time.Duration) figure { return figure{d: d, ok: true} }
func missing(format string, args ...any) figure {
	return figure{why: fmt.Sprintf(format, args...)}
}

// spread summarises one duration per job.
type spread struct {
	median, max time.Duration
	n, of       int // jobs measured, jobs in all
}

func spreadOf(ds []time.Duration, of int) spread {
	rs := make([]reading[time.Duration], len(ds))
	for i, d := range ds {
		rs[i] = reading[time.Duration]{v: d, ok: true}
	}
	m := medianOf(rs)
	return spread{median: m.median, max: m.hi, n: len(ds), of: of}
}

// burstFigures are the burst's time figures.
type burstFigures struct {
	jobs, pods int
	// allPodsExist: the first create call to the last of the pods first seen.
	allPodsExist figure
	// runningLag, per job: status.phase first seen Running minus its last pod first seen Running
	// (negative if the operator calls a job Running before all its pods run).
	runningLag spread
	// allRunningLag, per job: status.aggregate.running == desired first seen minus its last pod
	// first seen Running: the status shows every pod running.
	allRunningLag spread
	// succeededLag, per job: status.phase first seen Succeeded minus its master first seen Succeeded.
	succeededLag spread
}

// bigFigures are the big job's time figures.
type bigFigures struct {
	pods int
	// allPodsExist: the create call to the last pod first seen.
	allPodsExist figure
	// runningLag, allRunningLag: as for the burst, for the one job.
	runningLag, allRunningLag figure
	// createToRunning: the create call to status.phase first seen Running.
	createToRunning figure
	// createToPodsRunning: the create call to the last pod first seen Running (the scheduler's
	// and the fake kubelets' share).
	createToPodsRunning figure
}

// jobPods is what the watches saw of one job and its pods.
type jobPods struct {
	job  *jobRecord
	pods []*podRecord
}

// lastSeen: when the last of the job's pods was first seen, if all of them were.
func (jp jobPods) lastSeen() (time.Time, bool) {
	var last time.Time
	for _, p := range jp.pods {
		last = later(last, p.seen)
	}
	return last, len(jp.pods) >= int(jp.job.desired)
}

// lastRunning: when the last of the job's pods was first seen Running, if all of them were.
func (jp jobPods) lastRunning() (time.Time, bool) {
	var last time.Time
	n := 0
	for _, p := range jp.pods {
		if !p.running.IsZero() {
			n++
			last = later(last, p.running)
		}
	}
	return last, n >= int(jp.job.desired)
}

// masterSucceeded: when the job's master was first seen Succeeded.
func (jp jobPods) masterSucceeded() (time.Time, bool) {
	for _, p := range jp.pods {
		if p.replicaType == batch.PyTorchReplicaMaster && p.phase == corev1.PodSucceeded && !p.terminated.IsZero() {
			return p.terminated, true
		}
	}
	return time.Time{}, false
}

// collect groups the records of the named jobs with their pods.
func (b *bench) collect(names []string) map[string]jobPods {
	out := map[string]jobPods{}
	b.t.view(func(pods map[string]*podRecord, jobs map[string]*jobRecord) {
		for _, n := range names {
			if j := jobs[n]; j != nil {
				out[n] = jobPods{job: j}
			}
		}
		for _, p := range pods {
			if jp, ok := out[p.job]; ok {
				jp.pods = append(jp.pods, p)
				out[p.job] = jp
			}
		}
	})
	return out
}

func (b *bench) burstFigures(run burstRun) burstFigures {
	f := burstFigures{jobs: len(run.names), pods: len(run.names) * b.o.scale.podsPerJob()}
	var lastPod time.Time
	seen := 0
	var runningLags, allRunningLags, succeededLags []time.Duration
	for _, jp := range b.collect(run.names) {
		for _, p := range jp.pods {
			seen++
			lastPod = later(lastPod, p.seen)
		}
		if lastRunning, ok := jp.lastRunning(); ok {
			if at := jp.job.phaseSeen[batch.JobRunning]; !at.IsZero() {
				runningLags = append(runningLags, at.Sub(lastRunning))
			}
			if !jp.job.allRunning.IsZero() {
				allRunningLags = append(allRunningLags, jp.job.allRunning.Sub(lastRunning))
			}
		}
		if master, ok := jp.masterSucceeded(); ok {
			if at := jp.job.phaseSeen[batch.JobSucceeded]; !at.IsZero() {
				succeededLags = append(succeededLags, at.Sub(master))
			}
		}
	}
	if seen >= f.pods {
		f.allPodsExist = measured(lastPod.Sub(run.created))
	} else {
		f.allPodsExist = missing("%d of %d pods seen", seen, f.pods)
	}
	f.runningLag = spreadOf(runningLags, f.jobs)
	f.allRunningLag = spreadOf(allRunningLags, f.jobs)
	f.succeededLag = spreadOf(succeededLags, f.jobs)
	return f
}

func (b *bench) bigFigures(run bigRun) bigFigures {
	f := bigFigures{pods: b.o.scale.bigPods()}
	jp, ok := b.collect([]string{run.name})[run.name]
	if !ok {
		f.allPodsExist = missing("job not created")
		f.runningLag, f.allRunningLag, f.createToRunning, f.createToPodsRunning = f.allPodsExist, f.allPodsExist, f.allPodsExist, f.allPodsExist
		return f
	}
	if last, ok := jp.lastSeen(); ok {
		f.allPodsExist = measured(last.Sub(run.created))
	} else {
		f.allPodsExist = missing("%d of %d pods seen", len(jp.pods), f.pods)
	}
	runningAt := jp.job.phaseSeen[batch.JobRunning]
	if runningAt.IsZero() {
		f.createToRunning = missing("job never seen Running")
	} else {
		f.createToRunning = measured(runningAt.Sub(run.created))
	}
	lastRunning, ok := jp.lastRunning()
	switch {
	case !ok:
		f.createToPodsRunning = missing("not every pod seen Running")
		f.runningLag, f.allRunningLag = f.createToPodsRunning, f.createToPodsRunning
		return f
	case runningAt.IsZero():
		f.runningLag = f.createToRunning
	default:
		f.runningLag = measured(runningAt.Sub(lastRunning))
	}
	f.createToPodsRunning = measured(lastRunning.Sub(run.created))
	if jp.job.allRunning.IsZero() {
		f.allRunningLag = missing("aggregate.running == %d never seen", f.pods)
	} else {
		f.allRunningLag = measured(jp.job.allRunning.Sub(lastRunning))
	}
	return f
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
