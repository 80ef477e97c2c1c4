// Command soak runs the operator for a long while under random load and faults, and checks
// invariants throughout and at the end (`make soak`; not part of `make test`).
//
// It starts its own loopback cluster (hack/cluster.sh, DEVCLUSTER_DIR=.devcluster/soak, cluster
// trainyard-soak), installs both APIs' CRDs, and runs bin/trainyard as a child process. For
// --duration (default 10 minutes) it creates jobs of all four kinds (PyTorchTrainingJob,
// TensorFlowTrainingJob, PyTorchJob, TFJob) with random replicas, restart policies, clean-up
// policies, backoff limits and deadlines, whose pods exit with random codes after random times
// (the KWOK simulation annotations); it scales elastic jobs, pauses and resumes jobs, deletes
// jobs, makes running pods exit or deletes them, and kills the operator with SIGKILL every minute
// or two, starting a new one. Every --check-every it judges the invariants of invariants.go on
// what its own watches saw; at the end it lets the operator settle, judges them once more,
// deletes every job and checks that nothing is left, and compares the operator's idle RSS and
// goroutines with the start.
//
// It prints a markdown table (also written to .devcluster/soak/results.md) and every violation
// with its evidence. The exit status is non-zero when an invariant was violated or the run broke.
// The seed is printed: --seed replays the same choices (the timing of the operator and the
// cluster still differ).
//
//	go run ./hack/soak [flags] [-- operator flags...]
//
// The files: plan.go (the jobs drawn), chaos.go (the actions and the kills), observe.go (what the
// watches saw), invariants.go (the invariants), supervise.go (the operator processes), report.go
// (the table).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/trainyard/trainyard/hack/internal/localrun"
)

// options are the soak's command-line settings.
type options struct {
	duration             time.Duration
	seed                 uint64
	dir                  string
	clusterName          string
	nodes                int
	keepCluster          bool
	operatorBin          string
	operatorFlags        []string
	maxJobs              int
	actionMin, actionMax time.Duration
	killMin, killMax     time.Duration
	grace, orphanGrace   time.Duration
	checkEvery           time.Duration
	warmUp, idle         time.Duration
}

func main() {
	o, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(2)
	}
	// The watches' client-go machinery logs through controller-runtime; the soak reports what
	// goes wrong itself.
	ctrllog.SetLogger(zap.New(zap.WriteTo(io.Discard)))
	repo, err := localrun.FindRepo()
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(2)
	}
	if o.dir == "" {
		o.dir = filepath.Join(repo, ".devcluster", "soak")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	res, err := run(ctx, repo, o)
	stop()
	if res != nil {
		if res.finished.IsZero() {
			res.finished = time.Now()
		}
		if err != nil {
			res.notes = append(res.notes, "the run broke: "+err.Error())
		}
		md := res.markdown()
		fmt.Println()
		fmt.Print(md)
		out := filepath.Join(o.dir, "results.md")
		if werr := os.WriteFile(out, []byte(md), 0o644); werr != nil {
			err = errors.Join(err, werr)
		} else {
			logf("results written to %s; actions in %s, operator logs beside them", out, filepath.Join(o.dir, "actions.log"))
		}
	}
	switch {
	case err != nil:
		fmt.Fprintln(os.Stderr, "soak: FAILED:", err)
		os.Exit(1)
	case res != nil && len(res.violations) > 0:
		fmt.Fprintf(os.Stderr, "soak: FAILED: %d invariant violations\n", len(res.violations))
		os.Exit(1)
	}
}

