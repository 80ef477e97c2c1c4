package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
	kubeflowv1 "github.com/trainyard/trainyard/apis/kubeflow/v1"
	"github.com/trainyard/trainyard/hack/internal/localrun"
)

// comparison plays the sizes scenario: the floor at every size, then, for each API, every size
// --runs times, each run against a fresh operator process.
type comparison struct {
	o       options
	repo    string
	cluster localrun.Cluster
	conn    localrun.Connection // the bench's own (admin) client: creates jobs, watches
	id      localrun.Identity   // the operator's and the floor's ServiceAccount
	flow    localrun.Flow       // how APF classifies the identity's requests
	runID   string              // suffix of the run's namespaces
	floors  []floorResult
	// sizes holds, per API and size in the order played, the results of its runs (--runs; fewer
	// when one broke).
	sizes [][]sizeResult
	notes []string
	// settleNS holds the canary pods that check the cluster is idle before each size (settle).
	settleNS string
	// controlPlaneCPU reads the CPU seconds each of the cluster's processes has used so far (nil:
	// unknown: settle does not wait for them to be quiet, and no size reports them).
	controlPlaneCPU func() (localrun.ProcessCPU, error)
}

// sizeResult is what one API's operator did at one size, in one of its runs.
type sizeResult struct {
	api  api
	size size
	ns   string
	// run is the run's number, from 1, of runs (--runs).
	run, runs int
	// created is the first create call; started the end of the start phase (every job Running
	// with all its pods, settled, or a master's exit); end when every job and pod was gone.
	created, started, end time.Time
	// partFigures are the size's time figures from created; in a mixed size the first part's.
	partFigures
	// then, in a mixed size, are the second part's figures, from thenCreated, its first create.
	thenCreated time.Time
	then        partFigures
	// cpu is the operator's CPU seconds from the first create to the end; cpuStart those of the
	// start phase.
	cpu, cpuStart float64
	cpuOK         bool
	// controlPlaneStart is the CPU seconds each of the cluster's processes used in the start
	// phase (nil: not read).
	controlPlaneStart localrun.ProcessCPU
	// rssRunningKB is VmRSS at the start phase's end; hwmKB VmHWM at the end (a fresh operator
	// per run: the run's peak).
	rssRunningKB, hwmKB int64
	// rest409, rest429: rest_client_requests_total answered 409 and 429, on the operator's
	// /metrics, over the size (restOK: both readings worked).
	rest409, rest429 float64
	restOK           bool
	// gateCuts: how often the operator's write gate halved its bound (trainyard_write_gate_cuts_total;
	// gateOK: the operator exports it).
	gateCuts float64
	gateOK   bool
	// apfRejected: apiserver_flowcontrol_rejected_requests_total of the identity's priority
	// level over the size (apfOK: both readings worked).
	apfRejected float64
	apfOK       bool
	// reconciles, reconcilesStart: controller_runtime_reconcile_total, every controller's, over
	// the size and its start phase (reconcilesOK: the readings worked). Both operators export it.
	reconciles, reconcilesStart float64
	reconcilesOK                bool
	operatorCmd                 string
	broke                       string // why the run did not finish
	// podsTerminating, podsGone, servicesGone (--delete-jobs): the big jobs' deletion to their last
	// pod marked for deletion (asked to stop: a kubelet would stop its containers and free its
	// GPUs), to their last pod gone (the fake kubelet confirms), to their last Service gone; the
	// operator running.
	podsTerminating, podsGone, servicesGone figure
}

// runName is "run 2/3" when the size is played more than once (--runs), else "".
func (r sizeResult) runName() string {
	if r.runs <= 1 {
		return ""
	}
	return fmt.Sprintf("run %d/%d", r.run, r.runs)
}

// sizeName names the size and the run: "200x8", "200x8 run 2/3".
func (r sizeResult) sizeName() string {
	return strings.TrimSpace(r.size.String() + " " + r.runName())
}

// label names the run in the log, the notes and the writes table: "t9k 200x8", "t9k 200x8 run 2/3".
func (r sizeResult) label() string { return string(r.api) + " " + r.sizeName() }

// fileName names the run's files (the operator's log, its profiles): "t9k-200x8",
// "t9k-200x8-run2".
func (r sizeResult) fileName() string {
	name := fmt.Sprintf("%s-%s", r.api, r.size)
	if r.runs > 1 {
		name += fmt.Sprintf("-run%d", r.run)
	}
	return name
}

// jobNames names the run's jobs, a list per part of the size: the part's names, prefixed with
// the run when there are several (r2-s200x8-007), so that a run's jobs never meet the Services of
// the last run's jobs of the same name, which the garbage collector may not yet have removed. A
// mixed size's begin with m rather than s (m1x5000, m50x8-007), for the same reason: they must
// not meet those of its parts played alone.
func (r sizeResult) jobNames() [][]string {
	var names [][]string
	for _, part := range r.size.parts() {
		names = append(names, make([]string, part.jobs))
		for i := range part.jobs {
			name := part.jobName(i)
			if r.size.mixed() {
				name = "m" + name[1:]
			}
			if r.runs > 1 {
				name = fmt.Sprintf("r%d-%s", r.run, name)
			}
			names[len(names)-1][i] = name
		}
	}
	return names
}

