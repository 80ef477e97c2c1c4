// Command benchscale measures the operator at scale on a local loopback cluster (`make bench-scale`):
// how fast a burst of jobs and one 1,000-pod job get their pods and a status that shows them
// running, how many write requests the operator makes per pod (from the API server's audit log),
// how many of them meet a 409 Conflict, the operator's resident memory, and how fast the big job
// comes back when one of its workers fails and the whole gang restarts.
//
// It starts its own cluster (hack/cluster.sh, DEVCLUSTER_DIR=.devcluster/bench, 20 KWOK nodes),
// installs the CRDs, runs bin/trainyard as a child process, plays the scenarios, then prints a
// markdown table of each figure beside its target and Kubeflow's figure and writes it to
// .devcluster/bench/results.md. Figures are recorded, never asserted: the exit status is non-zero
// only when the run itself broke (the cluster did not start, a phase did not finish in time).
//
//	go run ./hack/benchscale [flags] [-- operator flags...]
//
// The cluster and the operator process come from hack/internal/localrun. The files: watch.go (what the
// bench's watches saw, and when), scenarios.go (the jobs and the phases), audit.go (the audit
// log), report.go (the tables).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/trainyard/trainyard/hack/internal/localrun"
)

// options are the bench's command-line settings.
type options struct {
	scale       scale
	dir         string // DEVCLUSTER_DIR of the bench cluster
	clusterName string
	nodes       int
	nodePods    int // pods each node advertises
	nodeGPUs    int // nvidia.com/gpu each node advertises
	keepCluster bool
	// deleteJobs: at the end of each size of big jobs, delete them with the operator still running
	// and time their pods' and Services' going (--delete-jobs).
	deleteJobs    bool
	operatorBin   string
	operatorFlags []string
	masterRun     time.Duration // the burst masters' run-duration
	// thenPriority: a mixed size's second part runs at this priority (thenPriorityClass); 0 at
	// the default, as the first part.
	thenPriority int32
	// keepPods: the jobs ask that no pod be deleted when they finish (kubeflow.org cleanPodPolicy
	// None, T9k cleanUpPolicy None), the work the Kubeflow peer does at its own default.
	keepPods bool
	// players: --side-by-side, earlier runs to set side by side instead of playing.
	players []player
	// peer: the operator played is Kubeflow's training-operator v1.8.1 (make peer), with its own
	// CRD and ClusterRole.
	peer         bool
	idle         time.Duration // idleness before the idle RSS is read
	settle       time.Duration // no job or pod change for this long: the status has settled
	phaseTimeout time.Duration
	pprof        bool
	pprofSeconds int
	// controlPlanePprof: CPU profiles of the API server and the scheduler from each size's and
	// floor's first create.
	controlPlanePprof bool
	// gateTimeline: the timelines sample the operator's write gate (sampleGate).
	gateTimeline bool
	// scenarios are those to play: sizes (issue 19: both APIs at --sizes beside the floor), or
	// the earlier ones: burst (with its completion and deletion), big (the big job, always played
	// with them), gang-restart (of the big job).
	scenarios map[string]bool
	// apis and sizes are the sizes scenario's APIs and sizes, in the order played; runs how often
	// each size of each API is played in a row (the report gives the medians).
	apis  []api
	sizes []size
	runs  int
	// floor: play the floor (a bare client's pods) at every size before the operators;
	// floorConcurrency is its goroutines.
	floor            bool
	floorConcurrency int
	// kwokDeleteDelay is the fake kubelet's delay in confirming a pod's deletion
	// (hack/cluster.sh KWOK_POD_DELETE_DELAY_MS).
	kwokDeleteDelay time.Duration
	// kwokPodParallelism is how many pod stages the fake kubelet plays at once (hack/cluster.sh
	// KWOK_POD_PARALLELISM); 0 leaves KWOK's default, 4, issue 19's harness.
	kwokPodParallelism int
}

func (o options) sizesScenario() bool { return o.scenarios["sizes"] }

// operatorAgent is the user agent the audit log knows the operator played by.
func (o options) operatorAgent() string {
	if o.peer {
		return peerAgent
	}
	return trainyardAgent
}

// scale is the size of the scenarios.
type scale struct {
	name          string
	burstJobs     int // jobs created at once
	workersPerJob int // workers of each burst job, beside its one master
	bigWorkers    int // workers of the big job, beside its one master
	createWorkers int // goroutines creating the burst jobs
}

