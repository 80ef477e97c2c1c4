// Command training-operator.v1 runs Kubeflow's training-operator v1.8.1 (its controllers, from
// its own module) on a local cluster, so that make bench-scale measures the peer of issue 19
// beside Trainyard on the same harness rather than quoting figures taken elsewhere.
//
// It is a separate Go module (the peer pins k8s.io 0.29 and controller-runtime 0.17) built by
// `make peer` into bin/peer/. What differs from the peer's own command, and why:
//   - Every listener is on an address the caller gives (the bench gives loopback ones): metrics,
//     health probes and, new, pprof.
//   - The client's QPS and burst are flags (--kube-api-qps, --kube-api-burst), which v1.8.1's
//     command lacks: the "tuned" peer ran at 1000 and 2000. Left unset, the client keeps
//     controller-runtime's defaults (20 and 30), as the peer's command does.
//   - No admission webhook: the peer's validating webhooks need a serving certificate, a Secret
//     and a webhook configuration, and listen on every interface. They check a job once, when it
//     is created; nothing the bench times passes through them.
//
// Everything else is the peer's: its reconcilers (SupportedSchemeReconciler), its gang
// scheduling setup (--gang-scheduler-name: volcano or a scheduler-plugins name; none by default,
// as the bench plays it; hack/parity compares PodGroups with it), --controller-threads (default
// 1), --enable-scheme (default: every kind; the bench enables pytorchjob, the kind it plays), its
// init-container settings and defaults, and the development-mode zap logger.
package main

import (
	"flag"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"

	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	schedulerpluginsv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	volcanoclient "volcano.sh/apis/pkg/client/clientset/versioned"

	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	"github.com/kubeflow/training-operator/pkg/config"
	controllerv1 "github.com/kubeflow/training-operator/pkg/controller.v1"
	"github.com/kubeflow/training-operator/pkg/controller.v1/common"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "training-operator.v1:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		metricsAddr, probeAddr, pprofAddr string
		gangSchedulerName                 string
		qps                               float64
		burst, threads                    int
		schemes                           controllerv1.EnabledSchemes
	)
	flag.StringVar(&metricsAddr, "metrics-bind-address", "127.0.0.1:8080", "address of the metrics endpoint")
	flag.StringVar(&probeAddr, "health-probe-bind-address", "127.0.0.1:8081", "address of the health probes")
	flag.StringVar(&pprofAddr, "pprof-bind-address", "", "address of the pprof endpoint (none when empty)")
	flag.Float64Var(&qps, "kube-api-qps", 0, "the client's requests a second (0: controller-runtime's default, 20)")
	flag.IntVar(&burst, "kube-api-burst", 0, "the client's burst (0: controller-runtime's default, 30)")
	flag.IntVar(&threads, "controller-threads", 1, "worker threads of each controller (the peer's flag and default)")
	flag.StringVar(&gangSchedulerName, "gang-scheduler-name", "", "the gang scheduler of every job: volcano, or a scheduler-plugins scheduler's name (the peer's flag; default none)")
	flag.Var(&schemes, "enable-scheme", "a kind to serve, e.g. pytorchjob; repeat for more (the peer's flag; default every kind)")
	// The peer's settings of its workers' init container (which waits for the master's name to
	// resolve), with its defaults: its reconciler reads them from this package-level config.
	flag.StringVar(&config.Config.PyTorchInitContainerImage, "pytorch-init-container-image", config.PyTorchInitContainerImageDefault, "the image of the PyTorch workers' init container (the peer's flag)")
	flag.StringVar(&config.Config.PyTorchInitContainerTemplateFile, "pytorch-init-container-template-file", config.PyTorchInitContainerTemplateFileDefault, "the template of that init container, when the file exists (the peer's flag)")
	flag.IntVar(&config.Config.PyTorchInitContainerMaxTries, "pytorch-init-container-max-tries", config.PyTorchInitContainerMaxTriesDefault, "how often that init container tries (the peer's flag)")
	flag.StringVar(&config.Config.MPIKubectlDeliveryImage, "mpi-kubectl-delivery-image", config.MPIKubectlDeliveryImageDefault, "the image of an MPIJob launcher's init container (the peer's flag)")
	logOpts := zap.Options{Development: true, StacktraceLevel: zapcore.DPanicLevel}
	logOpts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&logOpts)))

	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(kubeflowv1.AddToScheme(scheme))
	utilruntime.Must(volcanov1beta1.AddToScheme(scheme))
	utilruntime.Must(schedulerpluginsv1alpha1.AddToScheme(scheme))

	cfg, err := ctrl.GetConfig()
	if err != nil {
		return err
	}
	if qps != 0 {
		cfg.QPS = float32(qps)
	}
	if burst != 0 {
		cfg.Burst = burst
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: metricsAddr},
		HealthProbeBindAddress: probeAddr,
		PprofBindAddress:       pprofAddr,
	})
	if err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if schemes.Empty() {
		schemes.FillAll()
	}
	// Ready once the informers of pods, Services and (when served) PyTorchJobs have synced: the
	// peer's command is ready once its webhook serves, and the bench creates jobs only once an
	// operator is ready.
	watched := []client.Object{&corev1.Pod{}, &corev1.Service{}}
	if slices.Contains(schemes, kubeflowv1.PyTorchJobKind) {
		watched = append(watched, &kubeflowv1.PyTorchJob{})
	}
	if err := mgr.AddReadyzCheck("informers", func(req *http.Request) error {
		for _, obj := range watched {
			inf, err := mgr.GetCache().GetInformer(req.Context(), obj, cache.BlockUntilSynced(false))
			if err != nil {
				return err
			}
			if !inf.HasSynced() {
				return fmt.Errorf("the %T informer has not synced", obj)
			}
		}
		return nil
	}); err != nil {
		return err
	}
	// As the peer's command chooses it (its validateCRD, which only logs, left out).
	gangSetup := common.GenNonGangSchedulerSetupFunc()
	if strings.EqualFold(gangSchedulerName, string(common.GangSchedulerVolcano)) {
		gangSetup = common.GenVolcanoSetupFunc(volcanoclient.NewForConfigOrDie(cfg))
	} else if gangSchedulerName != "" {
		gangSetup = common.GenSchedulerPluginsSetupFunc(mgr.GetClient(), gangSchedulerName)
	}
	for _, kind := range schemes {
		setup, ok := controllerv1.SupportedSchemeReconciler[kind]
		if !ok {
			return fmt.Errorf("--enable-scheme=%s: not a kind the peer serves", strings.ToLower(kind))
		}
		if err := setup(mgr, gangSetup, threads); err != nil {
			return fmt.Errorf("setting up the %s controller: %w", kind, err)
		}
	}
	ctrl.Log.WithName("setup").Info("starting", "schemes", schemes.String(), "qps", cfg.QPS, "burst", cfg.Burst, "threads", threads)
	return mgr.Start(ctrl.SetupSignalHandler())
}
