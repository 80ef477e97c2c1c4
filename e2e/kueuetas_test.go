//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
	kubeflowv1 "github.com/trainyard/trainyard/apis/kubeflow/v1"
	"github.com/trainyard/trainyard/apis/kueue"
)

// TestKueueTopology: Kueue's Topology Aware Scheduling places a PyTorchTrainingJob's pods, against
// the real Kueue v0.19.2 (its TopologyAwareScheduling feature, on by default). It runs in a side
// cluster of 4 nodes of 8 GPUs, two racks of two (tasRacks), all of them a TAS flavour's: the
// suite's cluster is shared by features in parallel, whose pods would make the racks' free GPUs
// a matter of timing.
func TestKueueTopology(t *testing.T) {
	var side *sideCluster
	f := features.New("Kueue's Topology Aware Scheduling places a queued job's pods: the workers asking for one rack run in one rack, on the nodes Kueue chose").
		WithLabel("area", "kueue").
		Setup(func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			side = startSideCluster(ctx, t, "trainyard-tas", len(tasRacks), nil, "")
			for node, rack := range tasRacks {
				patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, tasRackLabel, rack)
				if err := side.client.Patch(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
					t.Fatal(err)
				}
			}
			createKueue(ctx, t, side.client, kueueObject("Topology", "", "racks", map[string]any{
				"levels": []any{map[string]any{"nodeLabel": tasRackLabel}, map[string]any{"nodeLabel": corev1.LabelHostname}},
			}))
			createKueue(ctx, t, side.client, kueueObject("ResourceFlavor", "", tasFlavor, map[string]any{
				"nodeLabels": map[string]any{"type": "kwok"}, "topologyName": "racks",
			}))
			return ctx
		}).
		Assess("three workers of 4 GPUs asking for one rack run in one rack, each on the node Kueue gave it; the master, which asked nothing, is placed by Kueue too", onSide(&side, tasOneRack)).
		Assess("the master and three workers of 4 GPUs naming one group, asking for one rack, with another job's 8 GPUs in a rack: all four run in the other rack, together", onSide(&side, tasGroupOneRack)).
		Assess("a worker alone on its node, the node tainted and the worker deleted: Kueue places it anew on another node, and the job runs on, counting a disruption, no failure", onSide(&side, tasNodeTainted)).
		Assess("a Kubeflow PyTorchJob, which Kueue's own integration queues, asking for one rack: Kueue gates its templates, and its workers run in one rack, each on the node Kueue gave it", onSide(&side, tasKubeflowOneRack)).
		Assess("five workers of 4 GPUs asking for one rack (16 GPUs) are not admitted, and the job says why in Kueue's words", onSide(&side, tasTooBig)).
		Feature()
	testenv.Test(t, f)
}

// The side cluster's racks: node name to rack.
var tasRacks = map[string]string{"kwok-node-1": "rack-a", "kwok-node-2": "rack-a", "kwok-node-3": "rack-b", "kwok-node-4": "rack-b"}

const (
	tasRackLabel = "e2e.trainyard.dev/rack"
	tasFlavor    = "gpu-tas"
)

// tasJob is a queued PyTorchTrainingJob of a master of 1 GPU and workers of 4 GPUs each that ask
// Kueue for one rack, every pod running until deleted.
func tasJob(name string, workers int32) *batch.PyTorchTrainingJob {
	j := queued(pyTorchJob(name).Workers(workers, sim("", "")).Obj(), "").(*batch.PyTorchTrainingJob)
	w := &j.Spec.ReplicaSpecs[1].Template
	w.Annotations[kueue.AnnotationPodSetRequiredTopology] = tasRackLabel
	w.Spec.Containers[0].Resources.Limits["nvidia.com/gpu"] = resource.MustParse("4")
	return j
}

