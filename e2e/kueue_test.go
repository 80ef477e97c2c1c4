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
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
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
		kueueFeature("a queued PyTorchTrainingJob and TensorFlowTrainingJob get a Workload and no pod until it is admitted, then run with the flavour's node selector", "kq-t9k-admit", kueueT9kAdmitted),
		kueueFeature("an over-quota PyTorchTrainingJob waits with no pod; the quota is released when the first job succeeds and the second is admitted", "kq-t9k-quota", kueueT9kOverQuota),
		kueueFeature("a lower-priority PyTorchTrainingJob is preempted (pods gone, no restart counted) and resumed when the higher-priority one finishes", "kq-t9k-preempt", kueueT9kPreempted),
		kueueFeature("pausing a queued PyTorchTrainingJob deactivates its Workload, freeing the quota for another job; resumed, it queues again", "kq-t9k-pause", kueueT9kPaused),
		kueueFeature("trainyard pause of a queued Kubeflow PyTorchJob deactivates its Workload: Kueue evicts and suspends it, freeing the quota; trainyard resume queues it again", "kq-kf-pause", kueueKubeflowPausedByCLI),
		kueueFeature("an elastic PyTorchTrainingJob asking more than the quota is admitted partially, down to minReplicas, and runs with the admitted pods", "kq-t9k-partial", kueueT9kPartial),
		kueueFeature("an elastic PyTorchTrainingJob annotated kueue.x-k8s.io/elastic-job grows and shrinks while admitted, through Kueue's workload slices, its running pods untouched", "kq-t9k-slices", kueueT9kSlices),
		kueueFeature("a queued Kubeflow PyTorchJob annotated kueue.x-k8s.io/elastic-job is refused at admission by Kueue's webhook, naming the annotation (Kueue's own integration has no workload slices)", "kq-kf-slices", kueueKubeflowSlicesRefused),
	)
}

// The flavour every feature's ClusterQueue uses, and the nodes it stands for.
const (
	kueueFlavor      = "gpu-a"
	kueueFlavorLabel = "e2e.trainyard.dev/pool"
)

var kueueFlavorNodes = []string{"kwok-node-3", "kwok-node-4"}

var resourceOne = resource.MustParse("1")

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
	return clusterQueueOf(ns, kueueFlavor, gpus, preempt)
}

// clusterQueueOf is clusterQueue over the flavour named flavor.
func clusterQueueOf(ns, flavor string, gpus int, preempt bool) *unstructured.Unstructured {
	spec := map[string]any{
		"namespaceSelector": map[string]any{"matchLabels": map[string]any{"kubernetes.io/metadata.name": ns}},
		"resourceGroups": []any{map[string]any{
			"coveredResources": []any{"nvidia.com/gpu"},
			"flavors": []any{map[string]any{
				"name":      flavor,
				"resources": []any{map[string]any{"name": "nvidia.com/gpu", "nominalQuota": int64(gpus)}},
			}},
		}},
	}
	if preempt {
		spec["preemption"] = map[string]any{"withinClusterQueue": "LowerPriority"}
	}
	return kueueObject("ClusterQueue", "", ns, spec)
}

