package localrun

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
	kubeflowv1 "github.com/trainyard/trainyard/apis/kubeflow/v1"
)

// Cluster is a loopback cluster run by hack/cluster.sh with its own DEVCLUSTER_DIR and name.
type Cluster struct {
	Repo  string
	Dir   string // DEVCLUSTER_DIR
	Name  string // CLUSTER
	Nodes int    // NODES
	// NodePods and NodeGPUs are the pods and nvidia.com/gpu each node advertises (NODE_PODS,
	// NODE_GPUS); 0 keeps hack/cluster.sh's defaults.
	NodePods, NodeGPUs int
	Log                Logf
}

// Kubeconfig is the cluster's kubeconfig file.
func (c Cluster) Kubeconfig() string { return filepath.Join(c.Dir, "kubeconfig") }

// kubectl is the pinned kubectl that hack/cluster.sh links into the work dir.
func (c Cluster) kubectl() string { return filepath.Join(c.Dir, "bin", "kubectl") }

// AuditLog has one line per write request to the API server (hack/kwok/audit-policy.yaml).
func (c Cluster) AuditLog() string {
	return filepath.Join(c.Dir, "kwok", "clusters", c.Name, "logs", "audit.log")
}

// ProcessCPU is CPU seconds by process name (ControlPlanePIDs' names).
type ProcessCPU map[string]float64

// Sum is the seconds of every process together.
func (p ProcessCPU) Sum() float64 {
	var sum float64
	for _, s := range p {
		sum += s
	}
	return sum
}

// Since is what each process used after earlier, a reading of the same processes.
func (p ProcessCPU) Since(earlier ProcessCPU) ProcessCPU {
	d := make(ProcessCPU, len(p))
	for name, s := range p {
		d[name] = s - earlier[name]
	}
	return d
}

// ControlPlaneCPU returns a reader of the CPU seconds each of the cluster's processes has used so
// far (ProcessCPUSeconds of each of ControlPlanePIDs, found once, now).
func (c Cluster) ControlPlaneCPU() (func() (ProcessCPU, error), error) {
	pids, err := c.ControlPlanePIDs()
	if err != nil {
		return nil, err
	}
	return func() (ProcessCPU, error) {
		used := make(ProcessCPU, len(pids))
		for name, pid := range pids {
			s, err := ProcessCPUSeconds(pid)
			if err != nil {
				return nil, fmt.Errorf("%s (pid %d): %w", name, pid, err)
			}
			used[name] = s
		}
		return used, nil
	}, nil
}

// ControlPlanePIDs are the processes hack/cluster.sh started for the cluster (etcd, the
// kube-apiserver, the controller-manager, the scheduler and KWOK), by their names, from the pid
// files kwokctl keeps.
func (c Cluster) ControlPlanePIDs() (map[string]int, error) {
	files, err := filepath.Glob(filepath.Join(c.Dir, "kwok", "clusters", c.Name, "pids", "*.pid"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no pid files of cluster %s in %s", c.Name, c.Dir)
	}
	pids := make(map[string]int, len(files))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		pids[strings.TrimSuffix(filepath.Base(f), ".pid")] = pid
	}
	return pids, nil
}

// DownCommand is the shell command that stops the cluster by hand (after a kept run).
func (c Cluster) DownCommand() string {
	return fmt.Sprintf("DEVCLUSTER_DIR=%s CLUSTER=%s hack/cluster.sh down", c.Dir, c.Name)
}

func (c Cluster) env() []string {
	env := append(os.Environ(), "DEVCLUSTER_DIR="+c.Dir, "CLUSTER="+c.Name, "NODES="+strconv.Itoa(c.Nodes))
	if c.NodePods > 0 {
		env = append(env, "NODE_PODS="+strconv.Itoa(c.NodePods))
	}
	if c.NodeGPUs > 0 {
		env = append(env, "NODE_GPUS="+strconv.Itoa(c.NodeGPUs))
	}
	return env
}

// Up starts the cluster (a no-op if one of that name is already up and healthy, e.g. kept by an
// earlier run: the caller then works in a fresh namespace).
func (c Cluster) Up(ctx context.Context) error {
	c.Log("starting the cluster: hack/cluster.sh up (NODES=%d)", c.Nodes)
	return c.script(ctx, "up")
}

// Down stops the cluster and every process it started. It runs even after an interrupt.
func (c Cluster) Down() error {
	c.Log("stopping the cluster: hack/cluster.sh down")
	return c.script(context.Background(), "down")
}

