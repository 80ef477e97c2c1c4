package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
)

// cluster is the bench's own loopback cluster, run by hack/cluster.sh with its own
// DEVCLUSTER_DIR and name, so it never touches the developer's cluster.
type cluster struct {
	repo  string
	dir   string // DEVCLUSTER_DIR
	name  string // CLUSTER
	nodes int    // NODES
}

func (c cluster) kubeconfig() string { return filepath.Join(c.dir, "kubeconfig") }

// kubectl is the pinned kubectl that hack/cluster.sh links into the work dir.
func (c cluster) kubectl() string { return filepath.Join(c.dir, "bin", "kubectl") }

// auditLog has one line per write request to the API server (hack/kwok/audit-policy.yaml).
func (c cluster) auditLog() string {
	return filepath.Join(c.dir, "kwok", "clusters", c.name, "logs", "audit.log")
}

func (c cluster) env() []string {
	return append(os.Environ(), "DEVCLUSTER_DIR="+c.dir, "CLUSTER="+c.name, "NODES="+strconv.Itoa(c.nodes))
}

// up starts the cluster (a no-op if one of that name is already up and healthy, e.g. kept by an
// earlier --keep-cluster run: the bench then works in a fresh namespace and counts only the
// audit lines of its own run).
func (c cluster) up(ctx context.Context) error {
	logf("starting the cluster: hack/cluster.sh up (NODES=%d)", c.nodes)
	return c.script(ctx, "up")
}

// down stops the cluster and every process it started. It runs even after an interrupt.
func (c cluster) down() error {
	logf("stopping the cluster: hack/cluster.sh down")
	return c.script(context.Background(), "down")
}

func (c cluster) script(ctx context.Context, verb string) error {
	cmd := exec.CommandContext(ctx, filepath.Join(c.repo, "hack", "cluster.sh"), verb)
	cmd.Env = c.env()
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("hack/cluster.sh %s: %w", verb, err)
	}
	return nil
}

// installCRDs installs the CRDs as `make install` does and waits until they are served.
func (c cluster) installCRDs(ctx context.Context) error {
	logf("installing the CRDs")
	if err := c.run(ctx, "apply", "--server-side", "--force-conflicts", "-k", filepath.Join(c.repo, "kustomize", "crd")); err != nil {
		return err
	}
	// kubectl wait fails at once on a CRD too new to have conditions: ask again for up to 60 s.
	deadline := time.Now().Add(60 * time.Second)
	for {
		err := c.run(ctx, "wait", "--for=condition=Established", "crd", "--all", "--timeout=60s")
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// run runs the pinned kubectl against the cluster.
func (c cluster) run(ctx context.Context, args ...string) error {
	cmd := exec.CommandContext(ctx, c.kubectl(), append([]string{"--kubeconfig", c.kubeconfig()}, args...)...)
	cmd.Env = append(os.Environ(), "KUBECACHEDIR="+filepath.Join(c.dir, "cache"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("kubectl %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

// benchLabel marks the namespaces the bench creates, one per run.
const benchLabel = "app.kubernetes.io/managed-by"

// connection is the bench's own client to the cluster.
type connection struct {
	cfg    *rest.Config
	scheme *runtime.Scheme
	kube   client.Client
}

func (c cluster) connect() (connection, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig())
	if err != nil {
		return connection{}, err
	}
	// High enough that the bench's own client never holds anything back.
	cfg.QPS, cfg.Burst = 500, 1000
	// Not "trainyard...": the audit counts requests of that user agent as the operator's.
	cfg.UserAgent = "benchscale"
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(batch.AddToScheme(scheme))
	kube, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return connection{}, err
	}
	return connection{cfg: cfg, scheme: scheme, kube: kube}, nil
}

// removeLeftovers deletes the namespaces of earlier runs (on a cluster kept by --keep-cluster)
// and waits until they are gone, so that the operator starts with nothing to do.
func (conn connection) removeLeftovers(ctx context.Context) error {
	var list corev1.NamespaceList
	if err := conn.kube.List(ctx, &list, client.MatchingLabels{benchLabel: "benchscale"}); err != nil {
		return err
	}
	if len(list.Items) == 0 {
		return nil
	}
	logf("removing %d namespaces of earlier runs", len(list.Items))
	for i := range list.Items {
		if err := conn.kube.Delete(ctx, &list.Items[i]); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if err := conn.kube.List(ctx, &list, client.MatchingLabels{benchLabel: "benchscale"}); err != nil {
			return err
		}
		if len(list.Items) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d namespaces of earlier runs still there after 2 min (%s, ...)", len(list.Items), list.Items[0].Name)
		}
		if err := sleep(ctx, 200*time.Millisecond); err != nil {
			return err
		}
	}
}
