//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
	"github.com/trainyard/trainyard/render"
)

// The kube-scheduler's own gang scheduling (spec.scheduler.kubernetes), against the real
// kube-scheduler of the local cluster (hack/cluster.sh turns on its Kubernetes version's gates and
// API: scheduling.k8s.io/v1beta1 on 1.37, v1alpha2 on 1.36), and of a second cluster at the
// previous Kubernetes release (TestKubernetesGangPreviousRelease).
//
// Note: the features need a capacity nobody else uses, while other features run beside them. Three
// nodes advertise an extended resource of their own (gangGPU, 8 each, 24 in all), which only these
// features' pods request, and carry a rack label: two nodes in rack-a, one in rack-b.
const (
	gangGPU  = corev1.ResourceName("e2e.trainyard.dev/gang-gpu")
	rackKey  = "e2e.trainyard.dev/rack"
	gangPool = "kwok-node-7 kwok-node-8 kwok-node-9"
)

var gangRacks = map[string]string{"kwok-node-7": "rack-a", "kwok-node-8": "rack-a", "kwok-node-9": "rack-b"}

func TestKubernetesGang(t *testing.T) {
	f := features.New("kube-scheduler gang scheduling").
		WithLabel("area", "gang").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			setGangPool(ctx, t, cfg, true)
			return ctx
		}).
		Assess("kube-scheduler gang: a job that fits binds whole; one that cannot fit binds no pod while a smaller job runs, then binds whole when capacity frees; a finished job's Workload and PodGroup are gone", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			c, ns := namespaced(ctx, t, cfg, "kgang")
			t.Logf("the cluster serves the gang objects at %s", kubeGangVersion(t, c))
			kubeGangWaitsThenBindsWhole(ctx, t, cfg, c, ns)
			return ctx
		}).
		Assess("kube-scheduler gang with a topology key: the pods bind within one rack, or not at all", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			c, ns := namespaced(ctx, t, cfg, "kgang-rack")
			kubeGangTopology(ctx, t, c, ns)
			return ctx
		}).
		Teardown(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			setGangPool(ctx, t, cfg, false)
			return ctx
		}).
		Feature()
	testenv.Test(t, f)
}

// setGangPool gives the pool's nodes (or takes back) their gangGPU capacity and rack labels.
func setGangPool(ctx context.Context, t *testing.T, cfg *envconf.Config, on bool) {
	t.Helper()
	for _, node := range strings.Fields(gangPool) {
		qty, label := `"8"`, `"`+gangRacks[node]+`"`
		if !on {
			qty, label = "null", "null"
		}
		status := fmt.Sprintf(`{"status":{"capacity":{%q:%s},"allocatable":{%q:%s}}}`, gangGPU, qty, gangGPU, qty)
		if _, err := kubectl(ctx, cfg, "", "patch", "node", node, "--subresource=status", "--type=merge", "-p", status); err != nil {
			t.Fatal(err)
		}
		if _, err := kubectl(ctx, cfg, "", "patch", "node", node, "--type=merge", "-p", fmt.Sprintf(`{"metadata":{"labels":{%q:%s}}}`, rackKey, label)); err != nil {
			t.Fatal(err)
		}
	}
}

// kubeGangJob is a PyTorchTrainingJob of a master and workers-1 workers, each pod asking for 8
// gangGPU, under the kube-scheduler's gang scheduling; the master exits 0 after run (empty:
// never).
func kubeGangJob(name string, pods int32, run, topologyKey string) client.Object {
	master := sim(run, "")
	if run != "" {
		master = sim(run, "0")
	}
	b := pyTorchJob(name).Master(master)
	if pods > 1 {
		b.Workers(pods-1, sim("", ""))
	}
	job := b.Obj().(*batch.PyTorchTrainingJob)
	job.Spec.Scheduler = &batch.SchedulePolicy{Kubernetes: &batch.KubernetesScheduler{TopologyKey: topologyKey}}
	for i := range job.Spec.ReplicaSpecs {
		c := &job.Spec.ReplicaSpecs[i].Template.Spec.Containers[0]
		c.Resources.Limits = corev1.ResourceList{gangGPU: resource.MustParse("8")}
	}
	return job
}

