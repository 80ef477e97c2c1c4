// Package controller wires apis, render, apply and status into a controller-runtime manager.
// It makes no decision of its own about what a job creates: that is render's.
package controller

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	batchv1beta1 "github.com/trainyard/trainyard/apis/batch/v1beta1"
	kubeflowv1 "github.com/trainyard/trainyard/apis/kubeflow/v1"
	"github.com/trainyard/trainyard/apply"
	"github.com/trainyard/trainyard/render"
)

// Defaults of the flags, chosen on a 2-core machine so that a 1,000-pod job's pods are all created
// within seconds: the client's own rate limit must not be what holds creation back (the API
// server's Priority and Fairness protects it), and a job's creations go out 64 at a time.
const (
	DefaultMaxConcurrentReconciles = 32
	DefaultQPS                     = 500
	DefaultBurst                   = 1000
	DefaultCreateParallelism       = 64
	DefaultStatusInterval          = time.Second
	// The write gate's bounds (apply.WriteGate): see docs/benchmarks.md for the measurements
	// they were chosen from.
	DefaultMaxWritesInFlight = 32
	DefaultMinWritesInFlight = 4
	DefaultSlowWrite         = 2 * time.Second
	DefaultPodEventCoalesce  = 200 * time.Millisecond
	// DefaultMaxUnscheduledPods covers what the kube-scheduler binds at its default rate (50 a
	// second) while the operator reacts to its bindings: a pod-event window (1 s at 5,000 pods) and
	// a round, whose status write of a 5,000-pod T9k job took up to 4.4 s. See docs/design.md, "Pod
	// creation paced to the scheduler", and docs/benchmarks.md for the windows measured.
	DefaultMaxUnscheduledPods = 300
	// DefaultMaxUnscheduledPodsTotal is the same bound for all jobs together, shared between the
	// jobs paced to the scheduler: the kube-scheduler's queue of pods to bind is one for them all.
	DefaultMaxUnscheduledPodsTotal = DefaultMaxUnscheduledPods
)

// gateCooldown is the least time between two cuts of the write gate's limit: about the Retry-After
// second that Priority and Fairness gives with its 429s.
const gateCooldown = time.Second

// Options are the operator's command-line settings.
type Options struct {
	Kubeconfig              string
	LeaderElect             bool
	LeaderElectionNamespace string
	MetricsAddr             string
	HealthAddr              string
	PprofAddr               string
	MaxConcurrentReconciles int
	QPS                     float64
	Burst                   int
	// CreateParallelism bounds the pod creations and deletions in flight for one job.
	CreateParallelism int
	// MaxWritesInFlight and MinWritesInFlight bound the operator's writes in flight to the API
	// server, all jobs together; SlowWrite is how long a write may take before the bound is cut.
	MaxWritesInFlight int
	MinWritesInFlight int
	SlowWrite         time.Duration
	// PodEventCoalesce is how long a pod change other than its end or the start that makes all its
	// job's pods run, or a Service's change, may wait to wake its job, so that one round takes many
	// changes.
	PodEventCoalesce time.Duration
	// StatusInterval is the least time between two status writes of a job that change only counts.
	StatusInterval time.Duration
	// ClusterDomain is the cluster's DNS domain, for the fully qualified names render writes.
	ClusterDomain string
	// NodeLostAfter is how long a node may be NotReady or unreachable before its pods are taken
	// for lost: force-deleted and replaced as a disruption.
	NodeLostAfter time.Duration
	// MaxUnscheduledPods bounds a job's pods waiting for the scheduler; the rest are created as
	// those are bound (render.Input.MaxUnscheduledPods). Zero: no bound.
	MaxUnscheduledPods int
	// MaxUnscheduledPodsTotal bounds the same for all jobs together: a job gets at most an equal
	// part of it and at most MaxUnscheduledPods, and a job with more pods missing than that at most
	// what the other paced jobs' waiting pods leave (schedulerShares). Zero: each job has
	// MaxUnscheduledPods.
	MaxUnscheduledPodsTotal int
}

// Scheme holds every type the operator reads or writes.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(batchv1beta1.AddToScheme(s))
	utilruntime.Must(kubeflowv1.AddToScheme(s))
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	return s
}

