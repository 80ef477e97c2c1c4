//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
	kubeflowv1 "github.com/trainyard/trainyard/apis/kubeflow/v1"
)

// TestKueueMaxExecTime: a job labelled kueue.x-k8s.io/max-exec-time-seconds runs under the real
// Kueue for that long and no longer, whichever API: Kueue deactivates its Workload, its pods go,
// its quota goes to the next job, and the job says Deactivated, naming the limit; `trainyard
// resume` refuses (Kueue counts the time used, and would stop the job again at once), and a new
// value of the label queues the job anew under a new Workload. The T9k kinds' Workload is Trainyard's to make, so the
// label reaches Kueue only through it; the kubeflow.org kinds' through Kueue's own integration.
func TestKueueMaxExecTime(t *testing.T) {
	testenv.TestInParallel(t,
		kueueFeature("a PyTorchTrainingJob with kueue.x-k8s.io/max-exec-time-seconds is stopped by Kueue once it has run that long, frees its quota, says Deactivated; trainyard resume refuses, and a new label value runs it again", "kq-t9k-maxexec", kueueT9kMaxExecTime),
		kueueFeature("a Kubeflow PyTorchJob with kueue.x-k8s.io/max-exec-time-seconds is stopped by Kueue once it has run that long and says Deactivated", "kq-kf-maxexec", kueueKubeflowMaxExecTime),
	)
}

// maxExecSeconds is the features' limit: long enough for the job to be seen Running, short enough
// for a test.
const maxExecSeconds = 8

func kueueT9kMaxExecTime(ctx context.Context, t *testing.T, c client.Client, ns string) {
	createKueue(ctx, t, c, clusterQueue(ns, 2, false))
	timed := queued(pyTorchJob("timed").Workers(1, sim("", "")).Obj(), "")
	timed.GetLabels()["kueue.x-k8s.io/max-exec-time-seconds"] = fmt.Sprint(maxExecSeconds)
	create(ctx, t, c, ns, timed)
	w := waitWorkload(ctx, t, c, ns, "timed", "carrying the job's maximum execution time", func(w *unstructured.Unstructured) bool {
		v, _, _ := unstructured.NestedInt64(w.Object, "spec", "maximumExecutionTimeSeconds")
		return v == maxExecSeconds
	})
	t.Logf("Workload %s: spec.maximumExecutionTimeSeconds %d", w.GetName(), maxExecSeconds)
	waitPhase(ctx, t, c, ns, "timed", batch.JobRunning)
	running := time.Now()
	admitted := admittedAt(ctx, t, c, ns, "timed")
	// The next job waits for the quota the first one holds (2 GPUs of 2).
	create(ctx, t, c, ns, queued(pyTorchJob("next").Workers(1, sim("", "")).Obj(), ""))
	waitingIs(ctx, t, c, ns, "next", batch.ReasonQueued, "insufficient unused quota")

	words := fmt.Sprintf("ran admitted for its maximum execution time, %d s", maxExecSeconds)
	waitingIs(ctx, t, c, ns, "timed", "Deactivated", words)
	stopped, used := time.Since(running), time.Since(admitted)
	eventually(t, 60*time.Second, "the stopped job has no pod", func() (bool, string) {
		pods := jobPods(ctx, t, c, ns, "timed")
		return len(pods) == 0, fmt.Sprintf("%d pods", len(pods))
	})
	waitPhase(ctx, t, c, ns, "next", batch.JobRunning)
	t.Logf("Kueue stopped the job %.1f s after its admission (its Admitted condition, to the second; limit %d s), %.1f s after it was seen Running; the next job ran on its quota %.1f s after that",
		used.Seconds(), maxExecSeconds, stopped.Seconds(), time.Since(running).Seconds()-stopped.Seconds())
	// Note: Kueue counts from the admission, which comes before the pods run.
	if used < maxExecSeconds*time.Second {
		t.Errorf("the job was stopped %.1f s after its admission, before its %d s", used.Seconds(), maxExecSeconds)
	}
	if st, err := jobStatus(ctx, c, ns, "timed"); err != nil || st.BackoffCount != 0 || st.DisruptionCount != 0 || st.Phase != batch.JobPending {
		t.Errorf("the stopped job: phase %s, backoffCount %d, disruptionCount %d (%v); want Pending, 0, 0", st.Phase, st.BackoffCount, st.DisruptionCount, err)
	}
	eventSays(ctx, t, c, ns, "timed", "Deactivated", words)
	eventually(t, 30*time.Second, "trainyard get shows the stopped job Pending, Deactivated", func() (bool, string) {
		out := trainyardCLIAt(t, kubeconfigPath, "get", "-n", ns)
		return rowHas(out, "timed", "Pending", "Deactivated"), out
	})
	if out := trainyardCLIAt(t, kubeconfigPath, "describe", "pytorchtrainingjob/timed", "-n", ns); !strings.Contains(out, fmt.Sprintf("(inactive: its maximum execution time is used up; a new value of the label kueue.x-k8s.io/max-exec-time-seconds queues the job anew; maximum execution time %d s, ", maxExecSeconds)) {
		t.Errorf("trainyard describe of the stopped job does not show its inactive Workload and its maximum execution time:\n%s", out)
	}

	// trainyard resume refuses: Kueue counts the time the Workload was admitted, and activated it
	// would stop the job again at its next admission.
	if out, err := exec.Command(filepath.Join(repoRoot, "bin", "trainyard"), "resume", "pytorchtrainingjob/timed", "-n", ns, "--kubeconfig", kubeconfigPath).CombinedOutput(); err == nil ||
		!strings.Contains(string(out), "kubectl label pytorchtrainingjob timed kueue.x-k8s.io/max-exec-time-seconds=<seconds> --overwrite") {
		t.Errorf("trainyard resume of the stopped job: %v: %s; want a refusal naming the label", err, out)
	}
	if ws := workloadsOf(ctx, t, c, ns, "timed"); len(ws) != 1 || workloadActive(&ws[0]) {
		t.Errorf("after the refused resume the job has %d Workloads, the first active: want its one, inactive", len(ws))
	}

	// A new time on the label, the quota back: the job queues anew under a new Workload and runs.
	if err := c.Delete(ctx, &batch.PyTorchTrainingJob{ObjectMeta: objectMeta(ns, "next")}); err != nil {
		t.Fatal(err)
	}
	relabelled := time.Now()
	patch := `{"metadata":{"labels":{"kueue.x-k8s.io/max-exec-time-seconds":"600"}}}`
	if err := c.Patch(ctx, &batch.PyTorchTrainingJob{ObjectMeta: objectMeta(ns, "timed")}, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatal(err)
	}
	waitPhase(ctx, t, c, ns, "timed", batch.JobRunning)
	t.Logf("with the label raised to 600 s the job ran again %.1f s later", time.Since(relabelled).Seconds())
	waitWorkload(ctx, t, c, ns, "timed", "a new Workload of 600 s", func(nw *unstructured.Unstructured) bool {
		v, _, _ := unstructured.NestedInt64(nw.Object, "spec", "maximumExecutionTimeSeconds")
		return v == 600 && nw.GetUID() != w.GetUID() && workloadActive(nw)
	})
}

