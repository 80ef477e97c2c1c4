//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	kubeflowv1 "github.com/trainyard/trainyard/apis/kubeflow/v1"
)

// TestKueue: jobs labelled kueue.x-k8s.io/queue-name run only inside their ClusterQueue's quota.
// The kubeflow.org kinds go through Kueue's own integration (its webhook suspends them, its job
// reconciler admits, preempts and resumes them through runPolicy.suspend and the templates' node
// selectors). Each feature has a ClusterQueue of its own, over the flavour gpu-a: the two nodes
// the suite labels kueueFlavorLabel=gpu-a.
func TestKueue(t *testing.T) {
	testenv.TestInParallel(t,
		kueueFeature("Kueue's webhook suspends a queued PyTorchJob and TFJob; they have no pod until admitted, then run on the flavour's nodes", "kq-kf-admit", kueueKubeflowAdmitted),
		kueueFeature("an over-quota Kubeflow PyTorchJob waits with no pod and runs once the job holding the quota finishes", "kq-kf-quota", kueueKubeflowOverQuota),
		kueueFeature("a lower-priority Kubeflow PyTorchJob is preempted (pods gone, no restart counted) and resumed when the higher-priority one finishes", "kq-kf-preempt", kueueKubeflowPreempted),
	)
}

// The flavour every feature's ClusterQueue uses, and the nodes it stands for.
const (
	kueueFlavor      = "gpu-a"
	kueueFlavorLabel = "e2e.trainyard.dev/pool"
)

var kueueFlavorNodes = []string{"kwok-node-3", "kwok-node-4"}

// kueueFeature is a feature labelled area=kueue, with one assessment in a namespace of its own
// that has a LocalQueue "q" of a ClusterQueue named like the namespace (created by the assessment).
func kueueFeature(name, prefix string, assess assessFn) features.Feature {
	return features.New(name).
		WithLabel("area", "kueue").
		Assess(name, func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			if kueueSkip != "" {
				t.Skip(kueueSkip)
			}
			c, ns := namespaced(ctx, t, cfg, prefix)
			createKueue(ctx, t, c, kueueObject("LocalQueue", ns, "q", map[string]any{"clusterQueue": ns}))
			t.Cleanup(func() {
				_ = c.Delete(context.Background(), kueueObject("ClusterQueue", "", ns, nil))
			})
			assess(ctx, t, c, ns)
			return ctx
		}).
		Feature()
}

// setUpKueueFlavor labels the flavour's nodes and creates the ResourceFlavor.
func setUpKueueFlavor(ctx context.Context, cfg *envconf.Config) error {
	c, err := client.New(cfg.Client().RESTConfig(), client.Options{})
	if err != nil {
		return err
	}
	for _, n := range kueueFlavorNodes {
		patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, kueueFlavorLabel, kueueFlavor)
		if err := c.Patch(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
			return fmt.Errorf("labelling node %s for the Kueue flavour: %w", n, err)
		}
	}
	rf := kueueObject("ResourceFlavor", "", kueueFlavor, map[string]any{"nodeLabels": map[string]any{kueueFlavorLabel: kueueFlavor}})
	if err := c.Create(ctx, rf); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

func createKueue(ctx context.Context, t *testing.T, c client.Client, obj *unstructured.Unstructured) {
	t.Helper()
	if err := c.Create(ctx, obj); err != nil {
		t.Fatalf("creating %s %s: %v", obj.GetKind(), obj.GetName(), err)
	}
}

// clusterQueue is the feature's ClusterQueue (named like its namespace): gpus of flavour gpu-a,
// and, when preempt, preemption of lower-priority workloads within it.
func clusterQueue(ns string, gpus int, preempt bool) *unstructured.Unstructured {
	spec := map[string]any{
		"namespaceSelector": map[string]any{"matchLabels": map[string]any{"kubernetes.io/metadata.name": ns}},
		"resourceGroups": []any{map[string]any{
			"coveredResources": []any{"nvidia.com/gpu"},
			"flavors": []any{map[string]any{
				"name":      kueueFlavor,
				"resources": []any{map[string]any{"name": "nvidia.com/gpu", "nominalQuota": int64(gpus)}},
			}},
		}},
	}
	if preempt {
		spec["preemption"] = map[string]any{"withinClusterQueue": "LowerPriority"}
	}
	return kueueObject("ClusterQueue", "", ns, spec)
}