func parseFlags(args []string) (options, error) {
	fs := flag.NewFlagSet("soak", flag.ContinueOnError)
	var o options
	var operatorFlags string
	fs.DurationVar(&o.duration, "duration", 10*time.Minute, "how long the random actions and faults go on (the settling and the checks at the end come on top)")
	fs.Uint64Var(&o.seed, "seed", 0, "seed of the random choices (0: from the clock; the run prints it)")
	fs.StringVar(&o.dir, "dir", "", "DEVCLUSTER_DIR of the soak cluster (default <repo>/.devcluster/soak)")
	fs.StringVar(&o.clusterName, "cluster", "trainyard-soak", "cluster name (CLUSTER of hack/cluster.sh)")
	fs.IntVar(&o.nodes, "nodes", 4, "KWOK nodes of the soak cluster")
	fs.BoolVar(&o.keepCluster, "keep-cluster", false, "leave the cluster running at the end, for debugging")
	fs.StringVar(&o.operatorBin, "operator", "bin/trainyard", "the operator binary (a relative path is relative to the repository)")
	fs.StringVar(&operatorFlags, "operator-flags", "", "extra operator flags, space-separated (also: everything after --)")
	fs.IntVar(&o.maxJobs, "max-jobs", 20, "most jobs that exist at once (each has 1 to 8 pods)")
	fs.DurationVar(&o.actionMin, "action-min", time.Second, "least time between two actions")
	fs.DurationVar(&o.actionMax, "action-max", 3*time.Second, "most time between two actions")
	fs.DurationVar(&o.killMin, "kill-min", time.Minute, "least uptime of the operator before the soak kills it")
	fs.DurationVar(&o.killMax, "kill-max", 2*time.Minute, "most uptime of the operator before the soak kills it (0: never kill it)")
	fs.DurationVar(&o.grace, "grace", 45*time.Second, "how long a job, its spec and the operator are left alone before the convergence invariants apply")
	fs.DurationVar(&o.orphanGrace, "orphan-grace", time.Minute, "how long a pod or Service may outlive its job (the garbage collector's time)")
	fs.DurationVar(&o.checkEvery, "check-every", 10*time.Second, "time between two rounds of invariant checks")
	fs.DurationVar(&o.warmUp, "warm-up", 20*time.Second, "time after an operator process is ready before its warm-up goroutines and RSS are read")
	fs.DurationVar(&o.idle, "idle", 15*time.Second, "idleness before the idle RSS and goroutines are read, at the start and at the end")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	o.operatorFlags = append(strings.Fields(operatorFlags), fs.Args()...)
	if i := len(args) - fs.NArg() - 1; fs.NArg() > 0 && (i < 0 || args[i] != "--") {
		return o, fmt.Errorf("unexpected argument %q (operator flags go after --)", fs.Arg(0))
	}
	if o.actionMax < o.actionMin || o.actionMin <= 0 {
		return o, errors.New("want 0 < --action-min <= --action-max")
	}
	if o.killMax > 0 && o.killMax < o.killMin {
		return o, errors.New("want --kill-min <= --kill-max")
	}
	if o.seed == 0 {
		o.seed = uint64(time.Now().UnixNano())
	}
	return o, nil
}

