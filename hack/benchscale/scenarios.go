package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
	"github.com/trainyard/trainyard/hack/internal/localrun"
)

// Simulation annotations read by the cluster's KWOK stages (hack/kwok/pod-stages.yaml).
const (
	simRunDuration = "sim.trainyard.dev/run-duration"
	simExitCode    = "sim.trainyard.dev/exit-code"
)

// bench plays the scenarios against the operator, in a namespace of its own.
type bench struct {
	o           options
	op          *localrun.Operator
	res         *results
	kube        client.Client
	ns          string
	t           *tracker
	stopWatches context.CancelFunc
}

// newBench creates the run's namespace and starts the watches.
func newBench(ctx context.Context, conn localrun.Connection, o options, op *localrun.Operator, res *results) (*bench, error) {
	kube := conn.Kube
	b := &bench{o: o, op: op, res: res, kube: kube, t: newTracker(), stopWatches: func() {}}

	// A fresh namespace per run, so a cluster kept from an earlier run holds nothing of ours.
	ns := fmt.Sprintf("bench-%d", time.Now().Unix())
	namespace := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{localrun.ManagedByLabel: "benchscale"}}}
	if err := kube.Create(ctx, namespace); err != nil {
		return nil, fmt.Errorf("creating namespace %s: %w", ns, err)
	}
	b.ns = ns
	// Pods are refused until the namespace's default ServiceAccount exists.
	if err := b.waitFor(ctx, "the default ServiceAccount of "+ns, time.Minute, func() (bool, string) {
		err := kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: "default"}, &corev1.ServiceAccount{})
		return err == nil, fmt.Sprint(err)
	}); err != nil {
		return nil, err
	}
	wctx, cancel := context.WithCancel(ctx)
	if err := watchJobsAndPods(wctx, conn, ns, b.t); err != nil {
		cancel()
		return nil, err
	}
	b.stopWatches = cancel
	logf("namespace %s; watching its PyTorchTrainingJobs and their pods", ns)
	return b, nil
}

// run plays the scenarios chosen (--scenarios) in order: idle, burst, completion, deletion, big
// job, gang restart (of the big job).
func (b *bench) run(ctx context.Context) error {
	logf("idle: %s before reading the operator's RSS", b.o.idle)
	if err := localrun.Sleep(ctx, time.Until(b.op.ReadyAt.Add(b.o.idle))); err != nil {
		return err
	}
	b.res.idleRSSKB, _ = b.op.RSS("VmRSS")

	if b.o.scenarios["burst"] {
		burst, err := b.burst(ctx)
		b.res.burst = b.burstFigures(burst)
		if err != nil {
			return err
		}
		err = b.completion(ctx, burst)
		b.res.burst = b.burstFigures(burst)
		if err != nil {
			return err
		}
		if err := b.deleteJobs(ctx, burst.names); err != nil {
			return err
		}
	}
	big, err := b.bigJob(ctx)
	b.res.big = b.bigFigures(big)
	if err != nil || !b.o.scenarios["gang-restart"] {
		return err
	}
	gang, err := b.gangRestart(ctx, big)
	b.res.gang = b.gangFigures(gang, big)
	b.res.gangRun = true
	return err
}

// burstRun is what the burst scenario created.
type burstRun struct {
	names   []string
	created time.Time // the first create call
}

// burst creates the burst jobs at once and waits until every one is Running with all its pods
// and its status has settled.
func (b *bench) burst(ctx context.Context) (burstRun, error) {
	s := b.o.scale
	run := burstRun{names: make([]string, s.burstJobs)}
	for i := range run.names {
		run.names[i] = fmt.Sprintf("burst-%02d", i)
	}
	logf("burst: creating %d jobs x %d pods (%d goroutines)", s.burstJobs, s.podsPerJob(), s.createWorkers)
	run.created = time.Now()
	if err := b.createJobs(ctx, run.names, s.workersPerJob, true); err != nil {
		return run, err
	}
	logf("burst: %d jobs created in %s", len(run.names), seconds(time.Since(run.created)))

	var end time.Time
	cutShort := false
	err := b.waitFor(ctx, "burst: every job Running with all its pods running, status settled", b.o.phaseTimeout, func() (bool, string) {
		done := true
		b.t.view(func(pods map[string]*podRecord, jobs map[string]*jobRecord) {
			for _, n := range run.names {
				j := jobs[n]
				if j.phaseSeen[batch.JobRunning].IsZero() || j.allRunning.IsZero() {
					done = false
				}
			}
			// A master that ends starts the completion phase: the burst phase cannot settle
			// after that, so it ends there.
			for _, p := range pods {
				if p.replicaType == batch.PyTorchReplicaMaster && !p.terminated.IsZero() && slices.Contains(run.names, p.job) {
					if end.IsZero() || p.terminated.Before(end) {
						end = p.terminated
					}
				}
			}
		})
		if !done {
			end = time.Time{}
			return false, b.progress(run.names)
		}
		if !end.IsZero() {
			cutShort = true
			return true, ""
		}
		if b.t.quietFor() >= b.o.settle {
			end = time.Now()
			return true, ""
		}
		return false, "settling"
	})
	if end.IsZero() {
		end = time.Now()
	}
	b.res.addPhase("burst", run.created, end)
	if cutShort {
		b.res.notes = append(b.res.notes, "burst phase: a master exited before the status had settled; the phase ends there (raise --master-run-duration)")
	}
	return run, err
}