// Main parses the operator's flags and runs it until interrupted.
func Main(args []string) error {
	var o Options
	// No stack trace on error lines unless --zap-stacktrace-level asks: a reconcile's error (a
	// quota's refusal, say) is logged at each retry, and its stack is always controller-runtime's.
	zapOpts := zap.Options{}
	fs := NewFlagSet(&o, &zapOpts)
	if err := fs.Set("zap-stacktrace-level", "panic"); err != nil {
		return err
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() > 0 {
		// Note: a verb after an operator flag (trainyard --leader-elect get) would otherwise start
		// an operator beside the one in the cluster.
		return fmt.Errorf("unexpected argument %q: the operator takes flags only; the command line is trainyard <verb> [flags] (trainyard help)", fs.Arg(0))
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	ctx := ctrl.SetupSignalHandler()
	// GOGC in the environment wins over the operator's own tuning (gctuner.go).
	if os.Getenv("GOGC") == "" {
		go tuneGC(ctx)
	}
	return Run(ctx, o)
}

// NewFlagSet is the operator's command line, bound to o and zapOpts.
func NewFlagSet(o *Options, zapOpts *zap.Options) *flag.FlagSet {
	fs := flag.NewFlagSet("trainyard", flag.ContinueOnError)
	fs.StringVar(&o.Kubeconfig, "kubeconfig", "", "path to a kubeconfig; empty: $KUBECONFIG, else ~/.kube/config, else the pod's ServiceAccount (in a cluster)")
	fs.BoolVar(&o.LeaderElect, "leader-elect", false, "elect a leader so that only one replica reconciles")
	fs.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", "", "namespace of the leader-election lease (default: the pod's own)")
	fs.StringVar(&o.MetricsAddr, "metrics-bind-address", "127.0.0.1:8080", "address of the metrics endpoint; 0 turns it off")
	fs.StringVar(&o.HealthAddr, "health-probe-bind-address", "127.0.0.1:8081", "address of /healthz and /readyz; 0 turns it off")
	fs.StringVar(&o.PprofAddr, "pprof-bind-address", "0", "address of the pprof endpoint (e.g. 127.0.0.1:6060); 0 turns it off")
	fs.IntVar(&o.MaxConcurrentReconciles, "max-concurrent-reconciles", DefaultMaxConcurrentReconciles, "jobs reconciled in parallel per kind")
	fs.Float64Var(&o.QPS, "kube-api-qps", DefaultQPS, "client queries per second to the API server (API Priority and Fairness protects the server)")
	fs.IntVar(&o.Burst, "kube-api-burst", DefaultBurst, "client burst to the API server")
	fs.IntVar(&o.CreateParallelism, "create-parallelism", DefaultCreateParallelism, "pod creations and deletions in flight per job (after one canary creation), within --max-writes-in-flight")
	fs.IntVar(&o.MaxWritesInFlight, "max-writes-in-flight", DefaultMaxWritesInFlight, "write requests in flight to the API server, all jobs together, shared fairly between them (status writes first, deletions last)")
	fs.IntVar(&o.MinWritesInFlight, "min-writes-in-flight", DefaultMinWritesInFlight, "the least the write bound is cut to when the API server answers 429 or writes are slow")
	fs.DurationVar(&o.SlowWrite, "slow-write", DefaultSlowWrite, "a write slower than this cuts the write bound, as a 429 does (0: only 429s do)")
	fs.DurationVar(&o.PodEventCoalesce, "pod-event-coalesce", DefaultPodEventCoalesce, "how long a pod's or a Service's change may wait to wake its job, so that one round takes many changes (a pod that ends, or the pod whose start makes all its job's pods run, wakes its job at once)")
	fs.DurationVar(&o.StatusInterval, "status-batch-interval", DefaultStatusInterval, "least time between two status writes of a job that change only pod counts (a Running job's: one more per further 1,000 pods, and at least 20 times as long as its last status write took, but not the change that brings its last pods running)")
	fs.StringVar(&o.ClusterDomain, "cluster-domain", render.DefaultClusterDomain, "the cluster's DNS domain (the kubelet's --cluster-domain), in torchrun's rendezvous endpoint")
	fs.IntVar(&o.MaxUnscheduledPods, "max-unscheduled-pods-per-job", DefaultMaxUnscheduledPods, "a job's pods created ahead of the scheduler: a missing pod waits while this many of the job's pods wait for the scheduler (not bound, not found unschedulable), so that a later job's pods are not queued behind a big job's; gang-scheduled jobs are never held (0: no bound)")
	fs.IntVar(&o.MaxUnscheduledPodsTotal, "max-unscheduled-pods", DefaultMaxUnscheduledPodsTotal, "pods created ahead of the scheduler by all jobs together: a job gets at most an equal part of it (the jobs holding pods back counted), and a job with more pods missing than that at most what the others' waiting pods leave (at least one), so that several big jobs starting at once keep no more pods waiting than one does; a job whose missing pods fit in its part creates them all (0: each job has --max-unscheduled-pods-per-job)")
	fs.DurationVar(&o.NodeLostAfter, "node-lost-after", render.DefaultNodeLostAfter, "how long a node may be NotReady or unreachable (from its Ready condition's last transition) before its pods are force-deleted and replaced as a disruption")
	zapOpts.BindFlags(fs)
	return fs
}

// kindRights are what serving a kind takes on its jobs: their list and watch (the controller's
// cache) and their status's patch.
var kindRights = []struct{ verb, subresource string }{{"list", ""}, {"watch", ""}, {"patch", "status"}}

// mayServe asks the API server (SelfSubjectAccessReview, which every authenticated identity may
// create) whether the operator may serve kind k, and returns the first right it lacks ("" if none).
func mayServe(ctx context.Context, c client.Client, k jobKind) (string, error) {
	plural := strings.TrimSuffix(crdName(k), "."+k.gvk.Group)
	for _, r := range kindRights {
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Group: k.gvk.Group, Resource: plural, Verb: r.verb, Subresource: r.subresource},
		}}
		if err := c.Create(ctx, review); err != nil {
			return "", err
		}
		if !review.Status.Allowed {
			return strings.TrimSuffix(r.verb+" "+plural+"/"+r.subresource, "/"), nil
		}
	}
	return "", nil
}