// windowName names a run's audit window ("" for the whole size, "start" for the start phase):
// each run has its own.
func (r sizeResult) windowName(phase string) string {
	return strings.TrimSpace(r.label() + " " + phase)
}

// run plays the floor and then every API at every size; a run of a size that breaks is reported
// and the run goes on with the next API (the operator may be wedged), or stops if ctx ended.
func (c *comparison) run(ctx context.Context) error {
	var errs []error
	ns, err := c.namespace(ctx, "settle")
	if err != nil {
		return err
	}
	c.settleNS = ns
	if c.o.floor {
		if err := c.runFloor(ctx); err != nil {
			errs = append(errs, err)
			if ctx.Err() != nil {
				return errors.Join(errs...)
			}
		}
	}
	for _, a := range c.o.apis {
		if err := c.runAPI(ctx, a); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", a, err))
			if ctx.Err() != nil {
				break
			}
		}
	}
	return errors.Join(errs...)
}

// runAPI plays every size with one API, --runs times in a row, each run against a fresh
// operator, in a namespace of the API's own.
func (c *comparison) runAPI(ctx context.Context, a api) error {
	ns, err := c.namespace(ctx, string(a))
	if err != nil {
		return err
	}
	t := newTracker()
	if a == apiKubeflow {
		// Kubeflow's own pod labels, which Trainyard puts on a kubeflow.org job's pods too, and
		// the peer (--peer) alone.
		t = newTrackerOf(kubeflowv1.LabelJobName, kubeflowv1.LabelReplicaType)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := watchBothAPIs(wctx, c.conn, ns, t); err != nil {
		return err
	}
	for _, s := range c.o.sizes {
		c.sizes = append(c.sizes, nil)
		runs := &c.sizes[len(c.sizes)-1]
		for run := 1; run <= c.o.runs; run++ {
			r := sizeResult{api: a, size: s, ns: ns, run: run, runs: c.o.runs}
			err := c.settle(ctx, r.label())
			if err == nil {
				err = c.playSize(ctx, t, &r)
			}
			if err != nil {
				r.broke = err.Error()
			}
			*runs = append(*runs, r)
			if err != nil {
				return fmt.Errorf("%s: %w", r.sizeName(), err)
			}
		}
	}
	return nil
}

// playSize starts an operator, creates the size's jobs, waits for them to run (and, for a burst,
// to succeed), deletes them and waits until they and their pods are gone, measuring as it goes.
func (c *comparison) playSize(ctx context.Context, t *tracker, r *sizeResult) error {
	s := r.size
	logf("%s: starting a fresh operator", r.label())
	op, err := localrun.StartOperator(ctx, localrun.OperatorConfig{
		Bin:        localrun.InRepo(c.repo, c.o.operatorBin),
		Kubeconfig: c.id.Kubeconfig,
		LogPath:    filepath.Join(c.o.dir, "operator-"+r.fileName()+".log"),
		ExtraFlags: c.o.operatorFlags,
		Pprof:      c.o.pprof,
		Log:        logf,
	})
	if err != nil {
		return err
	}
	defer op.Stop() // a no-op once stopped below
	r.operatorCmd = "bin/trainyard " + fmt.Sprint(op.Args)
	// Its caches synced and nothing to do: a moment for the start-up garbage to settle.
	if err := localrun.Sleep(ctx, time.Until(op.ReadyAt.Add(2*time.Second))); err != nil {
		return err
	}
	b := &bench{o: c.o, op: op, res: &results{}, kube: c.conn.Kube, ns: r.ns, t: t}
	before := c.readCounters(ctx, op)
	cpBefore := c.readControlPlane()
	t.reset()

	parts, partNames := s.parts(), r.jobNames()
	names := slices.Concat(partNames...)
	profiled := c.profile(ctx, op, r, "profile")
	defer profiled.Wait()
	defer c.profileControlPlane(ctx, r.fileName(), r.label()).Wait()
	stopSampling := func() []gateSample { return nil }
	if c.o.gateTimeline {
		stopSampling = sampleGate(ctx, op)
	}
	r.created = time.Now()
	err = c.createJobs(ctx, t, r, parts[0], partNames[0], "")
	if then, ok := s.then(); ok && err == nil {
		// The second part starts while the first's pods are being created: once a fifth exist.
		want := parts[0].pods() / 5
		err = b.waitFor(ctx, fmt.Sprintf("%s: %d pods of the first part", r.label(), want), c.o.phaseTimeout, func() (bool, string) {
			n := podsSeen(t, partNames[0])
			return n >= want, fmt.Sprintf("%d pods seen", n)
		})
		class := ""
		if err == nil && c.o.thenPriority != 0 {
			class = thenPriorityClass
			err = c.ensurePriorityClass(ctx, class, c.o.thenPriority)
		}
		if err == nil {
			r.thenCreated = time.Now()
			err = c.createJobs(ctx, t, r, then, partNames[1], class)
		}
	}
	if err == nil {
		err = c.waitStarted(ctx, b, r, names)
	}
	r.started = time.Now()
	r.controlPlaneStart = c.controlPlaneSince(cpBefore)
	writeTimeline(filepath.Join(c.o.dir, "timeline-"+r.fileName()+".tsv"), t, r.created, stopSampling())
	r.rssRunningKB, _ = op.RSS("VmRSS")
	c.profile(ctx, op, r, "heap").Wait()
	mid := c.readCounters(ctx, op)
	r.cpuStart = mid.cpu - before.cpu
	r.reconcilesStart = mid.reconciles - before.reconciles
	c.figures(t, r, partNames)
	if bursts := burstJobs(parts, partNames); err == nil && len(bursts) > 0 {
		err = c.waitCompleted(ctx, b, r, bursts)
		c.figures(t, r, partNames)
	}
	// The size ends here: the operator's counters are read and the operator stopped before the
	// bench tears the size down (deleteAll), so that no operator acts on what it deletes.
	r.end = time.Now()
	after := c.readCounters(ctx, op)
	r.hwmKB, _ = op.RSS("VmHWM")
	r.cpu, r.cpuOK = after.cpu-before.cpu, before.cpuOK && after.cpuOK
	r.rest409, r.rest429, r.restOK = after.rest409-before.rest409, after.rest429-before.rest429, before.restOK && after.restOK
	r.gateCuts, r.gateOK = after.gateCuts-before.gateCuts, before.gateOK && after.gateOK
	r.apfRejected, r.apfOK = after.apfRejected-before.apfRejected, before.apfOK && after.apfOK
	r.reconciles, r.reconcilesOK = after.reconciles-before.reconciles, before.reconcilesOK && mid.reconcilesOK && after.reconcilesOK
	if c.o.deleteJobs && !s.burst() && err == nil {
		c.deleteWithOperator(ctx, b, r, names)
	}
	if serr := op.Stop(); serr != nil {
		c.notes = append(c.notes, fmt.Sprintf("%s: operator stop: %v", r.label(), serr))
	}
	b.op = nil // stopped: the tear-down's waits do not watch it
	// Torn down even after a failure, so that the next API starts on an empty cluster.
	derr := c.deleteAll(ctx, b, r, names)
	return errors.Join(err, derr)
}

// createJobs creates a part's jobs at once, their pods in priorityClass unless it is empty.
func (c *comparison) createJobs(ctx context.Context, t *tracker, r *sizeResult, part size, names []string, priorityClass string) error {
	logf("%s: creating %d jobs of 1 master + %d workers", r.label(), part.jobs, part.workers())
	return parallel(ctx, c.o.scale.createWorkers, names, func(ctx context.Context, name string) error {
		t.expectJob(name, int32(part.podsPerJob))
		job := jobOf(r.api, r.ns, name, part, c.o.masterRun, c.o.keepPods)
		if priorityClass != "" {
			withPriorityClass(job, priorityClass)
		}
		if err := c.conn.Kube.Create(ctx, job); err != nil {
			return fmt.Errorf("creating job %s: %w", name, err)
		}
		return nil
	})
}

// podsSeen counts the pods of the named jobs the watch has seen.
func podsSeen(t *tracker, names []string) int {
	n, of := 0, setOf(names)
	t.view(func(pods map[string]*podRecord, _ map[string]*jobRecord) {
		for _, p := range pods {
			if of[p.job] {
				n++
			}
		}
	})
	return n
}

func setOf(names []string) map[string]bool {
	set := make(map[string]bool, len(names))
	for _, n := range names {
		set[n] = true
	}
	return set
}

// burstJobs are the jobs of the parts that are bursts: those whose masters exit.
func burstJobs(parts []size, partNames [][]string) []string {
	var names []string
	for i, part := range parts {
		if part.burst() {
			names = append(names, partNames[i]...)
		}
	}
	return names
}

// profile fetches a profile of the operator (kind "profile": CPU, for --pprof-seconds from now;
// "heap") into <dir>/<kind>-<api>-<size>[-run<k>].pprof, in the background, when --pprof asks for
// it.
func (c *comparison) profile(ctx context.Context, op *localrun.Operator, r *sizeResult, kind string) *sync.WaitGroup {
	var wg sync.WaitGroup
	if c.o.pprof && op.PprofAddr != "" {
		inBackground(&wg, r.label(), kind+" profile", filepath.Join(c.o.dir, kind+"-"+r.fileName()+".pprof"), func(path string) error {
			return op.Profile(ctx, kind, c.o.pprofSeconds, path)
		})
	}
	return &wg
}

// profileControlPlane fetches CPU profiles of the API server and the scheduler for
// --pprof-seconds from now into <dir>/apiserver-<name>.pprof and <dir>/scheduler-<name>.pprof,
// in the background, when --control-plane-pprof asks for them.
func (c *comparison) profileControlPlane(ctx context.Context, name, label string) *sync.WaitGroup {
	var wg sync.WaitGroup
	if !c.o.controlPlanePprof {
		return &wg
	}
	profiles := map[string]func(ctx context.Context, cfg *rest.Config, seconds int, path string) error{
		"apiserver": localrun.APIServerProfile,
		"scheduler": c.cluster.SchedulerProfile,
	}
	for process, profile := range profiles {
		inBackground(&wg, label, process+" profile", filepath.Join(c.o.dir, process+"-"+name+".pprof"), func(path string) error {
			return profile(ctx, c.conn.Config, c.o.pprofSeconds, path)
		})
	}
	return &wg
}

// inBackground runs fetch(path) on a goroutine of wg and logs where what went, or why it did not.
func inBackground(wg *sync.WaitGroup, label, what, path string, fetch func(path string) error) {
	wg.Go(func() {
		if err := fetch(path); err != nil {
			logf("%s: %s: %v", label, what, err)
			return
		}
		logf("%s: %s in %s", label, what, path)
	})
}

// waitStarted waits until every job's status has shown it Running, and all its pods running,
// and every pod has been seen Running; then for the status to settle, unless a burst master has
// already exited (the completion phase has begun).
func (c *comparison) waitStarted(ctx context.Context, b *bench, r *sizeResult, names []string) error {
	timeout := c.o.phaseTimeout + time.Duration(r.size.pods())*60*time.Millisecond
	return b.waitFor(ctx, r.label()+": every job Running with all its pods running", timeout, func() (bool, string) {
		done, masterEnded := true, false
		b.t.view(func(pods map[string]*podRecord, jobs map[string]*jobRecord) {
			running := map[string]int{}
			for _, p := range pods {
				if !p.running.IsZero() {
					running[p.job]++
				}
				if p.replicaType == batch.PyTorchReplicaMaster && !p.terminated.IsZero() {
					masterEnded = true
				}
			}
			for _, n := range names {
				j := jobs[n]
				if j.phase == batch.JobSucceeded || j.phase == batch.JobFailed {
					// Finished before its status was seen Running with all its pods (an operator
					// slower than the master's run): nothing more to wait for; its figures say
					// how many jobs were seen Running.
					continue
				}
				if j.phaseSeen[batch.JobRunning].IsZero() || j.allRunning.IsZero() || running[n] < int(j.desired) {
					done = false
				}
			}
		})
		switch {
		case !done:
			return false, sizeProgress(b.t)
		case masterEnded:
			return true, ""
		}
		return b.t.quietFor() >= c.o.settle, "settling"
	})
}

// waitCompleted waits until every named job (the bursts': burstJobs) has Succeeded (its master
// exits 0) and the operator has cleaned up its pods still running (unless the jobs keep them:
// --clean-up=none), and the status has settled.
func (c *comparison) waitCompleted(ctx context.Context, b *bench, r *sizeResult, names []string) error {
	logf("%s: waiting for the masters to exit 0 (run-duration %s) and the jobs to succeed", r.label(), c.o.masterRun)
	what := ": every job Succeeded, its unfinished pods gone, settled"
	if c.o.keepPods {
		what = ": every job Succeeded (its pods kept), settled"
	}
	bursts := setOf(names)
	return b.waitFor(ctx, r.label()+what, c.o.masterRun+c.o.phaseTimeout, func() (bool, string) {
		done := true
		b.t.view(func(pods map[string]*podRecord, jobs map[string]*jobRecord) {
			for _, n := range names {
				if j := jobs[n]; j == nil || j.phase != batch.JobSucceeded {
					done = false
				}
			}
			for _, p := range pods {
				if p.unfinished() && !c.o.keepPods && bursts[p.job] {
					done = false
				}
			}
		})
		if !done {
			return false, sizeProgress(b.t)
		}
		return b.t.quietFor() >= c.o.settle, "settling"
	})
}

// sizeProgress summarises the tracker's jobs and pods (those of one size: see reset).
func sizeProgress(t *tracker) string {
	var seen, running, ended, want, allRunning int
	phases := map[batch.JobPhase]int{}
	t.view(func(pods map[string]*podRecord, jobs map[string]*jobRecord) {
		for _, j := range jobs {
			want += int(j.desired)
			phases[j.phase]++
			if !j.allRunning.IsZero() {
				allRunning++
			}
		}
		for _, p := range pods {
			switch {
			case !p.exists():
			case p.unfinished() && p.phase == corev1.PodRunning:
				seen++
				running++
			case !p.unfinished():
				seen++
				ended++
			default:
				seen++
			}
		}
	})
	return fmt.Sprintf("pods (want %d): %d exist, %d running, %d ended; jobs Running %d, Succeeded %d, status counting all pods running %d",
		want, seen, running, ended, phases[batch.JobRunning], phases[batch.JobSucceeded], allRunning)
}

// deleteWithOperator (--delete-jobs) deletes the size's jobs as a user would (kubectl delete: in
// the background), with the operator still running, and records how long their pods and their
// Services took to go. What is left when a wait gives up, deleteAll deletes.
func (c *comparison) deleteWithOperator(ctx context.Context, b *bench, r *sizeResult, names []string) {
	logf("%s: deleting the jobs, the operator running", r.label())
	start := time.Now()
	err := parallel(ctx, c.o.scale.createWorkers, names, func(ctx context.Context, name string) error {
		return client.IgnoreNotFound(c.conn.Kube.Delete(ctx, jobOf(r.api, r.ns, name, r.size, 0, false), client.PropagationPolicy(metav1.DeletePropagationBackground)))
	})
	if err != nil {
		r.podsTerminating = missing("deleting the jobs: %v", err)
		r.podsGone, r.servicesGone = r.podsTerminating, r.podsTerminating
		return
	}
	// The garbage collector alone takes about 50 ms an object (its client's 20 a second).
	timeout := c.o.phaseTimeout + time.Duration(r.size.pods())*100*time.Millisecond
	left := 0
	err = b.waitFor(ctx, "the deleted jobs' pods gone", timeout, func() (bool, string) {
		left = existingPods(b.t)
		return left == 0, fmt.Sprintf("%d pods left", left)
	})
	if err != nil {
		r.podsGone = missing("%d pods left after %s", left, secs(time.Since(start)))
		r.podsTerminating = r.podsGone
	} else {
		var marked, gone time.Time
		b.t.view(func(pods map[string]*podRecord, _ map[string]*jobRecord) {
			for _, p := range pods {
				gone = later(gone, p.gone)
				if p.deletionSeen.IsZero() { // gone at once, never seen marked
					marked = later(marked, p.gone)
				} else {
					marked = later(marked, p.deletionSeen)
				}
			}
		})
		r.podsTerminating, r.podsGone = measured(marked.Sub(start)), measured(gone.Sub(start))
	}
	// Counted by a list of one: the API server says how many remain (no selector, so it can).
	err = b.waitFor(ctx, "the deleted jobs' Services gone", timeout, func() (bool, string) {
		var one corev1.ServiceList
		if err := b.kube.List(ctx, &one, client.InNamespace(r.ns), client.Limit(1)); err != nil {
			return false, err.Error()
		}
		left = len(one.Items)
		if n := one.RemainingItemCount; n != nil {
			left += int(*n)
		}
		return left == 0, fmt.Sprintf("%d Services left", left)
	})
	if err != nil {
		r.servicesGone = missing("%d Services left after %s", left, secs(time.Since(start)))
	} else {
		r.servicesGone = measured(time.Since(start))
	}
	logf("%s: deleted jobs: pods marked for deletion %s, gone %s; Services gone %s", r.label(), fmtFigure(r.podsTerminating), fmtFigure(r.podsGone), fmtFigure(r.servicesGone))
}

// tearDownWorkers is how many deletions the bench's tear-down has in flight.
const tearDownWorkers = 64

// deleteAll tears a size down once its operator has stopped: the jobs' pods (with no grace
// period) and Services first, then the jobs, each step waited for.
//
// Why this order: the garbage collector, which deletes a deleted job's dependents, looks every
// queued dependent up again, one request at the controller-manager's client rate (20 a second),
// even once the object is gone. After a kubeflow.org 1 x 5,000 (5,000 pods and 5,000 Services)
// that kept the control plane busy for four minutes, about 0.4 of a core, and the next run began
// on it. Dependents deleted before their job are never queued. (The operator is stopped first so
// that it does not create what the bench deletes.)
func (c *comparison) deleteAll(ctx context.Context, b *bench, r *sizeResult, names []string) error {
	logf("%s: deleting the jobs' pods and Services, then the jobs", r.label())
	timeout := c.o.phaseTimeout + time.Duration(r.size.pods())*20*time.Millisecond
	if err := deletePods(ctx, b, r.ns, timeout); err != nil {
		return err
	}
	var services corev1.ServiceList
	if err := b.kube.List(ctx, &services, client.InNamespace(r.ns)); err != nil {
		return fmt.Errorf("listing the Services: %w", err)
	}
	svcNames := make([]string, len(services.Items))
	for i, s := range services.Items {
		svcNames[i] = s.Name
	}
	if err := deleteServices(ctx, b.kube, r.ns, svcNames, tearDownWorkers); err != nil {
		return err
	}
	err := parallel(ctx, c.o.scale.createWorkers, names, func(ctx context.Context, name string) error {
		err := c.conn.Kube.Delete(ctx, jobOf(r.api, r.ns, name, r.size, 0, false), client.PropagationPolicy(metav1.DeletePropagationBackground))
		return client.IgnoreNotFound(err)
	})
	if err != nil {
		return err
	}
	return b.waitFor(ctx, "the jobs gone", timeout, func() (bool, string) {
		left := 0
		b.t.view(func(_ map[string]*podRecord, jobs map[string]*jobRecord) {
			for _, n := range names {
				if j := jobs[n]; j != nil && j.gone.IsZero() {
					left++
				}
			}
		})
		return left == 0, fmt.Sprintf("%d jobs left", left)
	})
}

// deleteServices deletes the named Services of ns, workers at a time, and waits until the API
// server lists none of them. Note: Services have no delete-collection; each goes by name.
func deleteServices(ctx context.Context, kube client.Client, ns string, names []string, workers int) error {
	err := parallel(ctx, workers, names, func(ctx context.Context, name string) error {
		return client.IgnoreNotFound(kube.Delete(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}))
	})
	if err != nil {
		return fmt.Errorf("deleting the Services: %w", err)
	}
	want := setOf(names)
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		var left corev1.ServiceList
		if err := kube.List(ctx, &left, client.InNamespace(ns)); err != nil {
			return false, err
		}
		return !slices.ContainsFunc(left.Items, func(s corev1.Service) bool { return want[s.Name] }), nil
	})
}