// completion waits until every burst job has Succeeded (its master exits 0) and the operator has
// cleaned up the pods still running, and the status has settled.
func (b *bench) completion(ctx context.Context, run burstRun) error {
	from := time.Now()
	logf("completion: waiting for the masters to exit 0 (run-duration %s) and the jobs to succeed", b.o.masterRun)
	err := b.waitFor(ctx, "completion: every job Succeeded, its unfinished pods gone, status settled", b.o.masterRun+b.o.phaseTimeout, func() (bool, string) {
		done := true
		b.t.view(func(pods map[string]*podRecord, jobs map[string]*jobRecord) {
			for _, n := range run.names {
				if jobs[n].phase != batch.JobSucceeded {
					done = false
				}
			}
			for _, p := range pods {
				if p.unfinished() && slices.Contains(run.names, p.job) {
					done = false
				}
			}
		})
		if !done {
			return false, b.progress(run.names)
		}
		return b.t.quietFor() >= b.o.settle, "settling"
	})
	b.res.addPhase("completion", from, time.Now())
	return err
}

// deleteJobs deletes the jobs and waits until they and their pods are gone.
func (b *bench) deleteJobs(ctx context.Context, names []string) error {
	from := time.Now()
	logf("deleting the %d burst jobs", len(names))
	err := parallel(ctx, b.o.scale.createWorkers, names, func(ctx context.Context, name string) error {
		job := &batch.PyTorchTrainingJob{ObjectMeta: metav1.ObjectMeta{Namespace: b.ns, Name: name}}
		err := b.kube.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationBackground))
		return client.IgnoreNotFound(err)
	})
	if err != nil {
		return err
	}
	err = b.waitFor(ctx, "deletion: the burst jobs and their pods gone", b.o.phaseTimeout, func() (bool, string) {
		left, jobsLeft := 0, 0
		b.t.view(func(pods map[string]*podRecord, jobs map[string]*jobRecord) {
			for _, p := range pods {
				if p.exists() && slices.Contains(names, p.job) {
					left++
				}
			}
			for _, n := range names {
				if jobs[n].gone.IsZero() {
					jobsLeft++
				}
			}
		})
		return left == 0 && jobsLeft == 0, fmt.Sprintf("%d jobs, %d pods left", jobsLeft, left)
	})
	b.res.addPhase("delete", from, time.Now())
	return err
}

// bigRun is what the big-job scenario created.
type bigRun struct {
	name    string
	created time.Time
}

// bigJob creates one job of 1 master and many workers and waits until it is Running with every
// pod running and its status settled; then reads the operator's RSS.
func (b *bench) bigJob(ctx context.Context) (bigRun, error) {
	run := bigRun{name: "big"}
	var profiled sync.WaitGroup
	if b.o.pprof && b.op.PprofAddr != "" {
		path := filepath.Join(b.o.dir, "cpu.pprof")
		profiled.Add(1)
		go func() {
			defer profiled.Done()
			logf("big job: CPU profile for %d s into %s", b.o.pprofSeconds, path)
			if err := b.op.Profile(ctx, "profile", b.o.pprofSeconds, path); err != nil {
				logf("big job: CPU profile: %v", err)
				return
			}
			b.res.cpuProfile = path
		}()
	}
	logf("big job: creating 1 master + %d workers", b.o.scale.bigWorkers)
	run.created = time.Now()
	// Note: its workers restart OnFailure, for the gang-restart scenario; nothing fails before.
	if err := b.createJobs(ctx, []string{run.name}, b.o.scale.bigWorkers, false); err != nil {
		return run, err
	}
	names := []string{run.name}
	err := b.waitFor(ctx, "big job: Running with all its pods running, status settled", b.o.phaseTimeout, func() (bool, string) {
		done := true
		b.t.view(func(_ map[string]*podRecord, jobs map[string]*jobRecord) {
			j := jobs[run.name]
			done = j.phase == batch.JobRunning && j.running == j.desired
		})
		if !done {
			return false, b.progress(names)
		}
		return b.t.quietFor() >= b.o.settle, "settling"
	})
	b.res.addPhase("big job", run.created, time.Now())
	if err == nil {
		b.res.bigRSSKB, _ = b.op.RSS("VmRSS")
	}
	profiled.Wait()
	return run, err
}