// crdName is the name of a kind's CRD: <plural>.<group>.
func crdName(k jobKind) string {
	return strings.ToLower(k.gvk.Kind) + "s." + k.gvk.Group
}

// LocalClusterContext is the kubeconfig context of the local cluster of make cluster-up and make
// run (hack/cluster.sh: kwok-$CLUSTER, CLUSTER=trainyard).
const LocalClusterContext = "kwok-trainyard"

// KubeflowInstall says how to install the opt-in kubeflow.org kinds into the cluster of the
// kubeconfig context named context ("" in a pod): on the local cluster, whose operator (make run)
// has every right, the Makefile's target for their CRDs; elsewhere the overlay with its RBAC, or
// the chart's value.
func KubeflowInstall(context string) string {
	if context == LocalClusterContext {
		return "make install-kubeflow, on the local cluster of make run"
	}
	return "kubectl apply -k kustomize/kubeflow, or the chart's kubeflow.enabled=true"
}

// rightsRecheck is how often the operator asks again whether it may serve a kubeflow.org kind:
// one it lacked the rights to serve (granted by a later install of kustomize/kubeflow), and one it
// serves (a right taken away, by the chart's kubeflow.enabled turned off, say).
const rightsRecheck = 30 * time.Second

// kindServer serves the opt-in kubeflow.org kinds: each once its CRD is created and established
// and the operator may serve it (mayServe), so installing the kustomize/kubeflow overlay or
// granting its rights takes no restart. A controller is only added once the API server serves
// its kind and the operator may watch it: a watch refused keeps every controller's cache from
// syncing, and the operator stops. For the same reason a served kind whose rights are taken away
// stops the operator (a controller cannot be removed from a running manager), saying why: started
// again, it leaves that kind alone.
//
// Note: it runs once this replica leads (a leader-election runnable), not at the process's start:
// a standby may lead long after it started, with other rights.
type kindServer struct {
	mapper meta.RESTMapper
	may    func(jobKind) (string, error)
	setup  func(jobKind) error
	// created receives the name of each CRD created (the CRD tracker's).
	created <-chan string
	// every is how often rights are asked again (rightsRecheck).
	every time.Duration
	// install says how to install the kinds' CRDs (KubeflowInstall).
	install string
}