func tasOneRack(ctx context.Context, t *testing.T, s *sideCluster) {
	c, ns := sideQueue(ctx, t, s, "kq-tas", tasFlavor, 32)
	start := time.Now()
	create(ctx, t, c, ns, tasJob("tas", 3))
	w := waitWorkload(ctx, t, c, ns, "tas", "admitted", admitted)
	sets, _, _ := unstructured.NestedSlice(w.Object, "spec", "podSets")
	if len(sets) != 2 || fmt.Sprint(sets[1].(map[string]any)["topologyRequest"]) != fmt.Sprintf("map[podIndexLabel:%s required:%s]", batch.LabelReplicaIndex, tasRackLabel) {
		t.Errorf("the Workload's pod sets %v; want the workers' topologyRequest to require %s with the replica index as the pods' index", sets, tasRackLabel)
	}
	exactlyRunning(ctx, t, c, ns, "tas", 4)
	t.Logf("4 pods running %.1f s after the job's creation", time.Since(start).Seconds())
	placedByKueue(ctx, t, c, ns, "tas", w.GetName())
	describedTopology(ctx, t, s, ns, "tas")
	deleteAndWaitGone(ctx, t, c, ns, &batch.PyTorchTrainingJob{}, "tas")
}

// describedTopology checks that `trainyard describe` shows where Kueue placed the job's workers:
// a domain ending in each worker's node, the domains' pods adding up to the workers.
func describedTopology(ctx context.Context, t *testing.T, s *sideCluster, ns, job string) {
	t.Helper()
	out := trainyardCLI(t, s.cfg, "describe", job, "-n", ns)
	var line string
	for l := range strings.Lines(out) {
		if strings.HasPrefix(l, "  topology of worker by ") {
			line = strings.TrimSpace(l)
		}
	}
	domains := map[string]int{}
	total := 0
	for _, d := range regexp.MustCompile(`([^ :,]+) \((\d+) pods?\)`).FindAllStringSubmatch(line, -1) {
		n, _ := strconv.Atoi(d[2])
		domains[d[1][strings.LastIndex(d[1], "/")+1:]] += n
		total += n
	}
	workers := 0
	for _, p := range kfPodsOf(ctx, t, s.client, ns, job) {
		if strings.Contains(p.Name, "-worker-") {
			workers++
			if domains[p.Spec.NodeName] == 0 {
				t.Errorf("describe's topology of the workers names no domain of node %s, where %s runs: %q", p.Spec.NodeName, p.Name, line)
			}
		}
	}
	if total != workers {
		t.Errorf("describe's topology of the workers places %d pods; want %d:\n%s", total, workers, out)
	}
	t.Logf("trainyard describe: %s", line)
}