// createJobs creates PyTorchTrainingJobs of 1 master and the given workers (restartPolicy
// OnFailure), concurrently. Burst masters exit 0 after --master-run-duration; other pods run until
// deleted or told to exit.
func (b *bench) createJobs(ctx context.Context, names []string, workers int, masterEnds bool) error {
	return parallel(ctx, b.o.scale.createWorkers, names, func(ctx context.Context, name string) error {
		var masterAnnotations map[string]string
		if masterEnds {
			masterAnnotations = map[string]string{simRunDuration: b.o.masterRun.String(), simExitCode: "0"}
		}
		master, worker := podTemplate(masterAnnotations), podTemplate(nil)
		job := &batch.PyTorchTrainingJob{
			ObjectMeta: metav1.ObjectMeta{Namespace: b.ns, Name: name},
			Spec: batch.PyTorchTrainingJobSpec{ReplicaSpecs: []batch.PyTorchReplicaSpec{
				{Type: batch.PyTorchReplicaMaster, ReplicaTemplate: batch.ReplicaTemplate{Replicas: ptrTo[int32](1), Template: master, RestartPolicy: batch.RestartPolicyOnFailure}},
				{Type: batch.PyTorchReplicaWorker, ReplicaTemplate: batch.ReplicaTemplate{Replicas: ptrTo(int32(workers)), Template: worker, RestartPolicy: batch.RestartPolicyOnFailure}},
			}},
		}
		b.t.expectJob(name, int32(1+workers))
		if err := b.kube.Create(ctx, job); err != nil {
			return fmt.Errorf("creating job %s: %w", name, err)
		}
		return nil
	})
}

// podTemplate: one container named pytorch with tiny requests; the image is never pulled.
func podTemplate(annotations map[string]string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Annotations: annotations},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name:  "pytorch",
			Image: "example.invalid/pytorch:bench",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse("10m"),
				corev1.ResourceMemory: resource.MustParse("16Mi"),
			}},
		}}},
	}
}

// progress summarises the jobs and their pods, for the progress lines and timeout messages.
func (b *bench) progress(names []string) string {
	var seen, running, ended, want int
	phases := map[string]int{}
	allRunning := 0
	b.t.view(func(pods map[string]*podRecord, jobs map[string]*jobRecord) {
		for _, n := range names {
			j := jobs[n]
			want += int(j.desired)
			phase := string(j.phase)
			if phase == "" {
				phase = "(none)"
			}
			phases[phase]++
			if !j.allRunning.IsZero() {
				allRunning++
			}
		}
		for _, p := range pods {
			if !slices.Contains(names, p.job) || !p.exists() {
				continue
			}
			seen++
			switch {
			case p.unfinished() && p.phase == corev1.PodRunning:
				running++
			case !p.unfinished():
				ended++
			}
		}
	})
	var ps []string
	for _, k := range slices.Sorted(maps.Keys(phases)) {
		ps = append(ps, fmt.Sprintf("%s %d", k, phases[k]))
	}
	return fmt.Sprintf("pods (want %d): %d exist, %d running, %d ended; jobs: %s; aggregate.running == desired seen for %d of %d",
		want, seen, running, ended, strings.Join(ps, ", "), allRunning, len(names))
}

// waitFor polls cond every 20 ms until it holds, printing its progress every 5 s. It fails when
// the timeout passes, ctx ends or the operator exits. The figures never depend on when the poll
// notices: they come from the watches' timestamps.
func (b *bench) waitFor(ctx context.Context, what string, timeout time.Duration, cond func() (bool, string)) error {
	start := time.Now()
	nextLog := start.Add(5 * time.Second)
	for {
		done, progress := cond()
		if done {
			logf("%s: done in %s", what, seconds(time.Since(start)))
			return nil
		}
		if b.op != nil && !b.op.Alive() {
			return fmt.Errorf("%s: the operator exited (log: %s); %s", what, b.op.Config.LogPath, progress)
		}
		if time.Since(start) > timeout {
			hint := ""
			if b.op != nil {
				hint = fmt.Sprintf(". Is the operator reconciling? See %s", b.op.Config.LogPath)
			}
			return fmt.Errorf("%s: not done within %s: %s%s", what, timeout, progress, hint)
		}
		if time.Now().After(nextLog) {
			logf("%s: %s", what, progress)
			nextLog = nextLog.Add(5 * time.Second)
		}
		if err := localrun.Sleep(ctx, 20*time.Millisecond); err != nil {
			if errors.Is(err, context.Canceled) {
				return fmt.Errorf("%s: interrupted: %s", what, progress)
			}
			return fmt.Errorf("%s: %w", what, err)
		}
	}
}

// deleteNamespace removes the run's namespace (and so its jobs and pods) from a kept cluster.
func (b *bench) deleteNamespace() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := b.kube.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: b.ns}})
	if err != nil && !apierrors.IsNotFound(err) {
		logf("deleting namespace %s: %v", b.ns, err)
	}
}

// parallel runs f on every item with n goroutines; the first error stops the rest.
func parallel(ctx context.Context, n int, items []string, f func(context.Context, string) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	work := make(chan string)
	errs := make(chan error, len(items))
	var wg sync.WaitGroup
	for range min(n, len(items)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for item := range work {
				if err := f(ctx, item); err != nil {
					errs <- err
					cancel()
				}
			}
		}()
	}
feed:
	for _, item := range items {
		select {
		case work <- item:
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	return ctx.Err()
}

func ptrTo[T any](v T) *T { return &v }