// sideQueue makes a namespace of the side cluster with LocalQueue q of a ClusterQueue named like
// it, of gpus GPUs of the flavour named flavor, and returns a client and the namespace.
func sideQueue(ctx context.Context, t *testing.T, s *sideCluster, prefix, flavor string, gpus int) (client.Client, string) {
	t.Helper()
	c, ns := namespaced(ctx, t, s.cfg, prefix)
	createKueue(ctx, t, c, clusterQueueOf(ns, flavor, gpus, false))
	createKueue(ctx, t, c, kueueObject("LocalQueue", ns, "q", map[string]any{"clusterQueue": ns}))
	return c, ns
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
		// In Kueue's words, from the Workload Kueue made: its QuotaReserved=False message.
		kfWaitingIs(ctx, t, c, ns, j.name, "Queued", "doesn't exist")
	}
	// Kueue's own words on why, live, through the job's Workload.
	var described string
	eventually(t, 30*time.Second, "trainyard describe shows the Workload's QuotaReserved in Kueue's words", func() (bool, string) {
		described = trainyardCLIAt(t, kubeconfigPath, "describe", "pytorchjob/pt", "-n", ns)
		return strings.Contains(described, "Kueue: LocalQueue q, Workload pytorchjob-pt-") && strings.Contains(described, "(active)") &&
			strings.Contains(described, "doesn't exist"), described
	})
	t.Logf("trainyard describe pytorchjob/pt:\n%s", described)
	if out := trainyardCLIAt(t, kubeconfigPath, "get", "-n", ns); !rowHas(out, "pt", "PyTorchJob", "Pending", "0/2", "Queued") || !rowHas(out, "tf", "TFJob", "Pending", "0/2", "Queued") {
		t.Errorf("trainyard get does not show the held jobs Pending and Queued:\n%s", out)
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
	kfWaitingIs(ctx, t, c, ns, "second", "Queued", "insufficient unused quota") // Kueue's words
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
	low, high := priorityClasses(ctx, t, c, ns)
	createKueue(ctx, t, c, clusterQueue(ns, 2, true))
	applyYAML(ctx, t, ns, kfQueuedPyTorchJob("low", simRunsForever, ", kueue.x-k8s.io/priority-class: "+low))
	waitKubeflow(ctx, t, c, ns, "low", kubeflowv1.JobRunning)
	onFlavorNodes(ctx, t, c, ns, "low", 2)
	before := kfPodsOf(ctx, t, c, ns, "low")
	applyYAML(ctx, t, ns, kfQueuedPyTorchJob("high", fmt.Sprintf(simExits0After, "5s"), ", kueue.x-k8s.io/priority-class: "+high))
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

// queued labels a T9k job for LocalQueue q (and a WorkloadPriorityClass, if given) and gives
// every replica one GPU.
func queued(obj client.Object, priorityClass string) client.Object {
	labels := map[string]string{"kueue.x-k8s.io/queue-name": "q"}
	if priorityClass != "" {
		labels["kueue.x-k8s.io/priority-class"] = priorityClass
	}
	obj.SetLabels(labels)
	gpu := func() corev1.ResourceRequirements {
		// A list each: a feature may change one replica type's.
		return corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resourceOne}}
	}
	switch j := obj.(type) {
	case *batch.PyTorchTrainingJob:
		for i := range j.Spec.ReplicaSpecs {
			j.Spec.ReplicaSpecs[i].Template.Spec.Containers[0].Resources = gpu()
		}
	case *batch.TensorFlowTrainingJob:
		for i := range j.Spec.ReplicaSpecs {
			j.Spec.ReplicaSpecs[i].Template.Spec.Containers[0].Resources = gpu()
		}
	}
	return obj
}

// waitQueued waits until the T9k job says it waits for Kueue (Initialized=False, reason Queued).
func waitQueued(ctx context.Context, t *testing.T, c client.Client, ns, name string) batch.TrainingJobStatus {
	t.Helper()
	var st batch.TrainingJobStatus
	eventually(t, 60*time.Second, name+" says it is queued", func() (bool, string) {
		var err error
		st, err = jobStatus(ctx, c, ns, name)
		if err != nil {
			return false, err.Error()
		}
		// The Waiting condition (the Reason column) says Queued too, in Kueue's words.
		return st.Phase == batch.JobPending && condition(st, batch.ConditionInitialized) == "False/Queued" &&
				condition(st, batch.ConditionWaiting) == "True/Queued",
			fmt.Sprintf("phase %q, Initialized %q, Waiting %q", st.Phase, condition(st, batch.ConditionInitialized), condition(st, batch.ConditionWaiting))
	})
	return st
}

