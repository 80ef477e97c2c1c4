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
)

// TestKueueMaxExecTime: a job labelled kueue.x-k8s.io/max-exec-time-seconds runs under the real
// Kueue for that long and no longer, whichever API: Kueue deactivates its Workload, its pods go,
// its quota goes to the next job, and the job says Deactivated, naming the limit; `trainyard
// resume` runs it again with the same time. The T9k kinds' Workload is Trainyard's to make, so the
// label reaches Kueue only through it; the kubeflow.org kinds' through Kueue's own integration.
func TestKueueMaxExecTime(t *testing.T) {
	testenv.TestInParallel(t,
		kueueFeature("a PyTorchTrainingJob with kueue.x-k8s.io/max-exec-time-seconds is stopped by Kueue once it has run that long, frees its quota, says Deactivated, and trainyard resume runs it again", "kq-t9k-maxexec", kueueT9kMaxExecTime),
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
	// The next job waits for the quota the first one holds (2 GPUs of 2).
	create(ctx, t, c, ns, queued(pyTorchJob("next").Workers(1, sim("", "")).Obj(), ""))
	waitingIs(ctx, t, c, ns, "next", batch.ReasonQueued, "insufficient unused quota")

	words := fmt.Sprintf("ran admitted for its maximum execution time, %d s", maxExecSeconds)
	waitingIs(ctx, t, c, ns, "timed", "Deactivated", words)
	stopped := time.Since(running)
	eventually(t, 60*time.Second, "the stopped job has no pod", func() (bool, string) {
		pods := jobPods(ctx, t, c, ns, "timed")
		return len(pods) == 0, fmt.Sprintf("%d pods", len(pods))
	})
	waitPhase(ctx, t, c, ns, "next", batch.JobRunning)
	t.Logf("Kueue stopped the job %.1f s after it was seen Running (limit %d s); the next job ran on its quota %.1f s after that",
		stopped.Seconds(), maxExecSeconds, time.Since(running).Seconds()-stopped.Seconds())
	if stopped < maxExecSeconds*time.Second {
		t.Errorf("the job was stopped %.1f s after it was seen Running, before its %d s", stopped.Seconds(), maxExecSeconds)
	}
	if st, err := jobStatus(ctx, c, ns, "timed"); err != nil || st.BackoffCount != 0 || st.DisruptionCount != 0 || st.Phase != batch.JobPending {
		t.Errorf("the stopped job: phase %s, backoffCount %d, disruptionCount %d (%v); want Pending, 0, 0", st.Phase, st.BackoffCount, st.DisruptionCount, err)
	}
	eventSays(ctx, t, c, ns, "timed", "Deactivated", words)
	eventually(t, 30*time.Second, "trainyard get shows the stopped job Pending, Deactivated", func() (bool, string) {
		out := trainyardCLIAt(t, kubeconfigPath, "get", "-n", ns)
		return rowHas(out, "timed", "Pending", "Deactivated"), out
	})
	if out := trainyardCLIAt(t, kubeconfigPath, "describe", "pytorchtrainingjob/timed", "-n", ns); !strings.Contains(out, fmt.Sprintf("(inactive: trainyard resume activates it; maximum execution time %d s, ", maxExecSeconds)) {
		t.Errorf("trainyard describe of the stopped job does not show its inactive Workload and its maximum execution time:\n%s", out)
	}

	// The quota back, resume: the same Workload is active again and the job runs for the same time.
	if err := c.Delete(ctx, &batch.PyTorchTrainingJob{ObjectMeta: objectMeta(ns, "next")}); err != nil {
		t.Fatal(err)
	}
	out := trainyardCLIAt(t, kubeconfigPath, "resume", "pytorchtrainingjob/timed", "-n", ns)
	if !strings.Contains(out, "was not paused, but its Kueue Workload "+w.GetName()+" was inactive; it is active again") {
		t.Errorf("trainyard resume of the stopped job: %s", out)
	}
	resumed := time.Now()
	waitPhase(ctx, t, c, ns, "timed", batch.JobRunning)
	t.Logf("the resumed job ran again %.1f s after trainyard resume", time.Since(resumed).Seconds())
	waitingIs(ctx, t, c, ns, "timed", "Deactivated", words)
	if again := time.Since(resumed); again < maxExecSeconds*time.Second {
		t.Errorf("the resumed job was stopped again %.1f s after trainyard resume, before its %d s", again.Seconds(), maxExecSeconds)
	} else {
		t.Logf("and was stopped again %.1f s after the resume", again.Seconds())
	}
	if ws := workloadsOf(ctx, t, c, ns, "timed"); len(ws) != 1 || ws[0].GetName() != w.GetName() {
		t.Errorf("the job has %d Workloads after its resume; want its one, %s", len(ws), w.GetName())
	}
}

func kueueKubeflowMaxExecTime(ctx context.Context, t *testing.T, c client.Client, ns string) {
	createKueue(ctx, t, c, clusterQueue(ns, 2, false))
	applyYAML(ctx, t, ns, kfQueuedPyTorchJob("timed", simRunsForever, fmt.Sprintf(`, kueue.x-k8s.io/max-exec-time-seconds: "%d"`, maxExecSeconds)))
	waitKubeflow(ctx, t, c, ns, "timed", kubeflowv1.JobRunning)
	running := time.Now()
	kfWaitingIs(ctx, t, c, ns, "timed", "Deactivated", "DeactivatedDueToMaximumExecutionTimeExceeded")
	t.Logf("Kueue stopped the PyTorchJob %.1f s after it was seen Running (limit %d s)", time.Since(running).Seconds(), maxExecSeconds)
	eventually(t, 60*time.Second, "the stopped job has no pod", func() (bool, string) {
		pods := kfPodsOf(ctx, t, c, ns, "timed")
		return len(pods) == 0, fmt.Sprintf("%d pods", len(pods))
	})
	eventually(t, 30*time.Second, "trainyard get shows the stopped job Pending, Deactivated, not Paused", func() (bool, string) {
		out := trainyardCLIAt(t, kubeconfigPath, "get", "-n", ns)
		return rowHas(out, "timed", "Pending", "Deactivated"), out
	})
}