// boundPods counts the job's pods that have a node.
func boundPods(ctx context.Context, t *testing.T, c client.Client, ns, job string) (bound, all int, nodes map[string]string) {
	nodes = map[string]string{}
	for _, p := range jobPods(ctx, t, c, ns, job) {
		all++
		if p.Spec.NodeName != "" {
			bound++
			nodes[p.Name] = p.Spec.NodeName
		}
	}
	return bound, all, nodes
}

// kubeGangVersion is the version of the kube-scheduler's PodGroup the cluster prefers: v1alpha2
// on Kubernetes 1.36, v1beta1 on 1.37, the one the operator writes.
func kubeGangVersion(t *testing.T, c client.Client) schema.GroupVersion {
	t.Helper()
	m, err := c.RESTMapper().RESTMapping(schema.GroupKind{Group: render.KubernetesGangGroup, Kind: "PodGroup"})
	if err != nil {
		t.Fatalf("the cluster's scheduling.k8s.io PodGroup: %v", err)
	}
	return m.GroupVersionKind.GroupVersion()
}

// gangObjects reports which of the job's Workload and PodGroup exist.
func gangObjects(ctx context.Context, t *testing.T, c client.Client, ns, job string) (workload, podGroup bool) {
	t.Helper()
	exists := func(kind string) bool {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(kubeGangVersion(t, c).WithKind(kind))
		err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: job}, u)
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatalf("%s %s: %v", kind, job, err)
		}
		return err == nil
	}
	return exists("Workload"), exists("PodGroup")
}

func kubeGangWaitsThenBindsWhole(ctx context.Context, t *testing.T, cfg *envconf.Config, c client.Client, ns string) {
	// first: 2 pods, 16 of the 24 gangGPU, running 12 s. It fits and binds whole.
	start := time.Now()
	create(ctx, t, c, ns, kubeGangJob("first", 2, "12s", ""))
	eventually(t, 60*time.Second, "first's 2 pods bound", func() (bool, string) {
		bound, all, _ := boundPods(ctx, t, c, ns, "first")
		return bound == 2, fmt.Sprintf("%d of %d pods bound", bound, all)
	})
	if w, pg := gangObjects(ctx, t, c, ns, "first"); !w || !pg {
		t.Fatalf("first: Workload %v, PodGroup %v; want both", w, pg)
	}
	t.Logf("first: both pods bound %.1f s after the job was created", time.Since(start).Seconds())

	// big: 3 pods, 24 gangGPU: only 8 are free while first runs, so none of its pods may bind.
	create(ctx, t, c, ns, kubeGangJob("big", 3, "", ""))
	eventually(t, 60*time.Second, "big's 3 pods created", func() (bool, string) {
		_, all, _ := boundPods(ctx, t, c, ns, "big")
		return all == 3, fmt.Sprintf("%d pods", all)
	})
	// small, a Kubeflow PyTorchJob (gang chosen by annotation) of one 8-gangGPU pod: it fits beside
	// first while big waits.
	applyYAMLTo(ctx, t, cfg, ns, fmt.Sprintf(`
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: small
  annotations: {%s: %s}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        metadata:
          annotations: {%s}
        spec:
          terminationGracePeriodSeconds: 0
          containers: [{name: pytorch, image: example.invalid/train:1, resources: {limits: {%s: 8}}}]
`, batch.AnnotationGangScheduler, batch.GangSchedulerKubernetes, fmt.Sprintf(simExits0After, "4s"), gangGPU))
	eventually(t, 60*time.Second, "small's pod bound while big waits", func() (bool, string) {
		bound, _, _ := boundPods(ctx, t, c, ns, "small")
		return bound == 1, fmt.Sprintf("%d bound", bound)
	})
	if bound, _, nodes := boundPods(ctx, t, c, ns, "big"); bound != 0 {
		t.Fatalf("big: %d pods bound while only 8 gangGPU were free: %v", bound, nodes)
	}
	// big says why it waits: the gang, in the PodGroup's words.
	eventually(t, 30*time.Second, "big's Waiting condition names the gang", func() (bool, string) {
		st, _ := jobStatus(ctx, c, ns, "big")
		got := condition(st, batch.ConditionWaiting)
		return got == "True/"+batch.ReasonGangWaiting, got
	})
	waitPhase(ctx, t, c, ns, "first", batch.JobSucceeded)
	freed := time.Now()
	// The finished job's claim is gone at once: no Workload, no PodGroup.
	eventually(t, 10*time.Second, "first's Workload and PodGroup deleted", func() (bool, string) {
		w, pg := gangObjects(ctx, t, c, ns, "first")
		return !w && !pg, fmt.Sprintf("Workload %v, PodGroup %v", w, pg)
	})
	t.Logf("first's Workload and PodGroup were deleted %.1f s after it Succeeded", time.Since(freed).Seconds())
	// With first's pods gone and small finished, the 24 gangGPU are free: big binds whole. The
	// scheduler admits a gang whole at Permit (none bound above while it could not fit), then binds
	// each pod in its own binding cycle, one API call each: a poll may see some bound before the
	// rest, so the test asks for all three, not for one instant.
	var partial []int
	eventually(t, 90*time.Second, "big's 3 pods bound", func() (bool, string) {
		bound, _, _ := boundPods(ctx, t, c, ns, "big")
		if bound != 0 && bound != 3 {
			partial = append(partial, bound)
		}
		return bound == 3, fmt.Sprintf("%d bound", bound)
	})
	if len(partial) > 0 {
		t.Logf("big: seen part-bound while its binds were in flight: %v of 3", partial)
	}
	t.Logf("big: all 3 pods bound %.1f s after first Succeeded", time.Since(freed).Seconds())
	waitPhase(ctx, t, c, ns, "big", batch.JobRunning)
}