func kueueT9kAdmitted(ctx context.Context, t *testing.T, c client.Client, ns string) {
	create(ctx, t, c, ns, queued(pyTorchJob("pt").Workers(1, sim("", "")).Obj(), ""))
	create(ctx, t, c, ns, queued(tensorFlowJob("tf").Replica("chief", 1, sim("", "")).Replica("worker", 1, sim("", "")).Obj(), ""))
	for _, j := range []string{"pt", "tf"} {
		w := waitWorkload(ctx, t, c, ns, j, "exists, not admitted (its ClusterQueue does not exist yet)", func(w *unstructured.Unstructured) bool { return !admitted(w) })
		sets, _, _ := unstructured.NestedSlice(w.Object, "spec", "podSets")
		if len(sets) != 2 {
			t.Errorf("%s's Workload has %d podSets; want one per replica type", j, len(sets))
		}
		st := waitQueued(ctx, t, c, ns, j)
		t.Logf("%s waits: %s", j, conditionText(st, batch.ConditionWaiting))
	}
	noPodsFor(ctx, t, c, ns, "pt", 2*time.Second, "not admitted")
	noPodsFor(ctx, t, c, ns, "tf", 0, "not admitted")
	start := time.Now()
	createKueue(ctx, t, c, clusterQueue(ns, 4, false))
	for _, j := range []string{"pt", "tf"} {
		waitWorkload(ctx, t, c, ns, j, "admitted", admitted)
		onFlavorNodes(ctx, t, c, ns, j, 2)
		waitPhase(ctx, t, c, ns, j, batch.JobRunning)
	}
	t.Logf("both jobs ran on the flavour's nodes %.1f s after their ClusterQueue was created", time.Since(start).Seconds())
	w := waitWorkload(ctx, t, c, ns, "pt", "PodsReady", func(w *unstructured.Unstructured) bool {
		return strings.HasPrefix(workloadCondition(w, "PodsReady"), "True/")
	})
	t.Logf("pt's Workload: PodsReady %s", workloadCondition(w, "PodsReady"))
}

func kueueT9kOverQuota(ctx context.Context, t *testing.T, c client.Client, ns string) {
	createKueue(ctx, t, c, clusterQueue(ns, 2, false))
	create(ctx, t, c, ns, queued(pyTorchJob("first").Master(sim("6s", "0")).Workers(1, sim("", "")).Obj(), ""))
	waitPhase(ctx, t, c, ns, "first", batch.JobRunning)
	create(ctx, t, c, ns, queued(pyTorchJob("second").Workers(1, sim("", "")).Obj(), ""))
	w := waitWorkload(ctx, t, c, ns, "second", "waits for quota", func(w *unstructured.Unstructured) bool {
		return strings.HasPrefix(workloadCondition(w, "QuotaReserved"), "False/")
	})
	st := waitQueued(ctx, t, c, ns, "second")
	t.Logf("the second job's Workload: QuotaReserved %s; the job says %s", workloadCondition(w, "QuotaReserved"), conditionText(st, batch.ConditionInitialized))
	for st, _ := jobStatus(ctx, c, ns, "first"); st.Phase != batch.JobSucceeded; st, _ = jobStatus(ctx, c, ns, "first") {
		if pods := kfPodsOf(ctx, t, c, ns, "second"); len(pods) > 0 {
			t.Fatalf("the over-quota job has pods while the first holds the quota: %d", len(pods))
		}
		time.Sleep(100 * time.Millisecond)
	}
	done := time.Now()
	waitWorkload(ctx, t, c, ns, "first", "Finished", func(w *unstructured.Unstructured) bool {
		return workloadCondition(w, "Finished") == "True/Succeeded"
	})
	onFlavorNodes(ctx, t, c, ns, "second", 2)
	waitPhase(ctx, t, c, ns, "second", batch.JobRunning)
	t.Logf("the second job ran %.1f s after the first succeeded", time.Since(done).Seconds())
}