// kfGPUPod is a Kubeflow replica template of one container asking one GPU, with simulation
// annotations (YAML, indented for a replica spec's template).
func kfGPUPod(container, annotations string) string {
	return fmt.Sprintf(`
      template:
        metadata:
          annotations: {%s}
        spec:
          terminationGracePeriodSeconds: 0
          containers:
          - name: %s
            image: example.invalid/train:1
            resources: {limits: {nvidia.com/gpu: 1}}`, annotations, container)
}

// kfQueuedPyTorchJob is a PyTorchJob of a master and a worker, one GPU each, in LocalQueue q.
func kfQueuedPyTorchJob(name, master, labels string) string {
	return `apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: ` + name + `
  labels: {kueue.x-k8s.io/queue-name: q` + labels + `}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1` + kfGPUPod("pytorch", master) + `
    Worker:
      replicas: 1` + kfGPUPod("pytorch", simRunsForever)
}

// workloadsOf lists the Kueue Workloads in ns whose controller is the named object.
func workloadsOf(ctx context.Context, t *testing.T, c client.Client, ns, owner string) []unstructured.Unstructured {
	t.Helper()
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion("kueue.x-k8s.io/v1beta2")
	list.SetKind("WorkloadList")
	if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var out []unstructured.Unstructured
	for _, w := range list.Items {
		if ref := metav1.GetControllerOf(&w); ref != nil && ref.Name == owner {
			out = append(out, w)
		}
	}
	return out
}

// workloadCondition is "Status/Reason" of a Workload's condition, or "".
func workloadCondition(w *unstructured.Unstructured, typ string) string {
	conds, _, _ := unstructured.NestedSlice(w.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == typ {
			return fmt.Sprintf("%v/%v", m["status"], m["reason"])
		}
	}
	return ""
}

// waitWorkload waits until the job named owner has exactly one Workload and cond holds for it.
func waitWorkload(ctx context.Context, t *testing.T, c client.Client, ns, owner, what string, cond func(w *unstructured.Unstructured) bool) *unstructured.Unstructured {
	t.Helper()
	var got *unstructured.Unstructured
	eventually(t, 60*time.Second, fmt.Sprintf("the Workload of %s: %s", owner, what), func() (bool, string) {
		wls := workloadsOf(ctx, t, c, ns, owner)
		if len(wls) != 1 {
			return false, fmt.Sprintf("%d Workloads", len(wls))
		}
		got = &wls[0]
		return cond(got), fmt.Sprintf("QuotaReserved %q Admitted %q Evicted %q Finished %q", workloadCondition(got, "QuotaReserved"),
			workloadCondition(got, "Admitted"), workloadCondition(got, "Evicted"), workloadCondition(got, "Finished"))
	})
	return got
}

func admitted(w *unstructured.Unstructured) bool {
	return strings.HasPrefix(workloadCondition(w, "Admitted"), "True/")
}

// noPodsFor checks, for d, that the job has no pod.
func noPodsFor(ctx context.Context, t *testing.T, c client.Client, ns, job string, d time.Duration, why string) {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if pods := kfPodsOf(ctx, t, c, ns, job); len(pods) > 0 {
			t.Fatalf("%s: %s has pods %v", why, job, pods)
		}
	}
}

// kfPodsOf lists the pods of any job by their controller's name.
func kfPodsOf(ctx context.Context, t *testing.T, c client.Client, ns, job string) []corev1.Pod {
	t.Helper()
	var list corev1.PodList
	if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var out []corev1.Pod
	for _, p := range list.Items {
		if ref := metav1.GetControllerOf(&p); ref != nil && ref.Name == job {
			out = append(out, p)
		}
	}
	return out
}