func kubeGangTopology(ctx context.Context, t *testing.T, c client.Client, ns string) {
	// 3 pods of 8 gangGPU fit the pool (3 nodes) but no rack (rack-a has 2 nodes, rack-b 1).
	create(ctx, t, c, ns, kubeGangJob("wide", 3, "", rackKey))
	// 2 pods fit rack-a only.
	create(ctx, t, c, ns, kubeGangJob("pair", 2, "", rackKey))
	eventually(t, 60*time.Second, "pair's 2 pods bound", func() (bool, string) {
		bound, _, _ := boundPods(ctx, t, c, ns, "pair")
		return bound == 2, fmt.Sprintf("%d bound", bound)
	})
	_, _, nodes := boundPods(ctx, t, c, ns, "pair")
	racks := map[string]bool{}
	for _, n := range nodes {
		racks[gangRacks[n]] = true
	}
	if len(racks) != 1 || !racks["rack-a"] {
		t.Errorf("pair's pods on %v: want both in rack-a", nodes)
	}
	// Give the scheduler time to try wide against every rack.
	time.Sleep(5 * time.Second)
	if bound, all, nodes := boundPods(ctx, t, c, ns, "wide"); bound != 0 || all != 3 {
		t.Errorf("wide: %d of %d pods bound (%v); want 0 of 3: no rack holds 3 pods", bound, all, nodes)
	}
}