func kueueT9kPreempted(ctx context.Context, t *testing.T, c client.Client, ns string) {
	low, high := priorityClasses(ctx, t, c, ns)
	createKueue(ctx, t, c, clusterQueue(ns, 2, true))
	create(ctx, t, c, ns, queued(pyTorchJob("low").Workers(1, sim("", "")).WorkerPolicy(batch.RestartPolicyOnFailure).Obj(), low))
	waitPhase(ctx, t, c, ns, "low", batch.JobRunning)
	onFlavorNodes(ctx, t, c, ns, "low", 2)
	before := kfPodsOf(ctx, t, c, ns, "low")
	create(ctx, t, c, ns, queued(pyTorchJob("high").Master(sim("5s", "0")).Workers(1, sim("", "")).Obj(), high))
	start := time.Now()
	eventually(t, 60*time.Second, "the preempted job's pods are gone and it says it is queued", func() (bool, string) {
		st, _ := jobStatus(ctx, c, ns, "low")
		pods := kfPodsOf(ctx, t, c, ns, "low")
		return len(pods) == 0 && condition(st, batch.ConditionInitialized) == "False/Queued", fmt.Sprintf("%d pods, %s", len(pods), conditionText(st, batch.ConditionInitialized))
	})
	t.Logf("the low-priority job's pods were gone %.1f s after the high-priority job was created", time.Since(start).Seconds())
	t.Logf("the preempted job says: %s", preemptedSays(ctx, t, c, ns, "low"))
	// No pod left, the admission is released and the Workload requeued (scheduling.md).
	w := waitWorkload(ctx, t, c, ns, "low", "released and requeued", func(w *unstructured.Unstructured) bool {
		return strings.HasPrefix(workloadCondition(w, "QuotaReserved"), "False/") && strings.HasPrefix(workloadCondition(w, "Requeued"), "True/")
	})
	t.Logf("the preempted job's Workload: QuotaReserved %s, Requeued %s, Evicted %s", workloadCondition(w, "QuotaReserved"), workloadCondition(w, "Requeued"), workloadCondition(w, "Evicted"))
	waitPhase(ctx, t, c, ns, "high", batch.JobRunning)
	onFlavorNodes(ctx, t, c, ns, "high", 2)
	waitPhase(ctx, t, c, ns, "high", batch.JobSucceeded)
	st := waitPhase(ctx, t, c, ns, "low", batch.JobRunning)
	onFlavorNodes(ctx, t, c, ns, "low", 2)
	for _, p := range kfPodsOf(ctx, t, c, ns, "low") {
		for _, q := range before {
			if p.UID == q.UID {
				t.Errorf("pod %s survived the preemption", p.Name)
			}
		}
	}
	t.Logf("resumed: %s", preemptedSays(ctx, t, c, ns, "low"))
	if st.BackoffCount != 0 || st.DisruptionCount != 0 {
		t.Errorf("backoffCount %d, disruptionCount %d after a preemption; a preemption is counted as neither", st.BackoffCount, st.DisruptionCount)
	}
	for _, task := range st.Tasks {
		if task.RestartCount != 0 {
			t.Errorf("tasks[%s].restartCount %d after a preemption; want 0", task.Type, task.RestartCount)
		}
	}
}

func kueueT9kPaused(ctx context.Context, t *testing.T, c client.Client, ns string) {
	createKueue(ctx, t, c, clusterQueue(ns, 2, false))
	create(ctx, t, c, ns, queued(pyTorchJob("paused").Workers(1, sim("", "")).Obj(), ""))
	waitPhase(ctx, t, c, ns, "paused", batch.JobRunning)
	create(ctx, t, c, ns, queued(pyTorchJob("next").Workers(1, sim("", "")).Obj(), ""))
	waitQueued(ctx, t, c, ns, "next")
	patchJob(ctx, t, c, ns, "paused", `{"spec":{"runMode":{"pause":{"enabled":true}}}}`)
	waitPhase(ctx, t, c, ns, "paused", batch.JobPaused)
	w := waitWorkload(ctx, t, c, ns, "paused", "deactivated, its quota released", func(w *unstructured.Unstructured) bool {
		active, found, _ := unstructured.NestedBool(w.Object, "spec", "active")
		return found && !active && !strings.HasPrefix(workloadCondition(w, "QuotaReserved"), "True/")
	})
	t.Logf("the paused job's Workload: active false, QuotaReserved %s, Evicted %s", workloadCondition(w, "QuotaReserved"), workloadCondition(w, "Evicted"))
	waitPhase(ctx, t, c, ns, "next", batch.JobRunning)
	onFlavorNodes(ctx, t, c, ns, "next", 2)
	if st, _ := jobStatus(ctx, c, ns, "paused"); st.Phase != batch.JobPaused {
		t.Errorf("the paused job is %s; a user's pause stays a pause", st.Phase)
	}
	patchJob(ctx, t, c, ns, "paused", `{"spec":{"runMode":{"pause":{"enabled":false}}}}`)
	waitWorkload(ctx, t, c, ns, "paused", "active again", func(w *unstructured.Unstructured) bool {
		active, found, _ := unstructured.NestedBool(w.Object, "spec", "active")
		return !found || active
	})
	waitQueued(ctx, t, c, ns, "paused")
	noPodsFor(ctx, t, c, ns, "paused", time.Second, "resumed while the other job holds the quota")
	if err := c.Delete(ctx, &batch.PyTorchTrainingJob{ObjectMeta: objectMeta(ns, "next")}); err != nil {
		t.Fatal(err)
	}
	waitPhase(ctx, t, c, ns, "paused", batch.JobRunning)
	onFlavorNodes(ctx, t, c, ns, "paused", 2)
}