// deletePods deletes the pods the tracker knows to exist, one request each with no grace period
// (tearDownWorkers at a time), and waits until the bench's watch has seen them all go. Note: one
// deletecollection of 5,000 pods outlasts the API server's 60 s request timeout.
func deletePods(ctx context.Context, b *bench, ns string, timeout time.Duration) error {
	var names []string
	b.t.view(func(pods map[string]*podRecord, _ map[string]*jobRecord) {
		for name, p := range pods {
			if p.exists() {
				names = append(names, name)
			}
		}
	})
	err := parallel(ctx, tearDownWorkers, names, func(ctx context.Context, name string) error {
		err := b.kube.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}, client.GracePeriodSeconds(0))
		return client.IgnoreNotFound(err)
	})
	if err != nil {
		return fmt.Errorf("deleting the pods: %w", err)
	}
	return b.waitFor(ctx, "the pods gone", timeout, func() (bool, string) {
		left := existingPods(b.t)
		return left == 0, fmt.Sprintf("%d pods left", left)
	})
}

// existingPods is how many pods the tracker knows to exist.
func existingPods(t *tracker) int {
	n := 0
	t.view(func(pods map[string]*podRecord, _ map[string]*jobRecord) {
		for _, p := range pods {
			if p.exists() {
				n++
			}
		}
	})
	return n
}