// TestKubernetesGangPreviousRelease: the same gang on the previous Kubernetes release
// (KUBE_PREVIOUS_VERSION of hack/versions.sh), whose Workload and PodGroup are another API version
// of another shape; then, under the same operator, the gang API turned off and on, and the control
// plane upgraded to KUBE_VERSION. It runs on a second loopback cluster (hack/cluster.sh at that
// version, 9 KWOK nodes, its own real kube-scheduler) with Trainyard's CRDs and an operator of its
// own; the local provider only, as it starts (and restarts) the cluster itself.
func TestKubernetesGangPreviousRelease(t *testing.T) {
	prev := &previousRelease{}
	f := features.New("kube-scheduler gang scheduling on the previous Kubernetes release").
		WithLabel("area", "gang").
		Setup(prev.up).
		Assess("the operator writes the Workload and PodGroup at the version that release serves; a job that fits binds whole, one that cannot binds no pod until capacity frees", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			c, ns := namespaced(ctx, t, prev.cfg, "kgang-prev")
			gv := kubeGangVersion(t, c)
			t.Logf("Kubernetes %s serves the gang objects at %s", prev.version, gv)
			kubeGangWaitsThenBindsWhole(ctx, t, prev.cfg, c, ns)
			return ctx
		}).
		Assess("the gang API turned off, then on again, under the running operator: a gang job waits, saying which API to enable, then binds whole once it is served, with no operator restart", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			c, ns := namespaced(ctx, t, prev.cfg, "kgang-toggle")
			prev.gangAPIOffThenOn(ctx, t, c, ns)
			return ctx
		}).
		Assess("the control plane upgraded to the current release under the running operator, as the docs advise (the gang job paused first): resumed, the job gets the new release's Workload and PodGroup and binds whole", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			c, ns := namespaced(ctx, t, prev.cfg, "kgang-upgrade")
			prev.upgradeUnderOperator(ctx, t, c, ns)
			return ctx
		}).
		Teardown(prev.down).
		Feature()
	testenv.Test(t, f)
}

// previousRelease is the second cluster of TestKubernetesGangPreviousRelease and its operator.
type previousRelease struct {
	version  string
	dir      string
	cfg      *envconf.Config
	operator *operatorProcess
}

// previousReleaseCluster is the second cluster's name (hack/cluster.sh's CLUSTER).
const previousReleaseCluster = "trainyard-prev"

func (p *previousRelease) cluster(ctx context.Context, verb string) error {
	return clusterScript(ctx, verb, "TRAINYARD_KUBE_VERSION="+p.version,
		"DEVCLUSTER_DIR="+p.dir, "CLUSTER="+previousReleaseCluster, "NODES=9")
}

