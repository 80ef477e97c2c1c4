//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
)

// TestGangDisruptions: a coscheduling gang that fills its pool's two nodes, disrupted mid-run
// under the real scheduler-plugins. The new gang needs the very nodes the old one held, so it is
// created only once every old pod is gone, and it binds whole or not at all.
func TestGangDisruptions(t *testing.T) {
	testenv.TestInParallel(t,
		gangEvictedRestartsWhole(),
		gangNodeLostWaitsForItsNodes(),
	)
}

// fullGang is a plain-DDP coscheduling job of 4 pods of 4 GPUs (its pool's 16) under OnFailure.
func fullGang(name, pool string) *batch.PyTorchTrainingJob {
	job := gangJob(name, pool, 3, 4, sim("", ""), sim("", ""))
	for i := range job.Spec.ReplicaSpecs {
		job.Spec.ReplicaSpecs[i].RestartPolicy = batch.RestartPolicyOnFailure
	}
	return job
}

func fullGangPods(job string) []string {
	return []string{job + "-master-0", job + "-worker-0", job + "-worker-1", job + "-worker-2"}
}

// podGroupCounts is a PodGroup's minMember and the counts scheduler-plugins' controller writes.
func podGroupCounts(ctx context.Context, t *testing.T, g *gangFeature, name string) string {
	t.Helper()
	pg, err := getPodGroup(ctx, g.c, g.ns, name)
	if err != nil {
		return err.Error()
	}
	min, _, _ := unstructured.NestedInt64(pg.Object, "spec", "minMember")
	return fmt.Sprintf("minMember %d, status %v", min, pg.Object["status"])
}

func gangEvictedRestartsWhole() features.Feature {
	g, f := newGangFeature("a coscheduling gang filling its nodes, one pod evicted: the whole gang is replaced, counted as a disruption, and the new gang binds whole on the same nodes", "gang-evict")
	f = f.Assess("evicting a worker replaces the gang, bound whole by scheduler-plugins-scheduler", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
		create(ctx, t, g.c, g.ns, fullGang("gang-evict", g.ns))
		old := runningPods(ctx, t, g.c, g.ns, "gang-evict", 4)
		waitPodGroupPhase(ctx, t, g.c, g.ns, "gang-evict", "Running", 4)
		pg, _ := getPodGroup(ctx, g.c, g.ns, "gang-evict")
		evict(ctx, t, g.c, g.ns, "gang-evict-worker-1")
		took := waitReplaced(ctx, t, g.c, g.ns, "gang-evict", old, fullGangPods("gang-evict"), 4, true)
		waitCounts(ctx, t, g.c, g.ns, "gang-evict", 0, 1, 1, map[string]int32{"master": 1, "worker": 1})
		boundByCoscheduler(ctx, t, g, "gang-evict", 4)
		waitPodGroupPhase(ctx, t, g.c, g.ns, "gang-evict", "Running", 4)
		if now, _ := getPodGroup(ctx, g.c, g.ns, "gang-evict"); now.GetUID() != pg.GetUID() {
			t.Logf("the PodGroup was made anew for the new gang")
		}
		st, _ := jobStatus(ctx, g.c, g.ns, "gang-evict")
		t.Logf("the new gang of 4 ran %.1f s after the eviction; PodGroup %s; ReplicaFailure: %s", took.Seconds(), podGroupCounts(ctx, t, g, "gang-evict"), conditionText(st, batch.ConditionReplicaFailure))
		return ctx
	})
	return g.teardown(f).Feature()
}