// priorityClasses creates a low and a high WorkloadPriorityClass for the feature.
func priorityClasses(ctx context.Context, t *testing.T, c client.Client, ns string) (low, high string) {
	low, high = ns+"-low", ns+"-high"
	for name, value := range map[string]int64{low: 100, high: 1000} {
		wpc := kueueObject("WorkloadPriorityClass", "", name, nil)
		delete(wpc.Object, "spec")
		wpc.Object["value"] = value
		createKueue(ctx, t, c, wpc)
		t.Cleanup(func() { _ = c.Delete(context.Background(), wpc) })
	}
	return low, high
}

// conditionText is "Status/Reason: message" of a job's condition.
func conditionText(st batch.TrainingJobStatus, typ string) string {
	for _, c := range st.Conditions {
		if c.Type == typ {
			return fmt.Sprintf("%s %s/%s: %s", typ, c.Status, c.Reason, c.Message)
		}
	}
	return typ + " unset"
}

func kueueT9kPartial(ctx context.Context, t *testing.T, c client.Client, ns string) {
	createKueue(ctx, t, c, clusterQueue(ns, 2, false))
	job := queued(pyTorchJob("el").Workers(1, sim("", "")).Obj(), "").(*batch.PyTorchTrainingJob)
	job.Spec.ReplicaSpecs[1].ScalingWeight = ptr(int32(1))
	job.Spec.TorchrunConfig = &batch.TorchrunConfig{Enabled: ptr(true)}
	job.Spec.Elastic = &batch.ElasticConfig{Enabled: ptr(true), MinReplicas: ptr(int32(2)), MaxReplicas: ptr(int32(4))}
	create(ctx, t, c, ns, job)
	w := waitWorkload(ctx, t, c, ns, "el", "admitted", admitted)
	sets, _, _ := unstructured.NestedSlice(w.Object, "spec", "podSets")
	var asked []string
	for _, s := range sets {
		m := s.(map[string]any)
		asked = append(asked, fmt.Sprintf("%v %v (minCount %v)", m["name"], m["count"], m["minCount"]))
	}
	t.Logf("the Workload asks %s", strings.Join(asked, ", "))
	onFlavorNodes(ctx, t, c, ns, "el", 2)
	st := waitPhase(ctx, t, c, ns, "el", batch.JobRunning)
	if st.DesiredReplicas != 2 {
		t.Errorf("desiredReplicas %d; want the 2 Kueue admitted", st.DesiredReplicas)
	}
	for _, p := range kfPodsOf(ctx, t, c, ns, "el") {
		if got := envOf(p, "WORLD_SIZE"); got != "2" {
			t.Errorf("%s: WORLD_SIZE %q; want 2, the admitted size", p.Name, got)
		}
	}
	time.Sleep(time.Second)
	if wls := workloadsOf(ctx, t, c, ns, "el"); len(wls) != 1 || wls[0].GetUID() != w.GetUID() {
		t.Errorf("the Workload was replaced after the partial admission: %d Workloads", len(wls))
	}
}