// figures reads the size's time figures from the watches' records: the first part's from the
// first create, and a mixed size's second part's from its own (then); each burst job's completion
// also goes to completions-<run>.tsv, in seconds from the first create, so that a worst case can
// be found in the audit and operator logs.
func (c *comparison) figures(t *tracker, r *sizeResult, partNames [][]string) {
	var rows strings.Builder
	rows.WriteString("job\tmaster Succeeded\tjob Succeeded\tcompletion\n")
	parts := r.size.parts()
	r.partFigures = partFiguresOf(t, r.created, parts[0], partNames[0], r.created, &rows)
	if len(parts) > 1 {
		r.then = partFiguresOf(t, r.thenCreated, parts[1], partNames[1], r.created, &rows)
	}
	if r.completion.n > 0 || r.then.completion.n > 0 {
		if err := os.WriteFile(filepath.Join(c.o.dir, "completions-"+r.fileName()+".tsv"), []byte(rows.String()), 0o644); err != nil {
			logf("completions: %v", err)
		}
	}
}

// partFigures are one part's time figures, from its first create: allPodsExist to the last pod
// first seen, everyJobRunning to the last job's status first seen Running, statusAllRunning to
// the last job's status first counting all its pods running, allPodsRunning to the last pod first
// seen Running, allPodsBound to the last pod first seen with a node (the scheduler's share);
// completion, per burst job, its status first seen Succeeded − its master first seen Succeeded.
type partFigures struct {
	allPodsExist, everyJobRunning, statusAllRunning, allPodsRunning, allPodsBound figure
	completion                                                                    spread
}