// gangNodeLostWaitsForItsNodes: one of the pool's nodes stops answering under a gang that fills
// both. Its pods are taken for lost after --node-lost-after and the gang restarts, but the new
// gang cannot fit the one node left: it binds no pod and says so (GangWaiting) until the node is
// back, then binds whole.
func gangNodeLostWaitsForItsNodes() features.Feature {
	g, f := newGangFeature("a coscheduling gang whose node is lost restarts as a disruption; the new gang, needing both nodes, binds no pod until the node is back, then binds whole", "gang-lost")
	f = f.Assess("the node lost, the gang waits whole, then binds whole when the node is back", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
		// Pods with the default grace period (30 s): the taint manager's eviction (the local
		// cluster's pods tolerate a not-ready node for 5 s) leaves them Terminating, as no kubelet
		// confirms it, until the operator takes them for lost.
		job := fullGang("gang-lost", g.ns)
		for i := range job.Spec.ReplicaSpecs {
			job.Spec.ReplicaSpecs[i].Template.Spec.TerminationGracePeriodSeconds = nil
		}
		create(ctx, t, g.c, g.ns, job)
		old := runningPods(ctx, t, g.c, g.ns, "gang-lost", 4)
		waitPodGroupPhase(ctx, t, g.c, g.ns, "gang-lost", "Running", 4)
		node := g.ns + "-1"
		setManaged(ctx, t, g.c, node, false)
		stopped := time.Now()
		t.Cleanup(func() { remanage(context.Background(), t, g, node) })
		// Evicted but not yet lost: the job says when its pods will be replaced.
		w := waitingIs(ctx, t, g.c, g.ns, "gang-lost", batch.ReasonNodeLost, "were evicted from a node that is not ready; they are replaced at ")
		evictedAt := time.Since(stopped)
		at, err := time.Parse(time.RFC3339, strings.Fields(w.Message[strings.Index(w.Message, "replaced at ")+len("replaced at "):])[0][:20])
		if err != nil {
			t.Errorf("the NodeLost message names no time: %q", w.Message)
		}
		// The old gang goes (its pods on the lost node force-deleted once it has been NotReady for
		// --node-lost-after), and the new one is made but cannot fit.
		var says string
		eventually(t, 180*time.Second, "the old gang is gone and the new one waits, no pod bound", func() (bool, string) {
			pods := jobPods(ctx, t, g.c, g.ns, "gang-lost")
			fresh, bound := 0, 0
			for _, p := range pods {
				if old[p.Name] == p.UID {
					return false, p.Name + " of the old gang is still there"
				}
				fresh++
				if p.Spec.NodeName != "" {
					bound++
				}
			}
			st, _ := jobStatus(ctx, g.c, g.ns, "gang-lost")
			says = conditionText(st, batch.ConditionWaiting)
			return fresh == 4 && bound == 0 && st.DisruptionCount == 1, fmt.Sprintf("%d new pods, %d bound; disruptionCount %d; %s", fresh, bound, st.DisruptionCount, says)
		})
		t.Logf("%.1f s after the node stopped its pods were evicted and the job said they would be replaced at %s (in %.1f s); "+
			"%.1f s after the node stopped (%.1f s from the time said) the old gang was gone and the new one made, unbound: %s; PodGroup %s",
			evictedAt.Seconds(), at.Format(time.RFC3339), at.Sub(stopped.Add(evictedAt)).Seconds(),
			time.Since(stopped).Seconds(), time.Since(at).Seconds(), says, podGroupCounts(ctx, t, g, "gang-lost"))
		time.Sleep(10 * time.Second)
		for _, p := range jobPods(ctx, t, g.c, g.ns, "gang-lost") {
			if p.Spec.NodeName != "" {
				t.Errorf("%s bound to %s while its gang cannot fit the one node left", p.Name, p.Spec.NodeName)
			}
		}
		st, _ := jobStatus(ctx, g.c, g.ns, "gang-lost")
		t.Logf("10 s later still no pod bound; the job says: phase %s, %s", st.Phase, conditionText(st, batch.ConditionWaiting))
		back := time.Now()
		remanage(ctx, t, g, node)
		runningPods(ctx, t, g.c, g.ns, "gang-lost", 4)
		boundByCoscheduler(ctx, t, g, "gang-lost", 4)
		waitPodGroupPhase(ctx, t, g.c, g.ns, "gang-lost", "Running", 4)
		waitCounts(ctx, t, g.c, g.ns, "gang-lost", 0, 1, 1, map[string]int32{"master": 1, "worker": 1})
		t.Logf("the node back (Ready), the new gang ran whole %.1f s after", time.Since(back).Seconds())
		return ctx
	})
	return g.teardown(f).Feature()
}

// remanage gives the pool's node back to KWOK and waits until it is Ready (its pool taint stays).
func remanage(ctx context.Context, t *testing.T, g *gangFeature, node string) {
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:"true"}}}`, managedLabel)
	n := &corev1.Node{}
	n.Name = node
	if err := g.c.Patch(ctx, n, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Errorf("labelling node %s: %v", node, err)
		return
	}
	eventually(t, 60*time.Second, "node "+node+" is Ready again", func() (bool, string) {
		var n corev1.Node
		if err := g.c.Get(ctx, types.NamespacedName{Name: node}, &n); err != nil {
			return false, err.Error()
		}
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady {
				return cond.Status == corev1.ConditionTrue, fmt.Sprintf("%s, taints %v", cond.Status, n.Spec.Taints)
			}
		}
		return false, "no Ready condition"
	})
}
