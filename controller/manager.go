// Package controller wires apis, render, apply and status into a controller-runtime manager.
// It makes no decision of its own about what a job creates: that is render's.
package controller

import (
	"context"
	"errors"
	"flag"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	batchv1beta1 "github.com/trainyard/trainyard/apis/batch/v1beta1"
)

// Options are the operator's command-line settings.
type Options struct {
	Kubeconfig              string
	LeaderElect             bool
	LeaderElectionNamespace string
	MetricsAddr             string
	HealthAddr              string
	MaxConcurrentReconciles int
	QPS                     float64
	Burst                   int
}

// Scheme holds every type the operator reads or writes.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(batchv1beta1.AddToScheme(s))
	return s
}

// Main parses the operator's flags and runs it until interrupted.
func Main(args []string) error {
	fs := flag.NewFlagSet("trainyard", flag.ContinueOnError)
	var o Options
	fs.StringVar(&o.Kubeconfig, "kubeconfig", "", "path to a kubeconfig; empty means in-cluster or $KUBECONFIG")
	fs.BoolVar(&o.LeaderElect, "leader-elect", false, "elect a leader so that only one replica reconciles")
	fs.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", "", "namespace of the leader-election lease (default: the pod's own)")
	fs.StringVar(&o.MetricsAddr, "metrics-bind-address", "127.0.0.1:8080", "address of the metrics endpoint; 0 turns it off")
	fs.StringVar(&o.HealthAddr, "health-probe-bind-address", "127.0.0.1:8081", "address of /healthz and /readyz; 0 turns it off")
	fs.IntVar(&o.MaxConcurrentReconciles, "max-concurrent-reconciles", 4, "jobs reconciled in parallel per kind")
	fs.Float64Var(&o.QPS, "kube-api-qps", 50, "client queries per second to the API server")
	fs.IntVar(&o.Burst, "kube-api-burst", 100, "client burst to the API server")
	zapOpts := zap.Options{}
	zapOpts.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	return Run(ctrl.SetupSignalHandler(), o)
}

// Run starts the manager with o and blocks until ctx ends.
func Run(ctx context.Context, o Options) error {
	loading := clientcmd.NewDefaultClientConfigLoadingRules()
	loading.ExplicitPath = o.Kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(loading, nil).ClientConfig()
	if err != nil {
		return fmt.Errorf("loading kubeconfig: %w", err)
	}
	cfg.QPS, cfg.Burst = float32(o.QPS), o.Burst
	cfg.UserAgent = "trainyard"

	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  Scheme(),
		Metrics:                 metricsserver.Options{BindAddress: o.MetricsAddr},
		HealthProbeBindAddress:  o.HealthAddr,
		LeaderElection:          o.LeaderElect,
		LeaderElectionID:        "trainyard.batch.tensorstack.dev",
		LeaderElectionNamespace: o.LeaderElectionNamespace,
	})
	if err != nil {
		return fmt.Errorf("creating manager: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return err
	}
	ctrl.Log.WithName("setup").Info("starting trainyard: APIs installed and validated; job controllers are not built yet")
	return mgr.Start(ctx)
}