// partFiguresOf reads a part's figures from created; a burst's completions go to rows, in seconds
// from sizeCreated (in the jobs' order, so that two runs' files line up).
func partFiguresOf(t *tracker, created time.Time, part size, names []string, sizeCreated time.Time, rows *strings.Builder) partFigures {
	of := setOf(names)
	var lastSeen, lastBound, lastRunning, lastJobRunning, lastAllRunning time.Time
	seen, bound, running, jobsRunning, jobsAllRunning := 0, 0, 0, 0, 0
	t.view(func(pods map[string]*podRecord, jobs map[string]*jobRecord) {
		for _, p := range pods {
			if !of[p.job] {
				continue
			}
			seen++
			lastSeen = later(lastSeen, p.seen)
			if !p.bound.IsZero() {
				bound++
				lastBound = later(lastBound, p.bound)
			}
			if !p.running.IsZero() {
				running++
				lastRunning = later(lastRunning, p.running)
			}
		}
		for _, n := range names {
			j := jobs[n]
			if j == nil {
				continue
			}
			if at := j.phaseSeen[batch.JobRunning]; !at.IsZero() {
				jobsRunning++
				lastJobRunning = later(lastJobRunning, at)
			}
			if !j.allRunning.IsZero() {
				jobsAllRunning++
				lastAllRunning = later(lastAllRunning, j.allRunning)
			}
		}
	})
	var completion []time.Duration
	if part.burst() {
		jobs := (&bench{t: t}).collect(names)
		for _, name := range names {
			jp, ok := jobs[name]
			if !ok {
				continue
			}
			if master, ok := jp.masterSucceeded(); ok {
				if at := jp.job.phaseSeen[batch.JobSucceeded]; !at.IsZero() {
					completion = append(completion, at.Sub(master))
					fmt.Fprintf(rows, "%s\t%.3f\t%.3f\t%.3f\n", name, master.Sub(sizeCreated).Seconds(), at.Sub(sizeCreated).Seconds(), at.Sub(master).Seconds())
				}
			}
		}
	}
	since := func(at time.Time, n, want int, what string) figure {
		if n < want {
			return missing("%d of %d %s", n, want, what)
		}
		return measured(at.Sub(created))
	}
	return partFigures{
		allPodsExist:     since(lastSeen, seen, part.pods(), "pods seen"),
		allPodsRunning:   since(lastRunning, running, part.pods(), "pods seen Running"),
		allPodsBound:     since(lastBound, bound, part.pods(), "pods seen bound"),
		everyJobRunning:  since(lastJobRunning, jobsRunning, len(names), "jobs seen Running"),
		statusAllRunning: since(lastAllRunning, jobsAllRunning, len(names), "jobs' status counting all pods running"),
		completion:       spreadOf(completion, len(names)),
	}
}