// run brings the cluster and the operator up, runs the chaos and the checks, settles, cleans up
// and measures, and always takes down what it started. It returns what it got even when it broke.
func run(ctx context.Context, repo string, o options) (res *results, err error) {
	if err := os.MkdirAll(o.dir, 0o755); err != nil {
		return nil, err
	}
	actions, err := os.Create(filepath.Join(o.dir, "actions.log"))
	if err != nil {
		return nil, err
	}
	defer actions.Close()
	actionLog := func(format string, args ...any) {
		fmt.Fprintf(actions, "%s %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
	}
	t := &tally{created: map[string]int{}}
	res = &results{o: o, repo: repo, commit: localrun.Commit(repo), tally: t, started: time.Now()}
	logf("seed %d (replay with --seed=%d); duration %s; cluster %s in %s", o.seed, o.seed, o.duration, o.clusterName, o.dir)

	// Note: KWOK v0.8 deletes pods by name and, when it lags, can act on a stale event of a pod
	// already gone and delete the new pod of its name (bench-scale's gang restart showed it):
	// the soak would see a disruption nobody made. Confirming deletions a second later lets the
	// new pod's event cancel that (hack/cluster.sh).
	if os.Getenv("KWOK_POD_DELETE_DELAY_MS") == "" {
		if err := os.Setenv("KWOK_POD_DELETE_DELAY_MS", "1000"); err != nil {
			return res, err
		}
	}
	cl := localrun.Cluster{Repo: repo, Dir: o.dir, Name: o.clusterName, Nodes: o.nodes, Log: logf}
	defer func() { err = errors.Join(err, cl.Release(o.keepCluster)) }()
	conn, err := cl.Start(ctx, true, "soak")
	if err != nil {
		return res, err
	}
	ns, err := createNamespace(ctx, conn.Kube)
	if err != nil {
		return res, err
	}

	w := newWorld()
	watchCtx, stopWatches := context.WithCancel(context.Background())
	defer stopWatches()
	if err := w.watch(watchCtx, conn, ns); err != nil {
		return res, err
	}
	chk := newChecker(w, o.grace, o.orphanGrace, func(format string, args ...any) {
		logf(format, args...)
		actionLog(format, args...)
	})
	res.checker = chk
	sup := &supervisor{
		base: localrun.OperatorConfig{Bin: localrun.InRepo(repo, o.operatorBin), Kubeconfig: cl.Kubeconfig(), ExtraFlags: o.operatorFlags, Log: logf},
		dir:  o.dir, warmUp: o.warmUp, check: chk, log: logf,
	}
	res.supervisor = sup
	if err := sup.start(ctx); err != nil {
		return res, err
	}
	defer func() {
		if serr := sup.stop(context.Background()); serr != nil {
			res.notes = append(res.notes, "operator stop: "+serr.Error())
		}
	}()
	if err := localrun.Sleep(ctx, o.idle); err != nil {
		return res, err
	}
	if res.startIdle, err = idleSample(ctx, sup); err != nil {
		return res, err
	}
	logf("operator idle at the start: %s", res.startIdle)

	// The chaos, the kills, crash watching, the checks and progress run side by side.
	rng := rand.New(rand.NewPCG(o.seed, 1))
	c := &chaos{o: o, rng: rng, pl: planner{rng: rng}, kube: conn.Kube, ns: ns, w: w, sup: sup, t: t, plans: map[string]jobPlan{}, log: actionLog}
	res.chaosStarted = time.Now()
	until := res.chaosStarted.Add(o.duration)
	bg, stopBackground := context.WithCancel(ctx)
	defer stopBackground()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	goRun := func(f func(context.Context) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(bg); err != nil && bg.Err() == nil {
				errs <- err
				stopBackground()
			}
		}()
	}
	goRun(sup.watchCrashes)
	goRun(func(ctx context.Context) error { return checkLoop(ctx, chk, sup, o.checkEvery) })
	goRun(func(ctx context.Context) error { return progressLoop(ctx, w, t, chk, until) })
	var chaosWG sync.WaitGroup
	chaosWG.Add(2)
	goRun(func(ctx context.Context) error {
		defer chaosWG.Done()
		return c.run(ctx, until)
	})
	goRun(func(ctx context.Context) error {
		defer chaosWG.Done()
		return c.killer(ctx, rand.New(rand.NewPCG(o.seed, 2)), until)
	})
	logf("chaos for %s: namespace %s, at most %d jobs, operator killed every %s-%s", o.duration, ns, o.maxJobs, o.killMin, o.killMax)
	chaosWG.Wait()
	res.chaosEnded = time.Now()
	if err := firstError(errs, bg); err != nil {
		stopBackground()
		wg.Wait()
		return res, err
	}

	finishErr := finish(bg, o, c, w, chk, sup, res)
	stopBackground()
	wg.Wait()
	if err := firstError(errs, ctx); err != nil {
		return res, errors.Join(finishErr, err)
	}
	return res, finishErr
}