func (ks *kindServer) run(ctx context.Context, later []jobKind) error {
	log := ctrl.Log.WithName("setup")
	tick := time.NewTicker(ks.every)
	defer tick.Stop()
	var served []jobKind
	// lacking: the kinds found installed without the rights to serve them (logged once).
	lacking := map[string]bool{}
	for first := true; ; first = false {
		patience := time.Duration(0) // one look, unless a CRD was just created
		if !first {
			select {
			case <-ctx.Done():
				return nil
			case <-tick.C:
				for _, k := range served {
					// Note: an error (the API server briefly away) is no verdict; a denial is.
					if why, err := ks.may(k); err == nil && why != "" {
						return fmt.Errorf("the operator no longer has a right it needs to serve %s (denied: %s): stopping, so that, started again, it leaves the kind alone (or grant the right back: kustomize/kubeflow, or the chart's kubeflow.enabled=true)", k.gvk.GroupKind(), why)
					}
				}
				if !slices.ContainsFunc(later, func(k jobKind) bool { return lacking[k.gvk.Kind] }) {
					continue // no kind waits for rights; a CRD's creation is announced
				}
			case name := <-ks.created:
				if !slices.ContainsFunc(later, func(k jobKind) bool { return crdName(k) == name }) {
					continue
				}
				// A CRD was just created: wait (up to a minute) for its kind to be served.
				patience = time.Minute
			}
		}
		deadline := time.Now().Add(patience)
		var denied []jobKind
		for once := true; len(later) > 0 && (once || time.Now().Before(deadline)) && ctx.Err() == nil; once = false {
			var still []jobKind
			for _, k := range later {
				_, err := ks.mapper.RESTMapping(k.gvk.GroupKind(), k.gvk.Version)
				if err != nil {
					if first {
						log.Info("not serving a kind yet: its CRD is not installed ("+ks.install+"); it is served once it is", "kind", k.gvk.GroupKind().String())
					}
					still = append(still, k)
					continue
				}
				if why, err := ks.may(k); err != nil || why != "" {
					if err != nil {
						log.Error(err, "asking the API server what the operator may do with a kind; asked again every "+ks.every.String(), "kind", k.gvk.GroupKind().String())
						lacking[k.gvk.Kind] = true
					}
					if why != "" && !lacking[k.gvk.Kind] {
						lacking[k.gvk.Kind] = true
						log.Info("not serving a kind: its CRD is installed but the operator has not the rights to serve it (kustomize/kubeflow or the chart's kubeflow.enabled=true grant them); asked again every "+ks.every.String(), "kind", k.gvk.GroupKind().String(), "denied", why)
					}
					denied = append(denied, k)
					continue
				}
				if err := ks.setup(k); err != nil {
					log.Error(err, "setting up a controller for a kind; tried again every "+ks.every.String(), "kind", k.gvk.GroupKind().String())
					lacking[k.gvk.Kind] = true
					denied = append(denied, k)
					continue
				}
				served = append(served, k)
				delete(lacking, k.gvk.Kind)
				log.Info("serving a kind", "kind", k.gvk.GroupKind().String())
			}
			later = still
			if len(later) > 0 && patience > 0 {
				time.Sleep(500 * time.Millisecond)
			}
		}
		later = append(later, denied...)
	}
}

// cachesSynced is a readiness check that passes once every informer of c has synced.
func cachesSynced(c cache.Cache) healthz.Checker {
	return func(req *http.Request) error {
		ctx, cancel := context.WithTimeout(req.Context(), time.Second)
		defer cancel()
		if !c.WaitForCacheSync(ctx) {
			return errors.New("the caches have not synced (a watch refused or the API server unreachable: see the log)")
		}
		return nil
	}
}

// checkListen fails when addr (an operator flag's listening address) is taken, naming the flag:
// controller-runtime finds a taken metrics port only once it starts, after the caches, in words
// that name no flag (a second operator on the machine, or anything on 8080).
func checkListen(flag, addr string) error {
	if addr == "" || addr == "0" {
		return nil // off
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("--%s=%s: %w (another operator on this machine? give it another address, or 0 to turn it off)", flag, addr, err)
	}
	return l.Close()
}