// counters are the cumulative readings a size's figures are differences of.
type counters struct {
	cpu              float64
	cpuOK            bool
	rest409, rest429 float64
	restOK           bool
	gateCuts         float64
	gateOK           bool
	apfRejected      float64
	apfOK            bool
	reconciles       float64
	reconcilesOK     bool
}

func (c *comparison) readCounters(ctx context.Context, op *localrun.Operator) counters {
	var k counters
	var err error
	k.cpu, err = op.CPUSeconds()
	k.cpuOK = err == nil
	var err409, err429 error
	k.rest409, err409 = op.MetricSum(ctx, "rest_client_requests_total", map[string]string{"code": "409"})
	k.rest429, err429 = op.MetricSum(ctx, "rest_client_requests_total", map[string]string{"code": "429"})
	k.restOK = err409 == nil && err429 == nil
	var errGate error
	k.gateCuts, errGate = op.MetricSum(ctx, "trainyard_write_gate_cuts_total", nil)
	k.gateOK = errGate == nil
	k.apfRejected, k.apfOK = c.apfRejected(ctx)
	var errRec error
	k.reconciles, errRec = op.MetricSum(ctx, "controller_runtime_reconcile_total", nil)
	k.reconcilesOK = errRec == nil
	return k
}

// readControlPlane reads the CPU seconds of each of the cluster's processes so far; nil when
// they are unknown or the reading failed (the failure goes to the notes).
func (c *comparison) readControlPlane() localrun.ProcessCPU {
	if c.controlPlaneCPU == nil {
		return nil
	}
	used, err := c.controlPlaneCPU()
	if err != nil {
		c.notes = append(c.notes, "reading the control plane's CPU: "+err.Error())
		return nil
	}
	return used
}