// finish lets the operator settle and judges once more, deletes every job and checks that
// nothing is left, then reads the idle figures.
func finish(ctx context.Context, o options, c *chaos, w *world, chk *checker, sup *supervisor, res *results) error {
	logf("chaos over: %s for the operator to settle (no action, no kill), then the final checks", o.grace+5*time.Second)
	if err := localrun.Sleep(ctx, o.grace+5*time.Second); err != nil {
		return err
	}
	chk.round(time.Now(), sup.state())

	jobs := c.liveJobs()
	logf("deleting the %d remaining jobs; then nothing labelled by the operator may remain", len(jobs))
	for _, j := range jobs {
		c.w.mu.Lock()
		if rec := c.w.jobs[j.uid]; rec != nil && rec.deleted.IsZero() {
			rec.deleted = time.Now()
		}
		c.w.mu.Unlock()
		err := c.kube.Delete(ctx, c.emptyJob(j), client.PropagationPolicy(metav1.DeletePropagationBackground))
		if client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting %s: %w", j.name, err)
		}
	}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		left := w.leftovers()
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			for _, l := range left {
				chk.report(invOrphans, l, "still there 3 min after every job was deleted")
			}
			break
		}
		if err := localrun.Sleep(ctx, time.Second); err != nil {
			return err
		}
	}
	chk.round(time.Now(), sup.state())

	// Idle: no watch event for a few seconds, then the idle time.
	for i := 0; i < 60 && w.quietFor() < 5*time.Second; i++ {
		if err := localrun.Sleep(ctx, time.Second); err != nil {
			return err
		}
	}
	if err := localrun.Sleep(ctx, o.idle); err != nil {
		return err
	}
	var err error
	if res.endIdle, err = idleSample(ctx, sup); err != nil {
		return err
	}
	logf("operator idle at the end: %s", res.endIdle)
	if err := sup.stop(ctx); err != nil {
		res.notes = append(res.notes, "operator stop: "+err.Error())
	}
	res.finished = time.Now()
	res.judgeResources(chk, sup.all())
	return nil
}

// idleSample reads the current operator's goroutines and RSS.
func idleSample(ctx context.Context, sup *supervisor) (sample, error) {
	op, inc := sup.current()
	if op == nil {
		return sample{}, errors.New("no operator running to measure")
	}
	g, rss, err := measure(ctx, op)
	return sample{process: inc.n, goroutines: g, rssKB: rss}, err
}

// checkLoop judges the invariants every interval.
func checkLoop(ctx context.Context, chk *checker, sup *supervisor, every time.Duration) error {
	for {
		if err := localrun.Sleep(ctx, every); err != nil {
			return nil
		}
		chk.round(time.Now(), sup.state())
	}
}

// progressLoop prints a line every 30 s.
func progressLoop(ctx context.Context, w *world, t *tally, chk *checker, until time.Time) error {
	for {
		if err := localrun.Sleep(ctx, 30*time.Second); err != nil {
			return nil
		}
		jobs, pods := w.counts()
		rounds, _, violations := chk.count()
		t.mu.Lock()
		created := 0
		for _, n := range t.created {
			created += n
		}
		line := fmt.Sprintf("%d jobs created, %d exist, %d pods exist; %d kills; %d check rounds, %d violations",
			created, jobs, pods, t.kills, rounds, violations)
		t.mu.Unlock()
		if left := time.Until(until); left > 0 {
			line += fmt.Sprintf("; chaos ends in %s", left.Round(time.Second))
		}
		logf("%s", line)
	}
}

// counts are the jobs and pods that exist.
func (w *world) counts() (jobs, pods int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, j := range w.jobs {
		if j.exists() {
			jobs++
		}
	}
	for _, p := range w.pods {
		if p.exists() {
			pods++
		}
	}
	return jobs, pods
}

// leftovers names the labelled pods and Services that still exist.
func (w *world) leftovers() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, p := range w.pods {
		if p.exists() {
			out = append(out, "pod "+p.name)
		}
	}
	for _, s := range w.services {
		if s.gone.IsZero() {
			out = append(out, "Service "+s.name)
		}
	}
	return out
}

func firstError(errs chan error, ctx context.Context) error {
	select {
	case err := <-errs:
		return err
	default:
		return ctx.Err()
	}
}

// createNamespace makes the run's namespace and waits for its default ServiceAccount (pods are
// refused without it).
func createNamespace(ctx context.Context, kube client.Client) (string, error) {
	ns := fmt.Sprintf("soak-%d", time.Now().Unix())
	namespace := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{localrun.ManagedByLabel: "soak"}}}
	if err := kube.Create(ctx, namespace); err != nil {
		return "", fmt.Errorf("creating namespace %s: %w", ns, err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		err := kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: "default"}, &corev1.ServiceAccount{})
		if err == nil {
			return ns, nil
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("no default ServiceAccount in %s after a minute: %w", ns, err)
		}
		if err := localrun.Sleep(ctx, 200*time.Millisecond); err != nil {
			return "", err
		}
	}
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[soak %s] %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}