func (p *previousRelease) up(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
	if localCluster == "" {
		t.Skip("starts a cluster of its own: provider local only")
	}
	var err error
	if p.version, err = versionsVar("KUBE_PREVIOUS_VERSION"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	p.dir = filepath.Join(repoRoot, ".devcluster", "e2e-prev")
	if err := p.cluster(ctx, "up"); err != nil {
		t.Fatalf("starting a Kubernetes %s cluster (built by hack/tools.sh kube-previous): %v", p.version, err)
	}
	p.cfg = envconf.New().WithKubeconfigFile(filepath.Join(p.dir, "kubeconfig"))
	if got, err := kubectl(ctx, p.cfg, "", "version", "-o", "json"); err != nil || !strings.Contains(got, `"gitVersion": "`+p.version+`"`) {
		t.Fatalf("the second cluster is not Kubernetes %s (%v):\n%s", p.version, err, got)
	}
	for _, args := range [][]string{
		{"apply", "--server-side", "--force-conflicts", "-k", filepath.Join(repoRoot, "kustomize", "crd")},
		{"apply", "--server-side", "--force-conflicts", "-f", kubeflowCRDs},
	} {
		if _, err := kubectl(ctx, p.cfg, "", args...); err != nil {
			t.Fatal(err)
		}
	}
	if err := waitCRDsEstablished(ctx, p.cfg); err != nil {
		t.Fatal(err)
	}
	setGangPool(ctx, t, p.cfg, true)
	if p.operator, err = startOperatorAs(p.cfg.KubeconfigFile(), "operator-prev.log"); err != nil {
		t.Fatal(err)
	}
	t.Logf("Kubernetes %s cluster with its operator up in %.1f s", p.version, time.Since(start).Seconds())
	return ctx
}

func (p *previousRelease) down(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
	if p.dir == "" {
		return ctx
	}
	if p.operator != nil {
		if err := p.operator.stop(); err != nil {
			t.Errorf("stopping the second cluster's operator: %v", err)
		}
	}
	if err := p.cluster(ctx, "down"); err != nil {
		t.Errorf("stopping the second cluster: %v", err)
	}
	return ctx
}

// gangAPIOffThenOn restarts the second cluster's kube-apiserver without the gang API (its
// --runtime-config without scheduling.k8s.io, its --feature-gates without the gang's gates), then
// again as it was, as an administrator turning the API on would. The kube-apiserver deletes the
// APIService of a version it no longer serves and creates it again when it does; the operator,
// started while the API was served, must follow both without a restart.
func (p *previousRelease) gangAPIOffThenOn(ctx context.Context, t *testing.T, c client.Client, ns string) {
	gv := kubeGangVersion(t, c)
	// The earlier assessment's namespace is being deleted: its jobs' gang objects must be gone
	// before the API is, else the namespace goes without them (the namespace controller sees no
	// such kind) and they wait in etcd for the garbage collector, which the restart slows.
	noGangObjectsAt(ctx, t, c, gv)
	server, err := findComponent(p.dir, previousReleaseCluster, "kube-apiserver")
	if err != nil {
		t.Fatal(err)
	}
	served := server.args
	// Off: neither the API nor the gates that go with it (with the gates on and the API off, the
	// kube-apiserver's own informers of the gang objects never sync, and it is never ready).
	gangGates := []string{"GenericWorkload", "GangScheduling", "TopologyAwareWorkloadScheduling"}
	off := withFlag(served, "--runtime-config", func(e []string) []string {
		return slices.DeleteFunc(e, func(e string) bool { return strings.HasPrefix(e, render.KubernetesGangGroup+"/") })
	})
	off = withFlag(off, "--feature-gates", func(e []string) []string {
		return slices.DeleteFunc(e, func(e string) bool { return slices.Contains(gangGates, strings.Split(e, "=")[0]) })
	})
	if slices.Equal(off, served) {
		t.Fatalf("the kube-apiserver's command line has no --runtime-config=%s/...: %q", render.KubernetesGangGroup, served)
	}
	operatorPID := p.operator.cmd.Process.Pid
	apiService := gv.Version + "." + gv.Group
	defer func() { // never leave the cluster without its API for the next assessment
		if !slices.Equal(server.args, served) {
			_ = server.stop()
			server.args = served
			_ = server.start()
		}
	}()

	p.restartAPIServer(ctx, t, server, off, apiService, false)
	create(ctx, t, c, ns, kubeGangJob("later", 2, "", ""))
	eventually(t, 60*time.Second, "later waits: PodGroupCRDMissing, naming "+gv.String(), func() (bool, string) {
		st, _ := jobStatus(ctx, c, ns, "later")
		for _, cond := range st.Conditions {
			if cond.Type == batch.ConditionWaiting {
				return cond.Status == metav1.ConditionTrue && cond.Reason == batch.ReasonPodGroupCRDMissing && strings.Contains(cond.Message, gv.String()),
					fmt.Sprintf("%s/%s: %s", cond.Status, cond.Reason, cond.Message)
			}
		}
		return false, fmt.Sprintf("%+v", st.Conditions)
	})
	if _, all, _ := boundPods(ctx, t, c, ns, "later"); all != 0 {
		t.Errorf("later: %d pods created while the gang API was off; want 0", all)
	}

	on := p.restartAPIServer(ctx, t, server, served, apiService, true)
	// The operator's part: the Workload, the PodGroup and the pods. Binding them is the scheduler's,
	// whose watches of the gang objects come back after their own back-off.
	eventually(t, 60*time.Second, "later's Workload, PodGroup and 2 pods exist", func() (bool, string) {
		w, pg := gangObjects(ctx, t, c, ns, "later")
		_, all, _ := boundPods(ctx, t, c, ns, "later")
		return w && pg && all == 2, fmt.Sprintf("Workload %v, PodGroup %v, %d pods", w, pg, all)
	})
	made := time.Since(on)
	eventually(t, 90*time.Second, "later's 2 pods bound", func() (bool, string) {
		bound, all, _ := boundPods(ctx, t, c, ns, "later")
		return bound == 2, fmt.Sprintf("%d of %d pods bound", bound, all)
	})
	waitPhase(ctx, t, c, ns, "later", batch.JobRunning)
	t.Logf("later: Workload, PodGroup and pods created %.1f s, both pods bound and Running %.1f s, after the API was served again", made.Seconds(), time.Since(on).Seconds())
	if !p.operator.alive() || p.operator.cmd.Process.Pid != operatorPID {
		t.Errorf("the operator (PID %d) did not live through the API's change", operatorPID)
	}
}

// restartAPIServer starts the second cluster's kube-apiserver again with args, waits until it is
// ready and the APIService is there (present) or not, and returns the time it saw both.
func (p *previousRelease) restartAPIServer(ctx context.Context, t *testing.T, server *component, args []string, apiService string, present bool) time.Time {
	t.Helper()
	restartComponent(t, server, args)
	started := time.Now()
	apiServerReady(ctx, t, p.cfg)
	eventually(t, 30*time.Second, fmt.Sprintf("APIService %s there: %v", apiService, present), func() (bool, string) {
		_, err := kubectl(ctx, p.cfg, "", "get", "apiservice", apiService)
		return (err == nil) == present, fmt.Sprint(err)
	})
	t.Logf("the kube-apiserver restarted at %s (PID %d); APIService %s there: %v, %.1f s after", started.Format("15:04:05.0"), server.pid, apiService, present, time.Since(started).Seconds())
	return time.Now()
}

// restartComponent stops a control-plane component and starts it with args.
func restartComponent(t *testing.T, comp *component, args []string) {
	t.Helper()
	if err := comp.stop(); err != nil {
		t.Fatal(err)
	}
	comp.args = args
	if err := comp.start(); err != nil {
		t.Fatal(err)
	}
}

// withFlag is args with the entries of the comma-separated flag (--flag=a,b) edited by edit; the
// flag is left out when no entry is left.
func withFlag(args []string, flag string, edit func(entries []string) []string) []string {
	var out []string
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, flag+"="); ok {
			entries := edit(strings.Split(v, ","))
			if len(entries) == 0 {
				continue
			}
			a = flag + "=" + strings.Join(entries, ",")
		}
		out = append(out, a)
	}
	return out
}

