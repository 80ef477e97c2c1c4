//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
	kubeflowv1 "github.com/trainyard/trainyard/apis/kubeflow/v1"
	"github.com/trainyard/trainyard/render"
)

// TestKueueFailures: a queued job that fails under the real Kueue. Its restarts (and their
// back-off) keep the admission, so nothing else takes its quota meanwhile; the failure that uses
// its backoffLimit up finishes its Workload, which frees the quota for the next job.
func TestKueueFailures(t *testing.T) {
	testenv.TestInParallel(t,
		kueueFeature("a queued job whose worker exits 1 keeps its Workload admitted through the restart and its back-off; backoffLimit used up finishes the Workload and the next job runs on the freed quota", "kq-t9k-crash", kueueT9kCrashLoop),
		kueueFeature("a Kubeflow PyTorchJob under Kueue's own integration whose worker exits 1 keeps its admission through the restart; backoffLimit used up, Kueue finishes its Workload and the next job runs", "kq-kf-crash", kueueKubeflowCrash),
	)
}

func kueueT9kCrashLoop(ctx context.Context, t *testing.T, c client.Client, ns string) {
	createKueue(ctx, t, c, clusterQueue(ns, 2, false))
	create(ctx, t, c, ns, queued(pyTorchJob("crash").Workers(1, sim("", "")).Policy(batch.RestartPolicyOnFailure).BackoffLimit(2).Obj(), ""))
	old := runningPods(ctx, t, c, ns, "crash", 2)
	first := waitWorkload(ctx, t, c, ns, "crash", "admitted", admitted)
	create(ctx, t, c, ns, queued(pyTorchJob("next").Workers(1, sim("", "")).Obj(), ""))
	waitQueued(ctx, t, c, ns, "next")

	// holds checks that the crashing job's Workload is the one first admitted and still holds
	// the quota, and that the next job has no pod.
	holds := func(when string) *unstructured.Unstructured {
		t.Helper()
		ws := workloadsOf(ctx, t, c, ns, "crash")
		if len(ws) != 1 || ws[0].GetUID() != first.GetUID() {
			t.Fatalf("%s: the job has %d Workloads; want the one first admitted, %s", when, len(ws), first.GetName())
		}
		w := &ws[0]
		if !admitted(w) || !strings.HasPrefix(workloadCondition(w, "QuotaReserved"), "True/") {
			t.Errorf("%s: the Workload is not admitted (QuotaReserved %s, Evicted %s)", when, workloadCondition(w, "QuotaReserved"), workloadCondition(w, "Evicted"))
		}
		if pods := kfPodsOf(ctx, t, c, ns, "next"); len(pods) > 0 {
			t.Errorf("%s: the next job has %d pods while the crashing one holds the quota", when, len(pods))
		}
		return w
	}

	annotatePod(ctx, t, c, ns, "crash-worker-0", simExitCode, "1")
	waitReplaced(ctx, t, c, ns, "crash", old, []string{"crash-master-0", "crash-worker-0"}, 2, true)
	waitCounts(ctx, t, c, ns, "crash", 1, 0, 1, map[string]int32{"master": 1, "worker": 1})
	holds("after the first restart")

	old = runningPods(ctx, t, c, ns, "crash", 2)
	failed := time.Now()
	annotatePod(ctx, t, c, ns, "crash-worker-0", simExitCode, "1")
	waitingIs(ctx, t, c, ns, "crash", batch.ReasonRestarting, "crash-worker-0 exited with code 1")
	w := waitWorkload(ctx, t, c, ns, "crash", "PodsReady False while the restart backs off", func(w *unstructured.Unstructured) bool {
		return strings.HasPrefix(workloadCondition(w, "PodsReady"), "False/")
	})
	t.Logf("during the back-off the Workload says PodsReady %s", workloadCondition(w, "PodsReady"))
	noPodsFor(ctx, t, c, ns, "next", 3*time.Second, "the crashing job holds the quota through its back-off")
	holds("during the back-off")
	waitReplaced(ctx, t, c, ns, "crash", old, []string{"crash-master-0", "crash-worker-0"}, 2, true)
	if waited := time.Since(failed); waited < render.RestartBackoffBase-time.Second {
		t.Errorf("the second restart ran %s after the failure; want its back-off, %s, first", waited, render.RestartBackoffBase)
	}
	waitCounts(ctx, t, c, ns, "crash", 2, 0, 2, map[string]int32{"master": 2, "worker": 2})
	w = waitWorkload(ctx, t, c, ns, "crash", "PodsReady True again", func(w *unstructured.Unstructured) bool {
		return strings.HasPrefix(workloadCondition(w, "PodsReady"), "True/")
	})
	t.Logf("the gang back: PodsReady %s", workloadCondition(w, "PodsReady"))
	holds("after the second restart")

	runningPods(ctx, t, c, ns, "crash", 2)
	ended := time.Now()
	annotatePod(ctx, t, c, ns, "crash-worker-0", simExitCode, "1")
	st := waitPhase(ctx, t, c, ns, "crash", batch.JobFailed)
	if got := condition(st, batch.ConditionFailed); got != "True/"+batch.ReasonBackoffLimitExceeded || st.BackoffCount != 2 {
		t.Errorf("Failed %q, backoffCount %d; want True/%s with 2", got, st.BackoffCount, batch.ReasonBackoffLimitExceeded)
	}
	failedAt := time.Since(ended)
	w = waitWorkload(ctx, t, c, ns, "crash", "Finished", func(w *unstructured.Unstructured) bool {
		return strings.HasPrefix(workloadCondition(w, "Finished"), "True/")
	})
	finishedAt := time.Since(ended)
	waitPhase(ctx, t, c, ns, "next", batch.JobRunning)
	onFlavorNodes(ctx, t, c, ns, "next", 2)
	t.Logf("backoffLimit used up: the job Failed %.1f s, its Workload %s %.1f s, and the next job Running %.1f s after the last exit",
		failedAt.Seconds(), workloadCondition(w, "Finished"), finishedAt.Seconds(), time.Since(ended).Seconds())
}