func (s scale) podsPerJob() int { return 1 + s.workersPerJob }
func (s scale) burstPods() int  { return s.burstJobs * s.podsPerJob() }
func (s scale) bigPods() int    { return 1 + s.bigWorkers }
func (s scale) isFull() bool    { return s.name == "full" }
func (s scale) describe() string {
	return fmt.Sprintf("%s: %d jobs x %d pods, then 1 job of %d pods", s.name, s.burstJobs, s.podsPerJob(), s.bigPods())
}

var scales = map[string]scale{
	// The figures the targets are set for.
	"full": {name: "full", burstJobs: 50, workersPerJob: 7, bigWorkers: 999, createWorkers: 16},
	// A light run for a shared machine: checks the harness, not the operator.
	"small": {name: "small", burstJobs: 10, workersPerJob: 3, bigWorkers: 99, createWorkers: 16},
}

func main() {
	o, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchscale:", err)
		os.Exit(2)
	}
	// The watches' client-go machinery logs through controller-runtime; the bench reports what
	// goes wrong itself (a phase that does not finish says what it saw).
	ctrllog.SetLogger(zap.New(zap.WriteTo(io.Discard)))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		// A second interrupt ends the bench at once (the operator still gets SIGTERM from the
		// kernel when the bench dies; a cluster left behind is removed by hack/cluster.sh down).
		stop()
	}()
	err = run(ctx, o)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchscale: FAILED:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string) (options, error) {
	fs := flag.NewFlagSet("benchscale", flag.ContinueOnError)
	var o options
	var scaleName, operatorFlags, scenarios, apis, sizes, cleanUp, sides string
	fs.StringVar(&scaleName, "scale", "full", "full or small: the sizes when --sizes is not given (full "+sizePresets["full"]+", small "+sizePresets["small"]+"); for the earlier scenarios, full is 50 jobs x 8 pods and a 1,000-pod job, small 10 x 4 and 100")
	fs.StringVar(&apis, "apis", "t9k,kubeflow", "the sizes scenario's APIs, comma-separated, in the order played: t9k (PyTorchTrainingJob), kubeflow (kubeflow.org PyTorchJob)")
	fs.StringVar(&sizes, "sizes", "", "the sizes scenario's sizes, comma-separated, <jobs>x<pods per job> (1 master, the rest workers), in the order played (default: those of --scale); one job, or jobs of 1,000 pods or more, are big jobs that run until deleted, others a burst whose masters exit; a mixed size, two joined by + (1x5000+50x8), creates the second part's jobs once a fifth of the first's pods exist")
	fs.IntVar(&o.runs, "runs", 1, "the sizes scenario: play each size of each API this many times in a row (each run settles the cluster and starts a fresh operator) and report every figure as the median of the runs, with their range in brackets when more than 1; the floor is played once")
	fs.BoolVar(&o.floor, "floor", true, "the sizes scenario: first create each size's pods with a bare client (no operator, no rate limit), the cluster's floor")
	fs.IntVar(&o.floorConcurrency, "floor-concurrency", 64, "goroutines of the floor's bare client")
	fs.IntVar(&o.nodePods, "node-pods", 300, "pods each KWOK node advertises (NODE_PODS of hack/cluster.sh)")
	fs.IntVar(&o.nodeGPUs, "node-gpus", 300, "nvidia.com/gpu each KWOK node advertises (NODE_GPUS of hack/cluster.sh)")
	fs.StringVar(&o.dir, "dir", "", "DEVCLUSTER_DIR of the bench cluster (default <repo>/.devcluster/bench)")
	fs.StringVar(&o.clusterName, "cluster", "trainyard-bench", "cluster name (CLUSTER of hack/cluster.sh)")
	fs.IntVar(&o.nodes, "nodes", 20, "KWOK nodes of the bench cluster")
	fs.BoolVar(&o.keepCluster, "keep-cluster", false, "leave the cluster running at the end, for debugging (hack/cluster.sh down with the same DEVCLUSTER_DIR and CLUSTER stops it)")
	fs.BoolVar(&o.deleteJobs, "delete-jobs", false, "the sizes scenario: at the end of each size of big jobs (not a burst), delete the jobs as a user would, with the operator still running, and record how long their pods and their Services took to go (the garbage collector deletes them at the controller-manager's 20 a second; Trainyard deletes them itself). The garbage collector's queue then keeps the control plane busy for a while, which the next size's quiet wait absorbs")
	fs.StringVar(&o.operatorBin, "operator", "bin/trainyard", "the operator binary (a relative path is relative to the repository)")
	fs.StringVar(&operatorFlags, "operator-flags", "", "extra operator flags, space-separated (also: everything after --)")
	fs.BoolVar(&o.peer, "peer", false, "play Kubeflow's training-operator v1.8.1 (built by make peer into "+peerDir+", with its own PyTorchJob CRD and ClusterRole) instead of Trainyard: kubeflow.org only, its default clean-up (--clean-up=none), "+peerSchemes+"; tune it with --operator-flags, e.g. '--kube-api-qps=1000 --kube-api-burst=2000 --controller-threads=16'")
	fs.StringVar(&cleanUp, "clean-up", "default", "the jobs' clean-up policy: default (unset, as issue 19's manifests: Trainyard then deletes a finished job's running pods, and a Kubeflow job's their Services) or none (kubeflow.org cleanPodPolicy None, T9k cleanUpPolicy None: nothing deleted until the job is, the training-operator v1.8's own default and so the peer's work)")
	fs.DurationVar(&o.masterRun, "master-run-duration", 30*time.Second, "how long each burst job's master runs before it exits 0")
	fs.Func("then-priority", "a mixed size's second part (1x5000+50x8: the 50 x 8) runs its pods at this priority, through a PriorityClass "+thenPriorityClass+" that preempts nothing, created by the bench (0: the default priority, as the first part's): the kube-scheduler then takes them before the first part's waiting pods", func(v string) error {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil || n < 0 || n > 1_000_000_000 {
			return fmt.Errorf("want a whole number from 0 to 1000000000 (a user PriorityClass's range)")
		}
		o.thenPriority = int32(n)
		return nil
	})
	fs.DurationVar(&o.idle, "idle", 5*time.Second, "idleness after the operator is ready before its idle RSS is read")
	fs.DurationVar(&o.settle, "settle", 2*time.Second, "a status has settled when no job or pod changed for this long (more than the operator's --status-batch-interval)")
	fs.DurationVar(&o.phaseTimeout, "phase-timeout", 5*time.Minute, "longest a phase may take before the run counts as broken")
	fs.BoolVar(&o.pprof, "pprof", false, "capture a CPU profile of the operator from the big job's creation (sizes: from each size's, and a heap profile when it runs; with --runs above 1, in every run, into files named -run<k>) into <dir>/*.pprof")
	fs.BoolVar(&o.controlPlanePprof, "control-plane-pprof", false, "capture CPU profiles of the API server and the kube-scheduler for --pprof-seconds from each size's first create, the floors' too, into <dir>/{apiserver,scheduler}-<api>-<size>.pprof and <dir>/{apiserver,scheduler}-floor-<variant>.pprof (with --runs above 1, -run<k>)")
	fs.IntVar(&o.pprofSeconds, "pprof-seconds", 0, "length of the CPU profile (default 30 at full scale, 10 at small)")
	fs.BoolVar(&o.gateTimeline, "gate-timeline", false, "read the operator's write gate metrics every 0.25 s from the first create until every job runs, into the timelines' gate columns. A diagnosis: each read costs the operator about 4 ms of CPU, which its CPU figures then include")
	fs.DurationVar(&o.kwokDeleteDelay, "kwok-pod-delete-delay", time.Second, "how long the fake kubelet takes to confirm a pod's deletion when the gang-restart scenario is played (0: at once, as otherwise). KWOK v0.8 deletes by name, and when it lags behind a gang restart it acts on stale events of the old pods and deletes the new pods of their names; the delay lets the new pods' events cancel those deletions")
	fs.IntVar(&o.kwokPodParallelism, "kwok-pod-parallelism", 0, "pod stages the fake kubelet plays at once, for all nodes together (KWOK's podPlayStageParallelism); 0 keeps KWOK's default, 4, the harness of issue 19. A diagnosis: it changes the harness, the floor's too, so its figures do not compare with the peer's")
	fs.StringVar(&scenarios, "scenarios", "sizes", "the scenarios to play, comma-separated: sizes (issue 19: --apis at --sizes beside the floor and Kubeflow's tuned figures), or the earlier ones, T9k only: burst (with completion and deletion), big, gang-restart (of the big job, which is always played with them); e.g. --scenarios=gang-restart")
	fs.StringVar(&sides, "side-by-side", "", "play nothing: set the figures of earlier sizes runs side by side, label=dir pairs, comma-separated, the first compared with each other (e.g. Trainyard=.devcluster/side-by-side/trainyard,'Kubeflow tuned'=.devcluster/side-by-side/peer-tuned), into <dir>/side-by-side.md; make bench-side-by-side plays and sets them")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if sides != "" {
		var err error
		o.players, err = parseSideBySide(sides)
		return o, err
	}
	s, ok := scales[scaleName]
	if !ok {
		return o, fmt.Errorf("--scale=%q: want full or small", scaleName)
	}
	o.scale = s
	switch cleanUp {
	case "default":
	case "none":
		o.keepPods = true
	default:
		return o, fmt.Errorf("--clean-up=%q: want default or none", cleanUp)
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if o.peer {
		// The peer deletes no pod of a finished job by default; the bench would wait for it to.
		if given["clean-up"] && !o.keepPods {
			return o, errors.New("--peer: the peer keeps a finished job's pods (cleanPodPolicy None by default); leave --clean-up out or say none")
		}
		if given["operator"] {
			return o, errors.New("--peer plays " + peerBin + ": leave --operator out")
		}
		if !given["apis"] {
			apis = string(apiKubeflow)
		}
		o.keepPods, o.operatorBin = true, peerBin
	}
	o.scenarios = map[string]bool{}
	for _, name := range strings.Split(scenarios, ",") {
		switch name = strings.TrimSpace(name); name {
		case "sizes", "burst", "big", "gang-restart":
			o.scenarios[name] = true
		case "":
		default:
			return o, fmt.Errorf("--scenarios: unknown scenario %q: want sizes, burst, big or gang-restart", name)
		}
	}
	if o.scenarios["sizes"] && len(o.scenarios) > 1 {
		return o, errors.New("--scenarios: sizes is played alone (the earlier scenarios have a report of their own)")
	}
	if !o.scenarios["sizes"] {
		o.scenarios["big"] = true
	}
	for _, name := range strings.Split(apis, ",") {
		switch a := api(strings.TrimSpace(name)); a {
		case apiT9k, apiKubeflow:
			if !slices.Contains(o.apis, a) {
				o.apis = append(o.apis, a)
			}
		case "":
		default:
			return o, fmt.Errorf("--apis: unknown API %q: want t9k or kubeflow", name)
		}
	}
	if sizes == "" {
		sizes = sizePresets[scaleName]
	}
	for _, text := range strings.Split(sizes, ",") {
		if strings.TrimSpace(text) == "" {
			continue
		}
		sz, err := parseSize(text)
		if err != nil {
			return o, fmt.Errorf("--sizes: %w", err)
		}
		o.sizes = append(o.sizes, sz)
	}
	if o.sizesScenario() && (len(o.apis) == 0 || len(o.sizes) == 0) {
		return o, errors.New("the sizes scenario needs at least one of --apis and of --sizes")
	}
	if o.runs < 1 {
		return o, errors.New("--runs must be at least 1")
	}
	if o.thenPriority != 0 && !slices.ContainsFunc(o.sizes, size.mixed) {
		return o, errors.New("--then-priority: no mixed size (e.g. --sizes=1x5000+50x8) has a second part to run at it")
	}
	if o.kwokPodParallelism < 0 {
		return o, errors.New("--kwok-pod-parallelism must be 0 (KWOK's default) or more")
	}
	if o.floorConcurrency < 1 {
		return o, errors.New("--floor-concurrency must be at least 1")
	}
	o.operatorFlags = append(strings.Fields(operatorFlags), fs.Args()...)
	if o.peer {
		if !o.sizesScenario() {
			return o, errors.New("--peer plays the sizes scenario only")
		}
		if slices.Contains(o.apis, apiT9k) {
			return o, errors.New("--peer serves kubeflow.org only: --apis=kubeflow")
		}
		o.operatorFlags = append([]string{peerSchemes}, o.operatorFlags...)
	}
	if n := len(fs.Args()); n > 0 && !dashDashGiven(args, n) {
		return o, fmt.Errorf("unexpected argument %q (operator flags go after --)", fs.Args()[0])
	}
	if o.pprofSeconds == 0 {
		o.pprofSeconds = 10
		if s.isFull() {
			o.pprofSeconds = 30
		}
	}
	return o, nil
}

// dashDashGiven: the n trailing positional arguments came after a "--".
func dashDashGiven(args []string, n int) bool {
	i := len(args) - n - 1
	return i >= 0 && args[i] == "--"
}

// Identity of the operator (and of the floor's client) on the bench cluster.
const (
	operatorNamespace      = "trainyard-bench-system"
	operatorServiceAccount = "trainyard"
	// tokenValidity outlasts the longest run (the four full sizes, both APIs, take under an hour).
	tokenValidity = 6 * time.Hour
)

// run brings the cluster up with the operator's identity, plays the scenarios and reports, and
// always takes down what it started.
func run(ctx context.Context, o options) (err error) {
	repo, err := localrun.FindRepo()
	if err != nil {
		return err
	}
	if o.dir == "" {
		o.dir = filepath.Join(repo, ".devcluster", "bench")
	}
	if err := os.MkdirAll(o.dir, 0o755); err != nil {
		return err
	}
	if len(o.players) > 0 {
		return writeSideBySide(repo, o)
	}
	if o.scenarios["gang-restart"] && o.kwokDeleteDelay > 0 {
		if err := os.Setenv("KWOK_POD_DELETE_DELAY_MS", fmt.Sprint(o.kwokDeleteDelay.Milliseconds())); err != nil {
			return err
		}
	}
	if o.kwokPodParallelism > 0 {
		if err := os.Setenv("KWOK_POD_PARALLELISM", fmt.Sprint(o.kwokPodParallelism)); err != nil {
			return err
		}
	}
	loadBefore := localrun.LoadAverage()
	cl := localrun.Cluster{Repo: repo, Dir: o.dir, Name: o.clusterName, Nodes: o.nodes, NodePods: o.nodePods, NodeGPUs: o.nodeGPUs, Log: logf}
	if o.sizesScenario() {
		logf("sizes %v of %v; cluster %s in %s (%d nodes of %d pods, %d GPUs)", o.sizes, o.apis, cl.Name, cl.Dir, o.nodes, o.nodePods, o.nodeGPUs)
	} else {
		logf("scale %s; cluster %s in %s", o.scale.describe(), cl.Name, cl.Dir)
	}

	defer func() { err = errors.Join(err, cl.Release(o.keepCluster)) }()
	// The kubeflow.org CRDs for the sizes scenario only: the earlier scenarios' figures were
	// taken with the operator serving the T9k kinds alone.
	kubeflow := o.sizesScenario()
	conn, err := cl.Start(ctx, kubeflow, "benchscale")
	if err != nil {
		return err
	}
	id, err := cl.OperatorIdentity(ctx, conn, operatorNamespace, operatorServiceAccount, kubeflow, tokenValidity, filepath.Join(o.dir, "operator.kubeconfig"))
	if err != nil {
		return fmt.Errorf("the operator's ServiceAccount: %w", err)
	}
	if o.peer {
		if err := installPeer(ctx, cl, conn, id, repo); err != nil {
			return err
		}
	}
	flow, ferr := localrun.FlowOf(ctx, id.Config, conn, "/api/v1/namespaces/default/pods?limit=1")
	adminFlow, aerr := localrun.FlowOf(ctx, conn.Config, conn, "/api/v1/namespaces/default/pods?limit=1")
	apf := fmt.Sprintf("the operator runs as %s (token until %s, %s); APF classified its list of pods under %s; the admin kubeconfig's under %s",
		id.User(), id.Expires.UTC().Format("15:04 UTC"), id.Kubeconfig, flowText(flow, ferr), flowText(adminFlow, aerr))
	logf("%s", apf)
	if ferr == nil && flow.Exempt {
		return fmt.Errorf("the operator's identity is exempt from APF (%s): its figures would not be comparable", flow)
	}

	if o.sizesScenario() {
		return runSizes(ctx, o, repo, cl, conn, id, flow, apf, loadBefore)
	}
	return runEarlier(ctx, o, repo, cl, conn, id, apf)
}

func flowText(f localrun.Flow, err error) string {
	if err != nil {
		return "(not read: " + err.Error() + ")"
	}
	return f.String()
}

// runSizes plays the sizes scenario and reports it.
func runSizes(ctx context.Context, o options, repo string, cl localrun.Cluster, conn localrun.Connection, id localrun.Identity, flow localrun.Flow, apf, loadBefore string) error {
	c := &comparison{o: o, repo: repo, cluster: cl, conn: conn, id: id, flow: flow, runID: fmt.Sprint(time.Now().Unix())}
	if cpu, err := cl.ControlPlaneCPU(); err != nil {
		logf("the control plane's processes: %v; sizes start without waiting for it to be quiet", err)
	} else {
		c.controlPlaneCPU = cpu
	}
	runErr := c.run(ctx)
	if runErr != nil {
		c.notes = append(c.notes, "the run broke: "+runErr.Error())
	}
	var opWindows, floorWindows []window
	for _, r := range slices.Concat(c.sizes...) {
		opWindows = append(opWindows, window{name: r.windowName(""), from: r.created, to: r.end},
			window{name: r.windowName("start"), from: r.created, to: r.started})
	}
	for _, f := range c.floors {
		floorWindows = append(floorWindows, window{name: f.windowName(), from: f.created, to: f.end})
	}
	opAudit, err1 := readAuditOf(cl.AuditLog(), o.operatorAgent(), opWindows, filepath.Join(o.dir, "audit-trainyard.log"))
	floorAudit, err2 := readAuditOf(cl.AuditLog(), floorAgent, floorWindows, filepath.Join(o.dir, "audit-floor.log"))
	if err := errors.Join(err1, err2); err != nil {
		c.notes = append(c.notes, "audit log: "+err.Error())
	}
	header := sizesHeader(repo, o, apf, loadBefore, localrun.LoadAverage())
	md := c.markdown(header, opAudit, floorAudit)
	fmt.Println()
	fmt.Print(md)
	out := filepath.Join(o.dir, "results.md")
	if werr := errors.Join(os.WriteFile(out, []byte(md), 0o644), writeFigures(o.dir, c.figuresOf(header, opAudit))); werr != nil {
		return errors.Join(runErr, werr)
	}
	logf("results written to %s (and %s); operator logs %s", out, figuresFileName, filepath.Join(o.dir, "operator-*.log"))
	return runErr
}

// runEarlier plays the earlier scenarios (burst, big, gang-restart) against one operator.
func runEarlier(ctx context.Context, o options, repo string, cl localrun.Cluster, conn localrun.Connection, id localrun.Identity, apf string) error {
	op, err := localrun.StartOperator(ctx, localrun.OperatorConfig{
		Bin:        localrun.InRepo(repo, o.operatorBin),
		Kubeconfig: id.Kubeconfig,
		LogPath:    filepath.Join(o.dir, "operator.log"),
		ExtraFlags: o.operatorFlags,
		Pprof:      o.pprof,
		Log:        logf,
	})
	if err != nil {
		return err
	}
	defer op.Stop() // a no-op once stopped below

	res := &results{scale: o.scale, operatorStarted: op.StartedAt, notes: []string{apf}}
	b, err := newBench(ctx, conn, o, op, res)
	if err != nil {
		return err
	}
	runErr := b.run(ctx)
	b.stopWatches()
	if runErr != nil {
		res.notes = append(res.notes, "the run broke: "+runErr.Error())
	}

	res.peakRSSKB, _ = op.RSS("VmHWM")
	if err := op.Stop(); err != nil {
		res.notes = append(res.notes, "operator stop: "+err.Error())
	}
	res.operatorStopped = time.Now()
	if b.ns != "" && o.keepCluster {
		b.deleteNamespace()
	}

	audit, aerr := readAudit(cl.AuditLog(), res.windows(), filepath.Join(o.dir, "audit-trainyard.log"))
	if aerr != nil {
		res.notes = append(res.notes, "audit log: "+aerr.Error())
	}
	res.audit = audit
	md := res.markdown(describeRun(repo, o, op.Args))
	fmt.Println()
	fmt.Print(md)
	out := filepath.Join(o.dir, "results.md")
	if werr := os.WriteFile(out, []byte(md), 0o644); werr != nil {
		return errors.Join(runErr, werr)
	}
	logf("results written to %s; operator log %s", out, op.Config.LogPath)
	return errors.Join(runErr, aerr)
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[bench %s] %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}