// controlPlaneSince is the CPU seconds each of the cluster's processes used since before, a
// readControlPlane reading; nil when either reading is missing.
func (c *comparison) controlPlaneSince(before localrun.ProcessCPU) localrun.ProcessCPU {
	if before == nil {
		return nil
	}
	now := c.readControlPlane()
	if now == nil {
		return nil
	}
	return now.Since(before)
}

// apfRejected is the API server's count of requests APF rejected at the identity's priority level.
func (c *comparison) apfRejected(ctx context.Context) (float64, bool) {
	if c.flow.PriorityLevel == "" {
		return 0, false
	}
	v, err := localrun.APIServerMetricSum(ctx, c.conn.Config, "apiserver_flowcontrol_rejected_requests_total",
		map[string]string{"priority_level": c.flow.PriorityLevel})
	return v, err == nil
}

// settle waits until the cluster runs a new pod promptly before the size what is played (settle).
func (c *comparison) settle(ctx context.Context, what string) error {
	took, canaries, err := settle(ctx, c.conn.Kube, c.settleNS, c.o.phaseTimeout)
	if err != nil {
		return fmt.Errorf("settling the cluster before %s: %w", what, err)
	}
	logf("%s: the cluster settled in %s (%d canary pods)", what, took.Round(time.Millisecond), canaries)
	if c.controlPlaneCPU == nil {
		return nil
	}
	summed := func() (float64, error) {
		used, err := c.controlPlaneCPU()
		return used.Sum(), err
	}
	waited, cores, quiet, err := waitQuiet(ctx, summed, quietWindow, quietCores, quietTimeout)
	switch {
	case err != nil:
		return fmt.Errorf("waiting for the control plane to be quiet before %s: %w", what, err)
	case quiet:
		logf("%s: the control plane was quiet after %s (%.2f cores)", what, waited.Round(time.Millisecond), cores)
	default:
		busy := c.busiestProcesses(ctx)
		logf("%s: the control plane was still busy after %s (%.2f cores%s): played anyway", what, waited.Round(time.Millisecond), cores, busy)
		// Note: the report says so too, so that a slow run can be told from one that began on a
		// cluster still busy with the last size's clean-up.
		c.notes = append(c.notes, fmt.Sprintf("%s began on a busy control plane: %.2f cores after %s of waiting%s",
			what, cores, waited.Round(time.Second), busy))
	}
	return nil
}

// busiestProcesses reads the control plane's processes over one quietWindow and names those that
// used a tenth of a core or more, busiest first ("; kube-scheduler 0.41, kube-apiserver 0.12");
// empty when none did or the reading failed.
func (c *comparison) busiestProcesses(ctx context.Context) string {
	before, from := c.readControlPlane(), time.Now()
	if before == nil || localrun.Sleep(ctx, quietWindow) != nil {
		return ""
	}
	// Note: over the time that passed, as waitQuiet does: a busy machine sleeps longer.
	return formatBusy(c.controlPlaneSince(before), time.Since(from))
}