// kueueKubeflowPausedByCLI: Kueue holds a queued kubeflow.org job's runPolicy.suspend, so the CLI
// pauses it by deactivating its Workload; this checks that the real Kueue then evicts it, suspends
// it and gives its quota to the next job, and queues it again once the CLI resumes it.
func kueueKubeflowPausedByCLI(ctx context.Context, t *testing.T, c client.Client, ns string) {
	createKueue(ctx, t, c, clusterQueue(ns, 2, false))
	applyYAML(ctx, t, ns, kfQueuedPyTorchJob("held", simRunsForever, ""))
	waitKubeflow(ctx, t, c, ns, "held", kubeflowv1.JobRunning)
	onFlavorNodes(ctx, t, c, ns, "held", 2)
	applyYAML(ctx, t, ns, kfQueuedPyTorchJob("next", simRunsForever, ""))
	waitWorkload(ctx, t, c, ns, "next", "waits for quota", func(w *unstructured.Unstructured) bool {
		return strings.HasPrefix(workloadCondition(w, "QuotaReserved"), "False/")
	})

	start := time.Now()
	out := trainyardCLIAt(t, kubeconfigPath, "pause", "pytorchjob/held", "-n", ns)
	if !strings.Contains(out, "pytorchjob/held paused: its Kueue Workload ") || !strings.Contains(out, "is deactivated") {
		t.Errorf("trainyard pause of a queued PyTorchJob:\n%s", out)
	}
	eventually(t, 60*time.Second, "the paused job's pods are gone, Kueue suspended it and says Suspended", func() (bool, string) {
		st, _ := kfStatus(ctx, c, ns, "held")
		s, _ := kfSuspended(ctx, c, ns, "PyTorchJob", "held")
		pods := kfPodsOf(ctx, t, c, ns, "held")
		return len(pods) == 0 && s && kfCondition(st, kubeflowv1.JobSuspended) == "True",
			fmt.Sprintf("%d pods, suspend %v, Suspended %q", len(pods), s, kfCondition(st, kubeflowv1.JobSuspended))
	})
	waitKubeflow(ctx, t, c, ns, "next", kubeflowv1.JobRunning)
	onFlavorNodes(ctx, t, c, ns, "next", 2)
	t.Logf("trainyard pause: the paused job's pods gone and the next job Running on its quota %.1f s after", time.Since(start).Seconds())
	if out := trainyardCLIAt(t, kubeconfigPath, "pause", "pytorchjob/held", "-n", ns); !strings.Contains(out, "is already paused") {
		t.Errorf("trainyard pause of the paused job:\n%s", out)
	}
	if out := trainyardCLIAt(t, kubeconfigPath, "describe", "pytorchjob/held", "-n", ns); !strings.Contains(out, "(inactive: trainyard resume activates it)") {
		t.Errorf("trainyard describe of the paused job does not say its Workload is inactive:\n%s", out)
	}
	// Paused by its user, the job says so: no Waiting reason Queued (no queue runs it before
	// trainyard resume), and trainyard get shows it Paused, not Pending.
	eventually(t, 30*time.Second, "the paused job does not say Queued", func() (bool, string) {
		st, _ := kfStatus(ctx, c, ns, "held")
		for _, cond := range st.Conditions {
			if cond.Type == kubeflowv1.JobWaiting && cond.Status == "True" {
				return false, cond.Reason + ": " + cond.Message
			}
		}
		return true, ""
	})
	if out := trainyardCLIAt(t, kubeconfigPath, "get", "-n", ns); !rowHas(out, "held", "Paused") {
		t.Errorf("trainyard get does not show the paused job Paused:\n%s", out)
	}

	out = trainyardCLIAt(t, kubeconfigPath, "resume", "pytorchjob/held", "-n", ns)
	if !strings.Contains(out, "is active again") {
		t.Errorf("trainyard resume of the queued PyTorchJob:\n%s", out)
	}
	waitWorkload(ctx, t, c, ns, "held", "active, waiting for the quota the next job holds", func(w *unstructured.Unstructured) bool {
		active, found, _ := unstructured.NestedBool(w.Object, "spec", "active")
		return (active || !found) && !admitted(w)
	})
	noPodsFor(ctx, t, c, ns, "held", 2*time.Second, "resumed while another job holds the quota")
	// In Kueue's words: why it does not admit the job again while the next job holds the quota.
	kfWaitingIs(ctx, t, c, ns, "held", "Queued", "insufficient unused quota")
	if err := c.Delete(ctx, &kubeflowv1.PyTorchJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "next"}}); err != nil {
		t.Fatal(err)
	}
	freed := time.Now()
	waitKubeflow(ctx, t, c, ns, "held", kubeflowv1.JobRunning)
	onFlavorNodes(ctx, t, c, ns, "held", 2)
	t.Logf("trainyard resume: the job Running again %.1f s after the job holding the quota was deleted", time.Since(freed).Seconds())
}

// kfWaitingIs waits until the kubeflow.org job's Waiting condition is True with the reason and a
// message holding words, and its last condition (Kubeflow's State column) is not Waiting.
func kfWaitingIs(ctx context.Context, t *testing.T, c client.Client, ns, name, reason, words string) {
	t.Helper()
	var msg string
	eventually(t, 60*time.Second, fmt.Sprintf("%s waits with reason %s", name, reason), func() (bool, string) {
		st, err := kfStatus(ctx, c, ns, name)
		if err != nil || len(st.Conditions) == 0 {
			return false, fmt.Sprint(err)
		}
		if last := st.Conditions[len(st.Conditions)-1]; last.Type == kubeflowv1.JobWaiting {
			return false, "Waiting is the last condition, Kubeflow's State column"
		}
		for _, cond := range st.Conditions {
			if cond.Type == kubeflowv1.JobWaiting {
				msg = cond.Reason + ": " + cond.Message
				return cond.Status == "True" && cond.Reason == reason && strings.Contains(cond.Message, words), msg
			}
		}
		return false, "no Waiting condition"
	})
	t.Logf("%s: Waiting %s", name, msg)
}

