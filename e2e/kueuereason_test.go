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

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
	kubeflowv1 "github.com/trainyard/trainyard/apis/kubeflow/v1"
)

// TestKueueReasons: a job the real Kueue holds says why in Kueue's words, whichever API: its
// Waiting condition (and the event of its change) quotes the preemption that stopped it, and
// `trainyard describe` shows it; a kubeflow.org job paused with `trainyard pause` whose Workload is
// made active again by hand follows Kueue's admission again, the pause's mark notwithstanding.
func TestKueueReasons(t *testing.T) {
	testenv.TestInParallel(t,
		kueueFeature("a preempted Kubeflow PyTorchJob says Kueue's preemption in its Waiting condition, its event and trainyard describe, naming the preempting job", "kq-kf-why", kueueKubeflowPreemptionSaid),
		kueueFeature("a preempted PyTorchTrainingJob says Kueue's preemption in its Waiting condition and trainyard describe, naming the preempting job", "kq-t9k-why", kueueT9kPreemptionSaid),
		kueueFeature("a Kubeflow PyTorchJob paused by trainyard pause whose Workload is reactivated by hand runs once Kueue admits it, and a later preemption says Queued, not Paused", "kq-kf-react", kueueKubeflowReactivatedByHand),
	)
}

// preemptedWords are Kueue's words for a preemption within a ClusterQueue (its Evicted and
// Preempted conditions' message).
const preemptedWords = "due to prioritization in the ClusterQueue"

func kueueKubeflowPreemptionSaid(ctx context.Context, t *testing.T, c client.Client, ns string) {
	low, high := priorityClasses(ctx, t, c, ns)
	createKueue(ctx, t, c, clusterQueue(ns, 2, true))
	applyYAML(ctx, t, ns, kfQueuedPyTorchJob("low", simRunsForever, ", kueue.x-k8s.io/priority-class: "+low))
	waitKubeflow(ctx, t, c, ns, "low", kubeflowv1.JobRunning)
	applyYAML(ctx, t, ns, kfQueuedPyTorchJob("high", simRunsForever, ", kueue.x-k8s.io/priority-class: "+high))
	start := time.Now()
	// Kueue names the preempting Workload by UIDs; the operator names its job, of this namespace.
	const named = preemptedWords + "; preemptor path: "
	const forHigh = ") for PyTorchJob high; waiting to be admitted again"
	kfWaitingIs(ctx, t, c, ns, "low", "Queued", forHigh)
	t.Logf("the preempted job said Kueue's preemption, naming the high-priority job, %.1f s after that job was created", time.Since(start).Seconds())
	eventSays(ctx, t, c, ns, "low", "Queued", preemptedWords)
	if out := trainyardCLIAt(t, kubeconfigPath, "describe", "pytorchjob/low", "-n", ns); !strings.Contains(waitingLine(out), named) || !strings.Contains(waitingLine(out), forHigh) {
		t.Errorf("trainyard describe of the preempted job does not say Kueue's preemption on its Waiting line:\n%s", out)
	}
	// Requeued, Kueue's scheduler finds no quota for it while the high-priority job runs.
	kfWaitingIs(ctx, t, c, ns, "low", "Queued", "insufficient unused quota")
}

func kueueT9kPreemptionSaid(ctx context.Context, t *testing.T, c client.Client, ns string) {
	low, high := priorityClasses(ctx, t, c, ns)
	createKueue(ctx, t, c, clusterQueue(ns, 2, true))
	create(ctx, t, c, ns, queued(pyTorchJob("low").Workers(1, sim("", "")).Obj(), low))
	waitPhase(ctx, t, c, ns, "low", batch.JobRunning)
	create(ctx, t, c, ns, queued(pyTorchJob("high").Workers(1, sim("", "")).Obj(), high))
	const forHigh = ") for PyTorchTrainingJob high; waiting to be admitted again"
	waitingIs(ctx, t, c, ns, "low", batch.ReasonQueued, forHigh)
	eventSays(ctx, t, c, ns, "low", "Queued", preemptedWords)
	if out := trainyardCLIAt(t, kubeconfigPath, "describe", "pytorchtrainingjob/low", "-n", ns); !strings.Contains(waitingLine(out), preemptedWords) || !strings.Contains(waitingLine(out), forHigh) {
		t.Errorf("trainyard describe of the preempted job does not say Kueue's preemption on its Waiting line:\n%s", out)
	}
	waitingIs(ctx, t, c, ns, "low", batch.ReasonQueued, "insufficient unused quota")
}