// kueueT9kPreemptedSays: what a preempted job says while it waits, and its counters once it runs
// again. It is checked inside kueueT9kPreempted; this prints the words a user sees.
func preemptedSays(ctx context.Context, t *testing.T, c client.Client, ns, name string) string {
	t.Helper()
	st, err := jobStatus(ctx, c, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("phase %s; %s; %s; disruptionCount %d", st.Phase, conditionText(st, batch.ConditionInitialized), conditionText(st, batch.ConditionWaiting), st.DisruptionCount)
}

// kfCrashingPyTorchJob is a queued PyTorchJob of a master and a worker under OnFailure with
// backoffLimit 1.
func kfCrashingPyTorchJob(name string) string {
	return `apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: ` + name + `
  labels: {kueue.x-k8s.io/queue-name: q}
spec:
  runPolicy: {backoffLimit: 1}
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      restartPolicy: OnFailure` + kfGPUPod("pytorch", simRunsForever) + `
    Worker:
      replicas: 1
      restartPolicy: OnFailure` + kfGPUPod("pytorch", simRunsForever)
}

// kueueKubeflowCrash: the same failures through Kueue's own kubeflow.org/pytorchjob integration,
// which reads the job's status (as Trainyard writes it) to keep the Workload's PodsReady and to
// finish it.
func kueueKubeflowCrash(ctx context.Context, t *testing.T, c client.Client, ns string) {
	createKueue(ctx, t, c, clusterQueue(ns, 2, false))
	applyYAML(ctx, t, ns, kfCrashingPyTorchJob("kcrash"))
	waitKubeflow(ctx, t, c, ns, "kcrash", kubeflowv1.JobRunning)
	old := runningPods(ctx, t, c, ns, "kcrash", 2)
	first := waitWorkload(ctx, t, c, ns, "kcrash", "admitted", admitted)
	applyYAML(ctx, t, ns, kfQueuedPyTorchJob("knext", simRunsForever, ""))
	waitWorkload(ctx, t, c, ns, "knext", "waits for quota", func(w *unstructured.Unstructured) bool {
		return strings.HasPrefix(workloadCondition(w, "QuotaReserved"), "False/")
	})

	annotatePod(ctx, t, c, ns, "kcrash-worker-0", simExitCode, "1")
	waitReplaced(ctx, t, c, ns, "kcrash", old, []string{"kcrash-master-0", "kcrash-worker-0"}, 2, true)
	eventually(t, 30*time.Second, "kcrash Running again with backoffCount 1", func() (bool, string) {
		st, _ := kfStatus(ctx, c, ns, "kcrash")
		return kfCondition(st, kubeflowv1.JobRunning) == "True" && st.BackoffCount == 1, fmt.Sprintf("Running %q, backoffCount %d", kfCondition(st, kubeflowv1.JobRunning), st.BackoffCount)
	})
	ws := workloadsOf(ctx, t, c, ns, "kcrash")
	if len(ws) != 1 || ws[0].GetUID() != first.GetUID() || !admitted(&ws[0]) {
		t.Errorf("after the restart the job has %d Workloads; want the one first admitted, still admitted", len(ws))
	} else {
		t.Logf("after the restart the Workload is still admitted: PodsReady %s", workloadCondition(&ws[0], "PodsReady"))
	}
	if pods := kfPodsOf(ctx, t, c, ns, "knext"); len(pods) > 0 {
		t.Errorf("the next job has %d pods while the restarted one holds the quota", len(pods))
	}

	runningPods(ctx, t, c, ns, "kcrash", 2)
	ended := time.Now()
	annotatePod(ctx, t, c, ns, "kcrash-worker-0", simExitCode, "1")
	waitKubeflow(ctx, t, c, ns, "kcrash", kubeflowv1.JobFailed)
	failedAt := time.Since(ended)
	w := waitWorkload(ctx, t, c, ns, "kcrash", "Finished", func(w *unstructured.Unstructured) bool {
		return strings.HasPrefix(workloadCondition(w, "Finished"), "True/")
	})
	finishedAt := time.Since(ended)
	waitKubeflow(ctx, t, c, ns, "knext", kubeflowv1.JobRunning)
	onFlavorNodes(ctx, t, c, ns, "knext", 2)
	t.Logf("backoffLimit used up: the PyTorchJob Failed %.1f s, its Workload %s %.1f s (Kueue's integration), and the next job Running %.1f s after the last exit",
		failedAt.Seconds(), workloadCondition(w, "Finished"), finishedAt.Seconds(), time.Since(ended).Seconds())
}