// tasGroupOneRack: a TensorFlow job's two workers of 4 GPUs asking for one rack take 8 GPUs of a
// rack; then a PyTorch job whose master and three workers, 4 GPUs each, ask for one rack and name
// one group (kueue.x-k8s.io/podset-group-name) needs a whole rack, the other, for its 16 GPUs.
// Placed apart, the master would go where the first job left room (Kueue fills the fuller rack
// first) and the workers to the other rack.
func tasGroupOneRack(ctx context.Context, t *testing.T, s *sideCluster) {
	c, ns := sideQueue(ctx, t, s, "kq-tas-group", tasFlavor, 32)
	filler := queued(tensorFlowJob("filler").Replica(batch.TensorFlowReplicaWorker, 2, sim("", "")).Obj(), "").(*batch.TensorFlowTrainingJob)
	w := &filler.Spec.ReplicaSpecs[0].Template
	w.Annotations[kueue.AnnotationPodSetRequiredTopology] = tasRackLabel
	w.Spec.Containers[0].Resources.Limits["nvidia.com/gpu"] = resource.MustParse("4")
	create(ctx, t, c, ns, filler)
	exactlyRunning(ctx, t, c, ns, "filler", 2)
	full := map[string]bool{}
	for _, p := range kfPodsOf(ctx, t, c, ns, "filler") {
		full[tasRacks[p.Spec.NodeName]] = true
	}

	j := tasJob("grp", 3)
	m := &j.Spec.ReplicaSpecs[0].Template
	m.Annotations[kueue.AnnotationPodSetRequiredTopology] = tasRackLabel
	m.Spec.Containers[0].Resources.Limits["nvidia.com/gpu"] = resource.MustParse("4")
	for i := range j.Spec.ReplicaSpecs {
		j.Spec.ReplicaSpecs[i].Template.Annotations[kueue.AnnotationPodSetGroupName] = "trainers"
	}
	start := time.Now()
	create(ctx, t, c, ns, j)
	wl := waitWorkload(ctx, t, c, ns, "grp", "admitted", admitted)
	sets, _, _ := unstructured.NestedSlice(wl.Object, "spec", "podSets")
	for _, set := range sets {
		if g, _, _ := unstructured.NestedString(set.(map[string]any), "topologyRequest", "podSetGroupName"); g != "trainers" {
			t.Errorf("the Workload's pod set %v; want the group trainers in its topologyRequest", set)
		}
	}
	exactlyRunning(ctx, t, c, ns, "grp", 4)
	t.Logf("4 pods running %.1f s after the job's creation", time.Since(start).Seconds())
	placedByKueue(ctx, t, c, ns, "grp", wl.GetName())
	racks := map[string][]string{}
	for _, p := range kfPodsOf(ctx, t, c, ns, "grp") {
		racks[tasRacks[p.Spec.NodeName]] = append(racks[tasRacks[p.Spec.NodeName]], p.Name)
	}
	if len(racks) != 1 || len(full) != 1 {
		t.Errorf("the pods of grp by rack %v, the first job's in %v; want grp's four pods in one rack, the first job's in the other", racks, slices.Sorted(maps.Keys(full)))
	}
	for rack := range racks {
		if full[rack] {
			t.Errorf("grp's pods run in %s, beside the first job's; want the other rack, whole", rack)
		}
	}
	t.Logf("the first job in %v; grp's pods by rack %v", slices.Sorted(maps.Keys(full)), racks)
	deleteAndWaitGone(ctx, t, c, ns, &batch.PyTorchTrainingJob{}, "grp")
	deleteAndWaitGone(ctx, t, c, ns, &batch.TensorFlowTrainingJob{}, "filler")
}