// onFlavorNodes checks that every pod of the job carries the flavour's node selector and is
// bound to one of its nodes.
func onFlavorNodes(ctx context.Context, t *testing.T, c client.Client, ns, job string, want int) {
	t.Helper()
	eventually(t, 60*time.Second, fmt.Sprintf("%d pods of %s bound to the flavour's nodes", want, job), func() (bool, string) {
		pods := kfPodsOf(ctx, t, c, ns, job)
		var where []string
		ok := len(pods) == want
		for _, p := range pods {
			where = append(where, p.Name+"@"+p.Spec.NodeName)
			if p.Spec.NodeSelector[kueueFlavorLabel] != kueueFlavor || (p.Spec.NodeName != kueueFlavorNodes[0] && p.Spec.NodeName != kueueFlavorNodes[1]) {
				ok = false
			}
		}
		return ok, strings.Join(where, " ")
	})
}

func kfSuspended(ctx context.Context, c client.Client, ns, kind, name string) (bool, error) {
	var spec kubeflowv1.RunPolicy
	switch kind {
	case "TFJob":
		var j kubeflowv1.TFJob
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &j); err != nil {
			return false, err
		}
		spec = j.Spec.EffectiveRunPolicy()
	default:
		var j kubeflowv1.PyTorchJob
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &j); err != nil {
			return false, err
		}
		spec = j.Spec.EffectiveRunPolicy()
	}
	return spec.Suspend != nil && *spec.Suspend, nil
}

func kueueKubeflowAdmitted(ctx context.Context, t *testing.T, c client.Client, ns string) {
	applyYAML(ctx, t, ns, kfQueuedPyTorchJob("pt", simRunsForever, ""))
	applyYAML(ctx, t, ns, `apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: tf
  labels: {kueue.x-k8s.io/queue-name: q}
spec:
  tfReplicaSpecs:
    Chief:
      replicas: 1`+kfGPUPod("tensorflow", simRunsForever)+`
    Worker:
      replicas: 1`+kfGPUPod("tensorflow", simRunsForever))
	for _, j := range []struct{ kind, name string }{{"PyTorchJob", "pt"}, {"TFJob", "tf"}} {
		if s, err := kfSuspended(ctx, c, ns, j.kind, j.name); err != nil || !s {
			t.Fatalf("%s %s: runPolicy.suspend %v (%v); Kueue's webhook suspends a queued job at creation", j.kind, j.name, s, err)
		}
		waitWorkload(ctx, t, c, ns, j.name, "exists, not admitted (its ClusterQueue does not exist yet)", func(w *unstructured.Unstructured) bool { return !admitted(w) })
		waitKubeflow(ctx, t, c, ns, j.name, kubeflowv1.JobSuspended)
	}
	noPodsFor(ctx, t, c, ns, "pt", 2*time.Second, "not admitted")
	noPodsFor(ctx, t, c, ns, "tf", 0, "not admitted")
	start := time.Now()
	createKueue(ctx, t, c, clusterQueue(ns, 4, false))
	for _, j := range []string{"pt", "tf"} {
		waitWorkload(ctx, t, c, ns, j, "admitted", admitted)
		waitKubeflow(ctx, t, c, ns, j, kubeflowv1.JobRunning)
		onFlavorNodes(ctx, t, c, ns, j, 2)
	}
	t.Logf("both jobs ran on the flavour's nodes %.1f s after their ClusterQueue was created", time.Since(start).Seconds())
}