// Run starts the manager with o and blocks until ctx ends.
func Run(ctx context.Context, o Options) error {
	loading := clientcmd.NewDefaultClientConfigLoadingRules()
	loading.ExplicitPath = o.Kubeconfig
	kubeconfig := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(loading, nil)
	cfg, err := kubeconfig.ClientConfig()
	if clientcmd.IsEmptyConfig(err) {
		// client-go's own words point at KUBERNETES_MASTER, which nothing here reads.
		return errors.New("no cluster to run against: no kubeconfig found and not in a cluster (set --kubeconfig or $KUBECONFIG, or write ~/.kube/config; trainyard help for the flags and the command line)")
	}
	if err != nil {
		return fmt.Errorf("loading kubeconfig: %w", err)
	}
	cfg.QPS, cfg.Burst = float32(o.QPS), o.Burst
	cfg.UserAgent = "trainyard"
	// Every write made for a job passes one gate, whatever reconcile or kind sends it.
	gate := apply.NewWriteGate(apply.GateOptions{Max: o.MaxWritesInFlight, Min: o.MinWritesInFlight, Slow: o.SlowWrite, Cooldown: gateCooldown})
	cfg.Wrap(gate.Wrap)
	if o.LeaderElect && o.LeaderElectionNamespace == "" && os.Getenv("KUBERNETES_SERVICE_HOST") == "" {
		return errors.New("--leader-elect outside a cluster needs --leader-election-namespace (the namespace of the lease)")
	}

	for _, a := range []struct{ flag, addr string }{
		{"metrics-bind-address", o.MetricsAddr}, {"health-probe-bind-address", o.HealthAddr}, {"pprof-bind-address", o.PprofAddr},
	} {
		if err := checkListen(a.flag, a.addr); err != nil {
			return err
		}
	}

	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  Scheme(),
		Cache:                   cacheOptions(),
		Metrics:                 metricsserver.Options{BindAddress: o.MetricsAddr},
		HealthProbeBindAddress:  o.HealthAddr,
		PprofBindAddress:        o.PprofAddr,
		LeaderElection:          o.LeaderElect,
		LeaderElectionID:        "trainyard.batch.tensorstack.dev",
		LeaderElectionNamespace: o.LeaderElectionNamespace,
		// A replica that stops gives the lease up at once, so another takes over without waiting
		// for it to expire.
		LeaderElectionReleaseOnCancel: true,
	})
	if err != nil {
		return fmt.Errorf("creating manager: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	// Ready once the caches have synced: a watch the API server refuses (a right taken away) keeps
	// the operator unready rather than answering 200 while no controller can start.
	if err := mgr.AddReadyzCheck("readyz", cachesSynced(mgr.GetCache())); err != nil {
		return err
	}
	pods, err := indexByController[corev1.Pod](ctx, mgr, &corev1.Pod{})
	if err != nil {
		return err
	}
	services, err := indexByController[corev1.Service](ctx, mgr, &corev1.Service{})
	if err != nil {
		return err
	}
	if err := indexPodsByNode(ctx, mgr); err != nil {
		return err
	}
	s := newShared(mgr.GetClient())
	s.shares = newSchedulerShares(o.MaxUnscheduledPodsTotal, o.MaxUnscheduledPods)
	md, err := metadata.NewForConfig(mgr.GetConfig())
	if err != nil {
		return err
	}
	s.applier.WriteThroughMetadata(md, mgr.GetRESTMapper(), mgr.GetScheme())
	s.pods, s.services = pods, services
	s.metrics.gate = gate
	if err := s.metrics.register(); err != nil {
		return err
	}
	if err := s.crds.discoverBuiltin(mgr.GetRESTMapper()); err != nil {
		return err
	}
	ks := &kindServer{
		mapper:  mgr.GetRESTMapper(),
		may:     func(k jobKind) (string, error) { return mayServe(ctx, mgr.GetClient(), k) },
		setup:   func(k jobKind) error { return setupJobController(mgr, s, k, o) },
		created: s.crds.created,
		every:   rightsRecheck,
		install: KubeflowInstall(currentContext(kubeconfig)),
	}
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		return ks.run(ctx, []jobKind{pyTorchJobKind, tfJobKind})
	})); err != nil {
		return err
	}
	kinds := []jobKind{pyTorchKind, tensorFlowKind}
	var names []string
	for _, k := range kinds {
		if err := setupJobController(mgr, s, k, o); err != nil {
			return fmt.Errorf("setting up the %s controller: %w", k.gvk.Kind, err)
		}
		names = append(names, k.gvk.GroupKind().String())
	}
	ctrl.Log.WithName("setup").Info("starting trainyard (the kubeflow.org kinds are served once this replica leads, if their CRDs are installed and the operator may serve them)",
		append([]any{"kinds", names}, settings(o)...)...)
	return mgr.Start(ctx)
}

// settings are the start-up log's key-value pairs: every flag that changes what the operator
// does, so that a log says how the operator that wrote it ran. Note: keyed by the flags' names,
// which a user sets (the log said qps and burst for --kube-api-qps and --kube-api-burst).
func settings(o Options) []any {
	return []any{
		"max-concurrent-reconciles", o.MaxConcurrentReconciles, "kube-api-qps", o.QPS, "kube-api-burst", o.Burst, "create-parallelism", o.CreateParallelism,
		"max-writes-in-flight", o.MaxWritesInFlight, "min-writes-in-flight", o.MinWritesInFlight, "slow-write", o.SlowWrite,
		"pod-event-coalesce", o.PodEventCoalesce, "status-batch-interval", o.StatusInterval, "cluster-domain", o.ClusterDomain,
		"node-lost-after", o.NodeLostAfter, "max-unscheduled-pods-per-job", o.MaxUnscheduledPods, "max-unscheduled-pods", o.MaxUnscheduledPodsTotal,
		"leader-elect", o.LeaderElect,
	}
}

// currentContext is the name of the kubeconfig's current context; "" without one (in a pod).
func currentContext(c clientcmd.ClientConfig) string {
	raw, err := c.RawConfig()
	if err != nil {
		return ""
	}
	return raw.CurrentContext
}