// namespace creates a fresh namespace of the run.
func (c *comparison) namespace(ctx context.Context, what string) (string, error) {
	ns := fmt.Sprintf("bench-%s-%s", c.runID, what)
	obj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{localrun.ManagedByLabel: "benchscale"}}}
	if err := c.conn.Kube.Create(ctx, obj); err != nil {
		return "", fmt.Errorf("creating namespace %s: %w", ns, err)
	}
	// Pods are refused until the namespace's default ServiceAccount exists.
	deadline := time.Now().Add(time.Minute)
	for {
		err := c.conn.Kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: "default"}, &corev1.ServiceAccount{})
		if err == nil {
			return ns, nil
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("no default ServiceAccount in %s after a minute: %w", ns, err)
		}
		if err := localrun.Sleep(ctx, 100*time.Millisecond); err != nil {
			return "", err
		}
	}
}

// jobOf is job name of the size in API a: 1 master and the workers, restartPolicy OnFailure, one
// GPU per pod; a burst's master exits 0 after masterRun. keepPods asks that no pod be deleted
// when the job finishes.
func jobOf(a api, ns, name string, s size, masterRun time.Duration, keepPods bool) client.Object {
	var masterAnnotations map[string]string
	if s.burst() && masterRun > 0 {
		masterAnnotations = map[string]string{simRunDuration: masterRun.String(), simExitCode: "0"}
	}
	master, worker := gpuPodTemplate(masterAnnotations), gpuPodTemplate(nil)
	meta := metav1.ObjectMeta{Namespace: ns, Name: name}
	if a == apiKubeflow {
		specs := map[kubeflowv1.ReplicaType]*kubeflowv1.ReplicaSpec{
			kubeflowv1.ReplicaTypeMaster: {Replicas: ptrTo[int32](1), Template: master, RestartPolicy: kubeflowv1.RestartPolicyOnFailure},
		}
		if s.workers() > 0 {
			specs[kubeflowv1.ReplicaTypeWorker] = &kubeflowv1.ReplicaSpec{Replicas: ptrTo(int32(s.workers())), Template: worker, RestartPolicy: kubeflowv1.RestartPolicyOnFailure}
		}
		job := &kubeflowv1.PyTorchJob{ObjectMeta: meta, Spec: kubeflowv1.PyTorchJobSpec{PyTorchReplicaSpecs: specs}}
		if keepPods {
			job.Spec.RunPolicy = &kubeflowv1.RunPolicy{CleanPodPolicy: ptrTo(kubeflowv1.CleanPodPolicyNone)}
		}
		return job
	}
	specs := []batch.PyTorchReplicaSpec{
		{Type: batch.PyTorchReplicaMaster, ReplicaTemplate: batch.ReplicaTemplate{Replicas: ptrTo[int32](1), Template: master, RestartPolicy: batch.RestartPolicyOnFailure}},
	}
	if s.workers() > 0 {
		specs = append(specs, batch.PyTorchReplicaSpec{Type: batch.PyTorchReplicaWorker,
			ReplicaTemplate: batch.ReplicaTemplate{Replicas: ptrTo(int32(s.workers())), Template: worker, RestartPolicy: batch.RestartPolicyOnFailure}})
	}
	job := &batch.PyTorchTrainingJob{ObjectMeta: meta, Spec: batch.PyTorchTrainingJobSpec{ReplicaSpecs: specs}}
	if keepPods {
		job.Spec.RunPolicy = &batch.RunPolicy{CleanUpPolicy: batch.CleanUpPolicyNone}
	}
	return job
}

// thenPriorityClass is the PriorityClass of a mixed size's second part under --then-priority.
const thenPriorityClass = "trainyard-bench-then"

// ensurePriorityClass creates a PriorityClass of value that preempts nothing, unless it exists.
func (c *comparison) ensurePriorityClass(ctx context.Context, name string, value int32) error {
	never := corev1.PreemptNever
	pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value, PreemptionPolicy: &never,
		Description: "make bench-scale --then-priority: a mixed size's second part"}
	if err := c.conn.Kube.Create(ctx, pc); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating PriorityClass %s: %w", name, err)
	}
	return nil
}

// withPriorityClass puts every pod template of a job made by jobOf in class.
func withPriorityClass(job client.Object, class string) {
	switch j := job.(type) {
	case *kubeflowv1.PyTorchJob:
		for _, s := range j.Spec.PyTorchReplicaSpecs {
			s.Template.Spec.PriorityClassName = class
		}
	case *batch.PyTorchTrainingJob:
		for i := range j.Spec.ReplicaSpecs {
			j.Spec.ReplicaSpecs[i].Template.Spec.PriorityClassName = class
		}
	}
}

// gpuPodTemplate is podTemplate with one nvidia.com/gpu (its limit; the API server makes the
// request equal), as issue 19's manifests ask.
func gpuPodTemplate(annotations map[string]string) corev1.PodTemplateSpec {
	t := podTemplate(annotations)
	t.Spec.Containers[0].Resources.Limits = corev1.ResourceList{gpuResource: resource.MustParse("1")}
	return t
}

const gpuResource corev1.ResourceName = "nvidia.com/gpu"