// Start brings the cluster up with the CRDs (with kubeflow, the kubeflow.org ones too), connects
// to it as command and removes the namespaces an earlier run of the command left there.
func (c Cluster) Start(ctx context.Context, kubeflow bool, command string) (Connection, error) {
	if err := c.Up(ctx); err != nil {
		return Connection{}, err
	}
	if err := c.InstallCRDs(ctx, kubeflow); err != nil {
		return Connection{}, err
	}
	conn, err := c.Connect(command)
	if err != nil {
		return Connection{}, err
	}
	return conn, conn.RemoveNamespaces(ctx, c.Log, command)
}

// Release stops the cluster, or with keep leaves it running and says how to stop it.
func (c Cluster) Release(keep bool) error {
	if keep {
		c.Log("cluster kept (--keep-cluster): stop it with %s", c.DownCommand())
		return nil
	}
	return c.Down()
}

func (c Cluster) script(ctx context.Context, verb string) error {
	cmd := exec.CommandContext(ctx, filepath.Join(c.Repo, "hack", "cluster.sh"), verb)
	cmd.Env = c.env()
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("hack/cluster.sh %s: %w", verb, err)
	}
	return nil
}

// InstallCRDs installs Trainyard's CRDs as `make install` does, and with kubeflow also the
// kubeflow.org CRDs of the opt-in overlay (its RBAC comes with OperatorIdentity, for a caller that
// runs the operator under a ServiceAccount), then waits until every CRD is served.
func (c Cluster) InstallCRDs(ctx context.Context, kubeflow bool) error {
	c.Log("installing the CRDs")
	if err := c.Kubectl(ctx, "apply", "--server-side", "--force-conflicts", "-k", filepath.Join(c.Repo, "kustomize", "crd")); err != nil {
		return err
	}
	if kubeflow {
		if err := c.Kubectl(ctx, "apply", "--server-side", "--force-conflicts", "-f", filepath.Join(c.Repo, "kustomize", "kubeflow", "crd")); err != nil {
			return err
		}
	}
	// kubectl wait fails at once on a CRD too new to have conditions: ask again for up to 60 s.
	deadline := time.Now().Add(60 * time.Second)
	for {
		err := c.Kubectl(ctx, "wait", "--for=condition=Established", "crd", "--all", "--timeout=60s")
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// Kubectl runs the pinned kubectl against the cluster.
func (c Cluster) Kubectl(ctx context.Context, args ...string) error {
	cmd := exec.CommandContext(ctx, c.kubectl(), append([]string{"--kubeconfig", c.Kubeconfig()}, args...)...)
	cmd.Env = append(os.Environ(), "KUBECACHEDIR="+filepath.Join(c.Dir, "cache"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("kubectl %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

// Connection is a command's own client to the cluster.
type Connection struct {
	Config *rest.Config
	Scheme *runtime.Scheme
	Kube   client.Client
}

// Connect makes a client of the cluster that knows both APIs' types. userAgent must not start
// with "trainyard": the audit log counts requests of that user agent as the operator's.
func (c Cluster) Connect(userAgent string) (Connection, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig())
	if err != nil {
		return Connection{}, err
	}
	// High enough that the command's own client never holds anything back.
	cfg.QPS, cfg.Burst = 500, 1000
	cfg.UserAgent = userAgent
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(batch.AddToScheme(scheme))
	utilruntime.Must(kubeflowv1.AddToScheme(scheme))
	kube, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return Connection{}, err
	}
	return Connection{Config: cfg, Scheme: scheme, Kube: kube}, nil
}

// ManagedByLabel marks the namespaces a command creates, with the command's name as its value.
const ManagedByLabel = "app.kubernetes.io/managed-by"

// RemoveNamespaces deletes the namespaces an earlier run of the command left (on a cluster kept
// from that run) and waits until they are gone, so that the operator starts with nothing to do.
func (conn Connection) RemoveNamespaces(ctx context.Context, log Logf, command string) error {
	var list corev1.NamespaceList
	if err := conn.Kube.List(ctx, &list, client.MatchingLabels{ManagedByLabel: command}); err != nil {
		return err
	}
	if len(list.Items) == 0 {
		return nil
	}
	log("removing %d namespaces of earlier runs", len(list.Items))
	for i := range list.Items {
		if err := conn.Kube.Delete(ctx, &list.Items[i]); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if err := conn.Kube.List(ctx, &list, client.MatchingLabels{ManagedByLabel: command}); err != nil {
			return err
		}
		if len(list.Items) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d namespaces of earlier runs still there after 2 min (%s, ...)", len(list.Items), list.Items[0].Name)
		}
		if err := Sleep(ctx, 200*time.Millisecond); err != nil {
			return err
		}
	}
}