// kueueT9kSlices: an elastic job annotated kueue.x-k8s.io/elastic-job: "true" changes size while
// admitted through Kueue's workload slices, against the real Kueue: grown within the quota, Kueue
// admits the slice asking for the new size (charging only the added pod) and finishes the Workload
// it replaces, and the job grows with its first pods still running; grown beyond the quota, it
// keeps running at its admitted size and says why; shrunk, its admitted Workload's count is
// lowered in place and Kueue gives the freed GPU to another job at once.
func kueueT9kSlices(ctx context.Context, t *testing.T, c client.Client, ns string) {
	createKueue(ctx, t, c, clusterQueue(ns, 3, false))
	create(ctx, t, c, ns, slicedJob("el"))
	first := waitWorkload(ctx, t, c, ns, "el", "admitted", admitted)
	if sets, _, _ := unstructured.NestedSlice(first.Object, "spec", "podSets"); len(sets) != 2 || sets[1].(map[string]any)["minCount"] != nil {
		t.Errorf("the first Workload's pod sets %v; want master and worker, no minCount (Kueue admits no elastic Workload partially)", sets)
	}
	running := func(want int) map[string]types.UID { t.Helper(); return exactlyRunning(ctx, t, c, ns, "el", want) }
	untouched := func(before, now map[string]types.UID) { t.Helper(); podsUntouched(t, before, now) }
	scale := func(n int) { t.Helper(); scaleElastic(ctx, t, c, ns, "el", n) }
	pods2 := running(2)

	// Grown within the quota: the slice is admitted, the replaced Workload goes.
	start := time.Now()
	scale(3)
	grown := waitWorkload(ctx, t, c, ns, "el", "a slice replacing the first Workload, admitted", func(w *unstructured.Unstructured) bool {
		return admitted(w) && w.GetUID() != first.GetUID()
	})
	if got := grown.GetAnnotations()["kueue.x-k8s.io/workload-slice-replacement-for"]; got != ns+"/"+first.GetName() {
		t.Errorf("the slice's workload-slice-replacement-for %q; want %s/%s", got, ns, first.GetName())
	}
	pods3 := running(3)
	untouched(pods2, pods3)
	t.Logf("grown from 2 to 3 pods under slice %s in %.1f s", grown.GetName(), time.Since(start).Seconds())

	// Grown beyond the quota (3 GPUs): it runs 3 and says why; the slice waits.
	scale(4)
	eventually(t, 60*time.Second, "el says it runs 3 of the 4 replicas asked for, waiting for Kueue", func() (bool, string) {
		st, err := jobStatus(ctx, c, ns, "el")
		if err != nil {
			return false, err.Error()
		}
		msg := conditionText(st, batch.ConditionRunning)
		return strings.Contains(msg, "3 of the 4 replicas asked for are running") && strings.Contains(msg, "insufficient unused quota"), msg
	})
	if wls := workloadsOf(ctx, t, c, ns, "el"); len(wls) != 2 {
		t.Errorf("%d Workloads while the slice for 4 waits; want the admitted one and the slice", len(wls))
	}
	if out := trainyardCLIAt(t, kubeconfigPath, "describe", "ptj/el", "-n", ns); !strings.Contains(out, "Admitted: 3 of the 4 pods the spec asks (the rest wait for Kueue to admit the job's new size") ||
		!strings.Contains(out, "Kueue: LocalQueue q, Workload "+grown.GetName()+" (active)") || !strings.Contains(out, "Kueue: the job's new size waits in Workload ") {
		t.Errorf("trainyard describe of a job whose new size waits for Kueue:\n%s", out)
	}
	untouched(pods3, running(3))

	// Shrunk to 2: the waiting slice goes, the admitted Workload's count is lowered in place, and
	// Kueue gives the freed GPU to the next job.
	scale(2)
	shrunk := waitWorkload(ctx, t, c, ns, "el", "the admitted Workload lowered to 1 worker in place", func(w *unstructured.Unstructured) bool {
		sets, _, _ := unstructured.NestedSlice(w.Object, "spec", "podSets")
		return w.GetUID() == grown.GetUID() && admitted(w) && len(sets) == 2 && fmt.Sprint(sets[1].(map[string]any)["count"]) == "1"
	})
	untouched(map[string]types.UID{"el-master-0": pods3["el-master-0"], "el-worker-0": pods3["el-worker-0"]}, running(2))
	t.Logf("shrunk to 2 pods under the same Workload %s", shrunk.GetName())
	create(ctx, t, c, ns, queued(pyTorchJob("next").Obj(), ""))
	waitPhase(ctx, t, c, ns, "next", batch.JobRunning)
}