func kueueKubeflowOverQuota(ctx context.Context, t *testing.T, c client.Client, ns string) {
	createKueue(ctx, t, c, clusterQueue(ns, 2, false))
	applyYAML(ctx, t, ns, kfQueuedPyTorchJob("first", fmt.Sprintf(simExits0After, "6s"), ""))
	waitKubeflow(ctx, t, c, ns, "first", kubeflowv1.JobRunning)
	applyYAML(ctx, t, ns, kfQueuedPyTorchJob("second", simRunsForever, ""))
	w := waitWorkload(ctx, t, c, ns, "second", "waits for quota", func(w *unstructured.Unstructured) bool {
		return strings.HasPrefix(workloadCondition(w, "QuotaReserved"), "False/")
	})
	t.Logf("the second job's Workload: QuotaReserved %s", workloadCondition(w, "QuotaReserved"))
	for st, _ := kfStatus(ctx, c, ns, "first"); kfCondition(st, kubeflowv1.JobSucceeded) != "True"; st, _ = kfStatus(ctx, c, ns, "first") {
		if pods := kfPodsOf(ctx, t, c, ns, "second"); len(pods) > 0 {
			t.Fatalf("the over-quota job has pods while the first holds the quota: %d", len(pods))
		}
		time.Sleep(100 * time.Millisecond)
	}
	done := time.Now()
	waitWorkload(ctx, t, c, ns, "first", "finished", func(w *unstructured.Unstructured) bool {
		return strings.HasPrefix(workloadCondition(w, "Finished"), "True/")
	})
	waitKubeflow(ctx, t, c, ns, "second", kubeflowv1.JobRunning)
	onFlavorNodes(ctx, t, c, ns, "second", 2)
	t.Logf("the second job ran %.1f s after the first succeeded", time.Since(done).Seconds())
}

func kueueKubeflowPreempted(ctx context.Context, t *testing.T, c client.Client, ns string) {
	for name, value := range map[string]int64{ns + "-low": 100, ns + "-high": 1000} {
		wpc := kueueObject("WorkloadPriorityClass", "", name, nil)
		delete(wpc.Object, "spec")
		wpc.Object["value"] = value
		createKueue(ctx, t, c, wpc)
		t.Cleanup(func() { _ = c.Delete(context.Background(), wpc) })
	}
	createKueue(ctx, t, c, clusterQueue(ns, 2, true))
	applyYAML(ctx, t, ns, kfQueuedPyTorchJob("low", simRunsForever, ", kueue.x-k8s.io/priority-class: "+ns+"-low"))
	waitKubeflow(ctx, t, c, ns, "low", kubeflowv1.JobRunning)
	onFlavorNodes(ctx, t, c, ns, "low", 2)
	before := kfPodsOf(ctx, t, c, ns, "low")
	applyYAML(ctx, t, ns, kfQueuedPyTorchJob("high", fmt.Sprintf(simExits0After, "5s"), ", kueue.x-k8s.io/priority-class: "+ns+"-high"))
	start := time.Now()
	waitWorkload(ctx, t, c, ns, "low", "evicted", func(w *unstructured.Unstructured) bool {
		return strings.HasPrefix(workloadCondition(w, "Evicted"), "True/") || strings.HasPrefix(workloadCondition(w, "Preempted"), "True/")
	})
	eventually(t, 60*time.Second, "the preempted job's pods are gone and it says Suspended", func() (bool, string) {
		st, _ := kfStatus(ctx, c, ns, "low")
		pods := kfPodsOf(ctx, t, c, ns, "low")
		return len(pods) == 0 && kfCondition(st, kubeflowv1.JobSuspended) == "True", fmt.Sprintf("%d pods, Suspended %q", len(pods), kfCondition(st, kubeflowv1.JobSuspended))
	})
	t.Logf("the low-priority job's pods were gone %.1f s after the high-priority job was created", time.Since(start).Seconds())
	waitKubeflow(ctx, t, c, ns, "high", kubeflowv1.JobRunning)
	onFlavorNodes(ctx, t, c, ns, "high", 2)
	waitKubeflow(ctx, t, c, ns, "high", kubeflowv1.JobSucceeded)
	st := waitKubeflow(ctx, t, c, ns, "low", kubeflowv1.JobRunning)
	onFlavorNodes(ctx, t, c, ns, "low", 2)
	after := kfPodsOf(ctx, t, c, ns, "low")
	for _, p := range after {
		for _, q := range before {
			if p.UID == q.UID {
				t.Errorf("pod %s survived the preemption", p.Name)
			}
		}
	}
	if st.BackoffCount != 0 {
		t.Errorf("backoffCount %d after a preemption; a preemption is not a failure", st.BackoffCount)
	}
	for typ, rs := range st.ReplicaStatuses {
		if rs.Restarts != 0 {
			t.Errorf("replicaStatuses.%s.restarts %d after a preemption; want 0", typ, rs.Restarts)
		}
	}
}