// workloadActive is a Workload's spec.active, true when unset.
func workloadActive(w *unstructured.Unstructured) bool {
	active, found, _ := unstructured.NestedBool(w.Object, "spec", "active")
	return active || !found
}

func kueueKubeflowMaxExecTime(ctx context.Context, t *testing.T, c client.Client, ns string) {
	createKueue(ctx, t, c, clusterQueue(ns, 2, false))
	applyYAML(ctx, t, ns, kfQueuedPyTorchJob("timed", simRunsForever, fmt.Sprintf(`, kueue.x-k8s.io/max-exec-time-seconds: "%d"`, maxExecSeconds)))
	waitKubeflow(ctx, t, c, ns, "timed", kubeflowv1.JobRunning)
	running := time.Now()
	admitted := admittedAt(ctx, t, c, ns, "timed")
	kfWaitingIs(ctx, t, c, ns, "timed", "Deactivated", fmt.Sprintf("ran admitted for its maximum execution time, %d s", maxExecSeconds))
	t.Logf("Kueue stopped the PyTorchJob %.1f s after its admission (limit %d s), %.1f s after it was seen Running",
		time.Since(admitted).Seconds(), maxExecSeconds, time.Since(running).Seconds())
	eventually(t, 60*time.Second, "the stopped job has no pod", func() (bool, string) {
		pods := kfPodsOf(ctx, t, c, ns, "timed")
		return len(pods) == 0, fmt.Sprintf("%d pods", len(pods))
	})
	eventually(t, 30*time.Second, "trainyard get shows the stopped job Pending, Deactivated, not Paused", func() (bool, string) {
		out := trainyardCLIAt(t, kubeconfigPath, "get", "-n", ns)
		return rowHas(out, "timed", "Pending", "Deactivated"), out
	})
}

// admittedAt is when the job's Workload was last admitted (its Admitted condition, to the second),
// waiting for it to be admitted.
func admittedAt(ctx context.Context, t *testing.T, c client.Client, ns, job string) time.Time {
	t.Helper()
	var at time.Time
	waitWorkload(ctx, t, c, ns, job, "admitted", func(w *unstructured.Unstructured) bool {
		conds, _, _ := unstructured.NestedSlice(w.Object, "status", "conditions")
		for _, x := range conds {
			m, _ := x.(map[string]any)
			if m["type"] == "Admitted" && m["status"] == "True" {
				at, _ = time.Parse(time.RFC3339, fmt.Sprint(m["lastTransitionTime"]))
				return !at.IsZero()
			}
		}
		return false
	})
	return at
}