// slicedJob is a queued elastic PyTorchTrainingJob annotated kueue.x-k8s.io/elastic-job: "true",
// sliced by its workers (min 2, max 4 replicas, 2 expected), every pod running until deleted.
func slicedJob(name string) *batch.PyTorchTrainingJob {
	job := queued(pyTorchJob(name).Workers(1, sim("", "")).Obj(), "").(*batch.PyTorchTrainingJob)
	job.Annotations = map[string]string{"kueue.x-k8s.io/elastic-job": "true"}
	job.Spec.ReplicaSpecs[1].ScalingWeight = ptr(int32(1))
	job.Spec.TorchrunConfig = &batch.TorchrunConfig{Enabled: ptr(true), MaxRestarts: ptr(int32(3))}
	job.Spec.Elastic = &batch.ElasticConfig{Enabled: ptr(true), MinReplicas: ptr(int32(2)), MaxReplicas: ptr(int32(4)), ExpectedReplicas: ptr(int32(2))}
	return job
}

// scaleElastic sets an elastic job's expectedReplicas.
func scaleElastic(ctx context.Context, t *testing.T, c client.Client, ns, job string, n int) {
	t.Helper()
	patchJob(ctx, t, c, ns, job, fmt.Sprintf(`{"spec":{"elastic":{"expectedReplicas":%d}}}`, n))
}

// exactlyRunning waits until the job has want pods and no other, all running and none going, and
// returns their UIDs by name.
func exactlyRunning(ctx context.Context, t *testing.T, c client.Client, ns, job string, want int) map[string]types.UID {
	t.Helper()
	uids := map[string]types.UID{}
	eventually(t, 60*time.Second, fmt.Sprintf("%d pods of %s running", want, job), func() (bool, string) {
		clear(uids)
		var states []string
		pods := kfPodsOf(ctx, t, c, ns, job)
		for _, p := range pods {
			if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning {
				uids[p.Name] = p.UID
			}
			states = append(states, p.Name+" "+string(p.Status.Phase))
		}
		return len(uids) == want && len(pods) == want, strings.Join(states, ", ")
	})
	return uids
}

// podsUntouched fails the test for each pod of before whose UID now does not have.
func podsUntouched(t *testing.T, before, now map[string]types.UID) {
	t.Helper()
	for name, uid := range before {
		if now[name] != uid {
			t.Errorf("pod %s was replaced or deleted (uid %s, now %q): a slice must not restart the job", name, uid, now[name])
		}
	}
}

// kueueKubeflowSlicesRefused: Kueue's own kubeflow.org integration, which queues the Kubeflow
// kinds, has no workload slices (v0.19.2); its webhook refuses a queued job that asks for them, so
// the user learns it at kubectl apply, not from a job that never changes size.
func kueueKubeflowSlicesRefused(ctx context.Context, t *testing.T, c client.Client, ns string) {
	createKueue(ctx, t, c, clusterQueue(ns, 3, false))
	manifest := strings.Replace(kfQueuedPyTorchJob("pt", simRunsForever, ""), "metadata:\n", "metadata:\n  annotations: {kueue.x-k8s.io/elastic-job: \"true\"}\n", 1)
	out, err := kubectlNS(ctx, t, ns, manifest, "apply", "-f", "-")
	if err == nil || !strings.Contains(out, "metadata.annotations[kueue.x-k8s.io/elastic-job]") || !strings.Contains(out, "not supported") {
		t.Fatalf("kubectl apply of a queued PyTorchJob annotated kueue.x-k8s.io/elastic-job: err %v\n%s\nwant Kueue's webhook to refuse it, naming the annotation", err, out)
	}
	var pt kubeflowv1.PyTorchJob
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "pt"}, &pt); !apierrors.IsNotFound(err) {
		t.Errorf("the refused PyTorchJob: get error %v; want NotFound", err)
	}
	t.Logf("refused at admission: %s", strings.TrimSpace(out))
}