// kueueKubeflowReactivatedByHand: `trainyard pause` marks the job (batch.trainyard.dev/paused-by-user)
// and deactivates its Workload; a user who sets spec.active back by hand ends the pause: Kueue
// admits the job and it runs; preempted later, it says Queued with Kueue's reason, not Paused.
func kueueKubeflowReactivatedByHand(ctx context.Context, t *testing.T, c client.Client, ns string) {
	low, high := priorityClasses(ctx, t, c, ns)
	createKueue(ctx, t, c, clusterQueue(ns, 2, true))
	applyYAML(ctx, t, ns, kfQueuedPyTorchJob("held", simRunsForever, ", kueue.x-k8s.io/priority-class: "+low))
	waitKubeflow(ctx, t, c, ns, "held", kubeflowv1.JobRunning)
	trainyardCLIAt(t, kubeconfigPath, "pause", "pytorchjob/held", "-n", ns)
	eventually(t, 60*time.Second, "the paused job is suspended and has no pod", func() (bool, string) {
		s, _ := kfSuspended(ctx, c, ns, "PyTorchJob", "held")
		pods := kfPodsOf(ctx, t, c, ns, "held")
		return s && len(pods) == 0, fmt.Sprintf("suspend %v, %d pods", s, len(pods))
	})
	ws := workloadsOf(ctx, t, c, ns, "held")
	if len(ws) != 1 {
		t.Fatalf("the job has %d Workloads; want 1", len(ws))
	}
	// By hand, as a user or an admin would, past trainyard resume.
	if err := c.Patch(ctx, &ws[0], client.RawPatch(types.MergePatchType, []byte(`{"spec":{"active":true}}`))); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	waitKubeflow(ctx, t, c, ns, "held", kubeflowv1.JobRunning)
	eventually(t, 60*time.Second, "the reactivated job runs its pods", func() (bool, string) {
		pods := kfPodsOf(ctx, t, c, ns, "held")
		return len(pods) == 2, fmt.Sprintf("%d pods", len(pods))
	})
	t.Logf("the job ran again %.1f s after its Workload was reactivated by hand", time.Since(start).Seconds())
	eventually(t, 30*time.Second, "trainyard get shows the reactivated job Running 2/2", func() (bool, string) {
		out := trainyardCLIAt(t, kubeconfigPath, "get", "-n", ns)
		return rowHas(out, "held", "Running", "2/2"), out
	})
	applyYAML(ctx, t, ns, kfQueuedPyTorchJob("high", simRunsForever, ", kueue.x-k8s.io/priority-class: "+high))
	kfWaitingIs(ctx, t, c, ns, "held", "Queued", preemptedWords)
	waitWorkload(ctx, t, c, ns, "held", "active (no pause)", func(w *unstructured.Unstructured) bool {
		active, found, _ := unstructured.NestedBool(w.Object, "spec", "active")
		return !found || active
	})
}

// eventSays waits for an event of the job with the reason and a message holding words.
func eventSays(ctx context.Context, t *testing.T, c client.Client, ns, job, reason, words string) {
	t.Helper()
	eventually(t, 30*time.Second, fmt.Sprintf("an event %s of %s says %q", reason, job, words), func() (bool, string) {
		var evs corev1.EventList
		if err := c.List(ctx, &evs, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, e := range evs.Items {
			if e.InvolvedObject.Name != job || e.Reason != reason {
				continue
			}
			if strings.Contains(e.Message, words) {
				return true, ""
			}
			seen = append(seen, e.Message)
		}
		return false, fmt.Sprintf("events %s: %q", reason, seen)
	})
}

// waitingLine is the Waiting line of `trainyard describe`.
func waitingLine(out string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "Waiting:") {
			return l
		}
	}
	return ""
}