// tasNodeTainted: a job's worker runs alone on a node (two workers of 6 GPUs preferring one rack,
// one a node, and a master of 1), which an administrator then taints (NoSchedule, not tolerated),
// and the worker's pod is deleted. The operator creates it again behind Kueue's gate; Kueue, with
// no pod of the job left running on the tainted node, finds the node unusable and places the pod
// set anew, failing with TerminatedByKueue a pod it had already given that node and that the
// scheduler cannot bind there. The job (restartPolicy ExitCode, restartScope Replica) runs on with
// its three pods, the worker on another node, its backoffCount 0. (With another pod of the job
// still running on the tainted node, Kueue keeps the node in the assignment and fails each new
// pod it gives it: Kueue's to mend, not exercised here.)
func tasNodeTainted(ctx context.Context, t *testing.T, s *sideCluster) {
	c, ns := sideQueue(ctx, t, s, "kq-tas-taint", tasFlavor, 32)
	j := tasJob("heal", 2)
	j.Spec.RunPolicy = &batch.RunPolicy{RestartScope: batch.RestartScopeReplica}
	for i := range j.Spec.ReplicaSpecs {
		j.Spec.ReplicaSpecs[i].RestartPolicy = batch.RestartPolicyExitCode
	}
	w := &j.Spec.ReplicaSpecs[1].Template
	delete(w.Annotations, kueue.AnnotationPodSetRequiredTopology)
	w.Annotations[kueue.AnnotationPodSetPreferredTopology] = tasRackLabel
	w.Spec.Containers[0].Resources.Limits["nvidia.com/gpu"] = resource.MustParse("6")
	create(ctx, t, c, ns, j)
	uids := exactlyRunning(ctx, t, c, ns, "heal", 3)
	onNode := map[string][]string{}
	for _, p := range kfPodsOf(ctx, t, c, ns, "heal") {
		onNode[p.Spec.NodeName] = append(onNode[p.Spec.NodeName], p.Name)
	}
	var old corev1.Pod
	for _, name := range []string{"heal-worker-0", "heal-worker-1"} {
		if p, _ := getPod(ctx, c, ns, name); len(onNode[p.Spec.NodeName]) == 1 {
			old = p
		}
	}
	if old.Name == "" {
		t.Fatalf("no worker runs alone on its node: %v", onNode)
	}
	node := old.Spec.NodeName
	taint := corev1.Taint{Key: "e2e.trainyard.dev/broken", Effect: corev1.TaintEffectNoSchedule}
	setTaint := func(on bool) {
		var n corev1.Node
		if err := s.client.Get(ctx, types.NamespacedName{Name: node}, &n); err != nil {
			t.Fatal(err)
		}
		n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, func(x corev1.Taint) bool { return x.Key == taint.Key })
		if on {
			n.Spec.Taints = append(n.Spec.Taints, taint)
		}
		if err := s.client.Update(ctx, &n); err != nil {
			t.Fatal(err)
		}
	}
	setTaint(true)
	t.Cleanup(func() { setTaint(false) })
	start := time.Now()
	if err := c.Delete(ctx, &old); err != nil {
		t.Fatal(err)
	}
	stopped := 0
	eventually(t, 90*time.Second, old.Name+" runs again on a node other than "+node, func() (bool, string) {
		st, err := jobStatus(ctx, c, ns, "heal")
		if err != nil {
			return false, err.Error()
		}
		if st.Phase == batch.JobFailed {
			t.Fatalf("heal failed: %s", conditionText(st, batch.ConditionFailed))
		}
		p, ok := getPod(ctx, c, ns, old.Name)
		return ok && p.UID != old.UID && p.Status.Phase == corev1.PodRunning && p.Spec.NodeName != node,
			fmt.Sprintf("%s %s on %q, gates %v, node selector %v; job %s, %s", old.Name, p.Status.Phase, p.Spec.NodeName, p.Spec.SchedulingGates, p.Spec.NodeSelector, st.Phase, conditionText(st, batch.ConditionWaiting))
	})
	var events corev1.EventList
	_ = c.List(ctx, &events, client.InNamespace(ns))
	for _, e := range events.Items {
		if e.Reason == "PodTerminatedByKueue" && e.InvolvedObject.Name == old.Name {
			stopped += int(max(e.Count, 1))
		}
	}
	st, _ := jobStatus(ctx, c, ns, "heal")
	now := exactlyRunning(ctx, t, c, ns, "heal", 3)
	delete(uids, old.Name)
	delete(now, old.Name)
	podsUntouched(t, uids, now)
	if st.BackoffCount != 0 || st.DisruptionCount < 1 {
		t.Errorf("backoffCount %d, disruptionCount %d; want 0 and at least 1", st.BackoffCount, st.DisruptionCount)
	}
	p, _ := getPod(ctx, c, ns, old.Name)
	t.Logf("%s ran again on %s %.1f s after its deletion (its node %s tainted); pods of it Kueue failed (TerminatedByKueue): %d; disruptionCount %d",
		old.Name, p.Spec.NodeName, time.Since(start).Seconds(), node, stopped, st.DisruptionCount)
	deleteAndWaitGone(ctx, t, c, ns, &batch.PyTorchTrainingJob{}, "heal")
}