// upgradeUnderOperator is the upgrade docs/user-guide/scheduling.md advises, from the previous
// release to KUBE_VERSION under the running operator: the gang job paused first (its Workload and
// PodGroup deleted, none left at the old version), the kube-apiserver and the kube-scheduler
// restarted on the new release's binaries with its gates and API (the controller-manager stays a
// release behind, as Kubernetes' version skew allows), the job resumed. The operator must write
// the new version's objects, and the job bind whole, with no operator restart.
func (p *previousRelease) upgradeUnderOperator(ctx context.Context, t *testing.T, c client.Client, ns string) {
	target, err := versionsVar("KUBE_VERSION")
	if err != nil {
		t.Fatal(err)
	}
	kubeBin, err := versionsVar("KUBE_BIN")
	if err != nil {
		t.Fatal(err)
	}
	old := kubeGangVersion(t, c)
	create(ctx, t, c, ns, kubeGangJob("upgraded", 2, "", ""))
	eventually(t, 60*time.Second, "upgraded's 2 pods bound", func() (bool, string) {
		bound, all, _ := boundPods(ctx, t, c, ns, "upgraded")
		return bound == 2, fmt.Sprintf("%d of %d pods bound", bound, all)
	})
	patchJob(ctx, t, c, ns, "upgraded", `{"spec":{"runMode":{"pause":{"enabled":true}}}}`)
	waitPhase(ctx, t, c, ns, "upgraded", batch.JobPaused)
	// Nothing stored at the old version may be left: the new release cannot read it. (The earlier
	// assessments' namespaces are being deleted, their jobs' gang objects with them.)
	noGangObjectsAt(ctx, t, c, old)

	upgrade := func(args []string) []string {
		args = slices.Clone(args)
		args[0] = filepath.Join(kubeBin, filepath.Base(args[0]))
		// hack/cluster.sh's settings for 1.37: GangScheduling is gone (a gate the binary does not
		// know stops it), and the API is served as v1beta1.
		args = withFlag(args, "--feature-gates", func(e []string) []string {
			return slices.DeleteFunc(e, func(e string) bool { return strings.HasPrefix(e, "GangScheduling=") })
		})
		return withFlag(args, "--runtime-config", func(e []string) []string {
			for i := range e {
				if e[i] == old.String()+"=true" {
					e[i] = render.KubernetesGangGroup + "/v1beta1=true"
				}
			}
			return e
		})
	}
	operatorPID := p.operator.cmd.Process.Pid
	server, err := findComponent(p.dir, previousReleaseCluster, "kube-apiserver")
	if err != nil {
		t.Fatal(err)
	}
	scheduler, err := findComponent(p.dir, previousReleaseCluster, "kube-scheduler")
	if err != nil {
		t.Fatal(err)
	}
	upgraded := p.restartAPIServer(ctx, t, server, upgrade(server.args), "v1beta1."+render.KubernetesGangGroup, true)
	restartComponent(t, scheduler, upgrade(scheduler.args))
	if got, err := kubectl(ctx, p.cfg, "", "version", "-o", "json"); err != nil || !strings.Contains(got, `"gitVersion": "`+target+`"`) {
		t.Fatalf("the kube-apiserver is not %s after the upgrade (%v):\n%s", target, err, got)
	}
	c = newClient(t, p.cfg) // a fresh discovery
	if gv := kubeGangVersion(t, c); gv.Version != "v1beta1" {
		t.Fatalf("Kubernetes %s serves the gang objects at %s; want v1beta1", target, gv)
	}
	t.Logf("the kube-apiserver and kube-scheduler upgraded from %s to %s", p.version, target)

	patchJob(ctx, t, c, ns, "upgraded", `{"spec":{"runMode":{"pause":{"enabled":false}}}}`)
	resumed := time.Now()
	eventually(t, 90*time.Second, "upgraded's v1beta1 Workload and PodGroup exist and its 2 pods are bound", func() (bool, string) {
		w, pg := gangObjects(ctx, t, c, ns, "upgraded")
		bound, all, _ := boundPods(ctx, t, c, ns, "upgraded")
		return w && pg && bound == 2, fmt.Sprintf("Workload %v, PodGroup %v, %d of %d pods bound", w, pg, bound, all)
	})
	waitPhase(ctx, t, c, ns, "upgraded", batch.JobRunning)
	t.Logf("upgraded: resumed %.1f s after the upgraded kube-apiserver served v1beta1; v1beta1 Workload and PodGroup, both pods bound and Running %.1f s after the resume",
		resumed.Sub(upgraded).Seconds(), time.Since(resumed).Seconds())
	if !p.operator.alive() || p.operator.cmd.Process.Pid != operatorPID {
		t.Errorf("the operator (PID %d) did not live through the upgrade", operatorPID)
	}
}

// noGangObjectsAt waits until no Workload or PodGroup of any namespace is stored at gv: those of
// the earlier assessments' jobs go with their namespaces.
func noGangObjectsAt(ctx context.Context, t *testing.T, c client.Client, gv schema.GroupVersion) {
	t.Helper()
	eventually(t, 90*time.Second, "no Workload or PodGroup left at "+gv.String(), func() (bool, string) {
		var left []string
		for _, kind := range []string{"Workload", "PodGroup"} {
			list := &unstructured.UnstructuredList{}
			list.SetGroupVersionKind(gv.WithKind(kind + "List"))
			if err := c.List(ctx, list); err != nil {
				return false, err.Error()
			}
			for _, o := range list.Items {
				left = append(left, kind+" "+o.GetNamespace()+"/"+o.GetName())
			}
		}
		return len(left) == 0, strings.Join(left, ", ")
	})
}