func tasKubeflowOneRack(ctx context.Context, t *testing.T, s *sideCluster) {
	c, ns := sideQueue(ctx, t, s, "kq-tas-kf", tasFlavor, 32)
	start := time.Now()
	if out, err := kubectl(ctx, s.cfg, `apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: kft
  labels: {kueue.x-k8s.io/queue-name: q}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        metadata:
          annotations: {`+simRunsForever+`}
        spec:
          containers:
          - {name: pytorch, image: example.invalid/train:1, resources: {limits: {nvidia.com/gpu: 1}}}
    Worker:
      replicas: 3
      template:
        metadata:
          annotations: {`+simRunsForever+`, `+kueue.AnnotationPodSetRequiredTopology+`: `+tasRackLabel+`}
        spec:
          containers:
          - {name: pytorch, image: example.invalid/train:1, resources: {limits: {nvidia.com/gpu: 4}}}
`, "apply", "-n", ns, "-f", "-"); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
	w := waitWorkload(ctx, t, c, ns, "kft", "admitted", admitted)
	exactlyRunning(ctx, t, c, ns, "kft", 4)
	t.Logf("4 pods running %.1f s after the job's creation", time.Since(start).Seconds())
	placedByKueue(ctx, t, c, ns, "kft", w.GetName())
	deleteAndWaitGone(ctx, t, c, ns, &kubeflowv1.PyTorchJob{}, "kft")
}

// deleteAndWaitGone deletes the job and waits until its pods and Workloads are gone, their GPUs
// free for the next assessment.
func deleteAndWaitGone(ctx context.Context, t *testing.T, c client.Client, ns string, job client.Object, name string) {
	t.Helper()
	job.SetNamespace(ns)
	job.SetName(name)
	start := time.Now()
	if err := c.Delete(ctx, job); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, name+"'s pods and Workloads gone", func() (bool, string) {
		pods, wls := len(kfPodsOf(ctx, t, c, ns, name)), len(workloadsOf(ctx, t, c, ns, name))
		return pods == 0 && wls == 0, fmt.Sprintf("%d pods, %d Workloads", pods, wls)
	})
	t.Logf("%s deleted: its pods and Workloads gone in %.1f s", name, time.Since(start).Seconds())
}

// placedByKueue checks that every pod of the job runs where Kueue's topology ungater put it (no
// gate left, a node selector naming its node, the Workload and pod set named) and that its
// workers run in one rack.
func placedByKueue(ctx context.Context, t *testing.T, c client.Client, ns, job, workload string) {
	t.Helper()
	racks := map[string]bool{}
	for _, p := range kfPodsOf(ctx, t, c, ns, job) {
		if len(p.Spec.SchedulingGates) > 0 || p.Spec.NodeSelector[corev1.LabelHostname] != p.Spec.NodeName {
			t.Errorf("pod %s: scheduling gates %v, node selector %v, on node %s; want no gate and Kueue's node selector naming the node it runs on", p.Name, p.Spec.SchedulingGates, p.Spec.NodeSelector, p.Spec.NodeName)
		}
		if p.Annotations[kueue.AnnotationWorkload] != workload || p.Labels[kueue.LabelPodSet] == "" {
			t.Errorf("pod %s: annotations %v, labels %v; want the Workload %s and its pod set named", p.Name, p.Annotations, p.Labels, workload)
		}
		if strings.Contains(p.Name, "-worker-") {
			racks[tasRacks[p.Spec.NodeName]] = true
		}
	}
	if len(racks) != 1 {
		t.Errorf("the workers of %s ran in racks %v; want one", job, slices.Sorted(maps.Keys(racks)))
		return
	}
	t.Logf("the workers of %s ran in one rack, %v", job, slices.Sorted(maps.Keys(racks)))
}

func tasTooBig(ctx context.Context, t *testing.T, s *sideCluster) {
	c, ns := sideQueue(ctx, t, s, "kq-tas-big", tasFlavor, 32)
	create(ctx, t, c, ns, tasJob("big", 5))
	waitQueued(ctx, t, c, ns, "big")
	var msg string
	eventually(t, 60*time.Second, "big says Kueue cannot fit its workers in one rack", func() (bool, string) {
		st, err := jobStatus(ctx, c, ns, "big")
		if err != nil {
			return false, err.Error()
		}
		msg = conditionText(st, batch.ConditionWaiting)
		return strings.Contains(msg, "pod set worker") && strings.Contains(msg, `topology "racks"`), msg
	})
	if n := len(kfPodsOf(ctx, t, c, ns, "big")); n != 0 {
		t.Errorf("%d pods of a job Kueue has not admitted; want none", n)
	}
	t.Logf("big waits: %s", msg)
}
