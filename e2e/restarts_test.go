//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
	"github.com/trainyard/trainyard/render"
)

// TestRestarts: failures recover the way distributed training needs (SPEC §7, issue 16): what is
// restarted is what can recover, and disruptions do not use up backoffLimit. The features run in
// parallel, each in its own namespace.
func TestRestarts(t *testing.T) {
	testenv.TestInParallel(t,
		operatorFeature("plain DDP: a worker exiting 1 under OnFailure restarts every pod, counted once, and the job then succeeds", "ddp", plainDDPRestartsTheGang),
		operatorFeature("torchrun with maxRestarts: a worker exiting 1 restarts that worker alone", "torchrun", torchrunRestartsTheWorker),
		operatorFeature("TensorFlow with PS: a failed worker restarts alone, a failed PS restarts the whole job", "tf-ps", tensorFlowPSRestarts),
		operatorFeature("an evicted pod is replaced as a disruption: backoffCount stays 0, even with backoffLimit 0", "evicted", evictedPodIsADisruption),
		operatorFeature("backoffLimit still ends a job that keeps failing by exit code; an eviction on the way does not use it up", "backoff-evict", backoffLimitAfterAnEviction),
		operatorFeature("a restart by exit code after the first backs off: the second waits 10 s from the pod's end, saying until when", "backoff-wait", restartsBackOff),
		operatorFeature("a failure held in back-off counts whatever ends the hold: the failed pod deleted by hand restarts at once, counted; a pause counts it", "backoff-cut", heldFailuresCount),
		operatorFeature("an edit of the template during a restart's back-off ends it: the pods of the fixed image are created at once, counted; an edit of runPolicy keeps the wait", "backoff-edit", templateEditEndsTheBackoff),
	)
}

// runningPods waits until the job has n pods, all Running and none being deleted, and returns
// their UIDs by name.
func runningPods(ctx context.Context, t *testing.T, c client.Client, ns, job string, n int) map[string]types.UID {
	t.Helper()
	out := map[string]types.UID{}
	eventually(t, 60*time.Second, fmt.Sprintf("%d pods of %s run", n, job), func() (bool, string) {
		clear(out)
		for _, p := range jobPods(ctx, t, c, ns, job) {
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				out[p.Name] = p.UID
			}
		}
		return len(out) == n, fmt.Sprintf("running: %v", names(out))
	})
	return out
}

// waitReplaced waits until the job runs n pods, those named in replaced with new UIDs and the
// others with their UIDs in old, and returns how long that took. With gang, it fails the test if
// a pod of the new gang was ever seen beside a pod of the old one: a gang restart creates the new
// gang only once every old pod is gone.
func waitReplaced(ctx context.Context, t *testing.T, c client.Client, ns, job string, old map[string]types.UID, replaced []string, n int, gang bool) time.Duration {
	t.Helper()
	start := time.Now()
	want := map[string]bool{}
	for _, name := range replaced {
		want[name] = true
	}
	mixed := ""
	eventually(t, 90*time.Second, fmt.Sprintf("%s runs %d pods, new ones for %v", job, n, replaced), func() (bool, string) {
		running, fresh, stale := 0, 0, 0
		var why []string
		for _, p := range jobPods(ctx, t, c, ns, job) {
			isNew := old[p.Name] != p.UID
			switch {
			case isNew:
				fresh++
			case gang || want[p.Name]:
				stale++
			}
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil && isNew == want[p.Name] {
				running++
			}
			why = append(why, fmt.Sprintf("%s new=%v %s", p.Name, isNew, p.Status.Phase))
		}
		if gang && fresh > 0 && stale > 0 && mixed == "" {
			mixed = strings.Join(why, ", ")
		}
		return running == n, strings.Join(why, ", ")
	})
	if mixed != "" {
		t.Errorf("a pod of the new gang was seen beside a pod of the old one: %s", mixed)
	}
	return time.Since(start)
}

// restartCounts are the status's counters and each task's restartCount, for a message.
func restartCounts(st batch.TrainingJobStatus) (backoff, disruptions, gangs int32, tasks map[string]int32) {
	tasks = map[string]int32{}
	for _, task := range st.Tasks {
		tasks[task.Type] = task.RestartCount
	}
	return st.BackoffCount, st.DisruptionCount, st.GangRestarts, tasks
}

// waitCounts waits for the job Running with the given counters and task restart counts.
func waitCounts(ctx context.Context, t *testing.T, c client.Client, ns, job string, backoff, disruptions, gangs int32, tasks map[string]int32) {
	t.Helper()
	eventually(t, 30*time.Second, fmt.Sprintf("%s Running with backoffCount %d, disruptionCount %d, gangRestarts %d, restartCounts %v", job, backoff, disruptions, gangs, tasks), func() (bool, string) {
		st, err := jobStatus(ctx, c, ns, job)
		if err != nil {
			return false, err.Error()
		}
		b, d, g, got := restartCounts(st)
		ok := st.Phase == batch.JobRunning && b == backoff && d == disruptions && g == gangs && fmt.Sprint(got) == fmt.Sprint(tasks)
		return ok, fmt.Sprintf("phase %s backoffCount %d disruptionCount %d gangRestarts %d restartCounts %v", st.Phase, b, d, g, got)
	})
}

func names(m map[string]types.UID) string {
	var out []string
	for n := range m {
		out = append(out, n)
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

// evict evicts a pod through the Eviction API, as kubectl drain does.
func evict(ctx context.Context, t *testing.T, c client.Client, ns, pod string) {
	t.Helper()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: pod}}
	if err := c.SubResource("eviction").Create(ctx, p, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: pod}}); err != nil {
		t.Fatalf("evicting %s: %v", pod, err)
	}
}

func plainDDPRestartsTheGang(ctx context.Context, t *testing.T, c client.Client, ns string) {
	create(ctx, t, c, ns, pyTorchJob("ddp").Workers(2, sim("", "")).Policy(batch.RestartPolicyOnFailure).Obj())
	old := runningPods(ctx, t, c, ns, "ddp", 3)
	annotatePod(ctx, t, c, ns, "ddp-worker-1", simExitCode, "1")
	took := waitReplaced(ctx, t, c, ns, "ddp", old, []string{"ddp-master-0", "ddp-worker-0", "ddp-worker-1"}, 3, true)
	t.Logf("the gang ran again %.1f s after worker-1 was told to exit", took.Seconds())
	waitCounts(ctx, t, c, ns, "ddp", 1, 0, 1, map[string]int32{"master": 1, "worker": 1})
	for _, p := range jobPods(ctx, t, c, ns, "ddp") {
		if p.Annotations[batch.AnnotationGangRestarts] != "1" {
			t.Errorf("%s of the new gang has %s %q; want \"1\"", p.Name, batch.AnnotationGangRestarts, p.Annotations[batch.AnnotationGangRestarts])
		}
	}
	annotatePod(ctx, t, c, ns, "ddp-master-0", simExitCode, "0")
	st := waitPhase(ctx, t, c, ns, "ddp", batch.JobSucceeded)
	if st.BackoffCount != 1 || st.GangRestarts != 1 {
		t.Errorf("after success: backoffCount %d, gangRestarts %d; want 1 and 1", st.BackoffCount, st.GangRestarts)
	}
}

func torchrunRestartsTheWorker(ctx context.Context, t *testing.T, c client.Client, ns string) {
	create(ctx, t, c, ns, pyTorchJob("tr").Workers(2, sim("", "")).Policy(batch.RestartPolicyOnFailure).Torchrun().MaxRestarts(3).Obj())
	old := runningPods(ctx, t, c, ns, "tr", 3)
	annotatePod(ctx, t, c, ns, "tr-worker-1", simExitCode, "1")
	waitReplaced(ctx, t, c, ns, "tr", old, []string{"tr-worker-1"}, 3, false)
	waitCounts(ctx, t, c, ns, "tr", 1, 0, 0, map[string]int32{"master": 0, "worker": 1})
	for name, uid := range runningPods(ctx, t, c, ns, "tr", 3) {
		if name != "tr-worker-1" && uid != old[name] {
			t.Errorf("%s was replaced too; torchrun's agents re-rendezvous, so only tr-worker-1 should be", name)
		}
	}
}

func tensorFlowPSRestarts(ctx context.Context, t *testing.T, c client.Client, ns string) {
	create(ctx, t, c, ns, tensorFlowJob("tfps").
		Replica(batch.TensorFlowReplicaChief, 1, sim("", "")).
		Replica(batch.TensorFlowReplicaPS, 1, sim("", "")).
		Replica(batch.TensorFlowReplicaWorker, 2, sim("", "")).Policy(batch.RestartPolicyOnFailure).Obj())
	old := runningPods(ctx, t, c, ns, "tfps", 4)
	annotatePod(ctx, t, c, ns, "tfps-worker-1", simExitCode, "1")
	waitReplaced(ctx, t, c, ns, "tfps", old, []string{"tfps-worker-1"}, 4, false)
	waitCounts(ctx, t, c, ns, "tfps", 1, 0, 0, map[string]int32{"chief": 0, "ps": 0, "worker": 1})

	old = runningPods(ctx, t, c, ns, "tfps", 4)
	annotatePod(ctx, t, c, ns, "tfps-ps-0", simExitCode, "1")
	waitReplaced(ctx, t, c, ns, "tfps", old, []string{"tfps-chief-0", "tfps-ps-0", "tfps-worker-0", "tfps-worker-1"}, 4, true)
	waitCounts(ctx, t, c, ns, "tfps", 2, 0, 1, map[string]int32{"chief": 1, "ps": 1, "worker": 2})
}

func evictedPodIsADisruption(ctx context.Context, t *testing.T, c client.Client, ns string) {
	// backoffLimit 0: a restart by exit code would fail the job; a disruption must not.
	create(ctx, t, c, ns, pyTorchJob("ev").Workers(1, sim("", "")).Policy(batch.RestartPolicyOnFailure).BackoffLimit(0).Obj())
	old := runningPods(ctx, t, c, ns, "ev", 2)
	evict(ctx, t, c, ns, "ev-worker-0")
	// Plain PyTorch: the evicted rank cannot rejoin, so the gang restarts.
	waitReplaced(ctx, t, c, ns, "ev", old, []string{"ev-master-0", "ev-worker-0"}, 2, true)
	waitCounts(ctx, t, c, ns, "ev", 0, 1, 1, map[string]int32{"master": 1, "worker": 1})
	st, _ := jobStatus(ctx, c, ns, "ev")
	if got := condition(st, batch.ConditionReplicaFailure); got != "True/"+batch.ReasonRestarting {
		t.Errorf("ReplicaFailure = %q; want True/%s", got, batch.ReasonRestarting)
	}
	for _, cond := range st.Conditions {
		if cond.Type == batch.ConditionReplicaFailure && !strings.Contains(cond.Message, "ev-worker-0 was evicted") {
			t.Errorf("ReplicaFailure message %q does not say which pod was evicted", cond.Message)
		}
	}
}

func backoffLimitAfterAnEviction(ctx context.Context, t *testing.T, c client.Client, ns string) {
	create(ctx, t, c, ns, pyTorchJob("bl").Workers(1, sim("", "")).Policy(batch.RestartPolicyOnFailure).BackoffLimit(1).Obj())
	old := runningPods(ctx, t, c, ns, "bl", 2)
	evict(ctx, t, c, ns, "bl-worker-0")
	waitReplaced(ctx, t, c, ns, "bl", old, []string{"bl-master-0", "bl-worker-0"}, 2, true)
	waitCounts(ctx, t, c, ns, "bl", 0, 1, 1, map[string]int32{"master": 1, "worker": 1})
	old = runningPods(ctx, t, c, ns, "bl", 2)
	annotatePod(ctx, t, c, ns, "bl-worker-0", simExitCode, "1")
	waitReplaced(ctx, t, c, ns, "bl", old, []string{"bl-master-0", "bl-worker-0"}, 2, true)
	waitCounts(ctx, t, c, ns, "bl", 1, 1, 2, map[string]int32{"master": 2, "worker": 2})
	annotatePod(ctx, t, c, ns, "bl-worker-0", simExitCode, "1")
	st := waitPhase(ctx, t, c, ns, "bl", batch.JobFailed)
	if got := condition(st, batch.ConditionFailed); got != "True/"+batch.ReasonBackoffLimitExceeded {
		t.Errorf("Failed condition = %q; want True/%s", got, batch.ReasonBackoffLimitExceeded)
	}
	if st.BackoffCount != 1 || st.DisruptionCount != 1 {
		t.Errorf("backoffCount %d, disruptionCount %d; want 1 (the limit) and 1", st.BackoffCount, st.DisruptionCount)
	}
}

// restartsBackOff: the first restart by exit code is at once; the second waits
// render.RestartBackoffBase from the failed pod's end, the job saying so meanwhile (render/backoff.go).
func restartsBackOff(ctx context.Context, t *testing.T, c client.Client, ns string) {
	create(ctx, t, c, ns, pyTorchJob("bw").Workers(1, sim("", "")).Policy(batch.RestartPolicyOnFailure).BackoffLimit(3).Obj())
	old := runningPods(ctx, t, c, ns, "bw", 2)
	annotatePod(ctx, t, c, ns, "bw-worker-0", simExitCode, "1")
	first := waitReplaced(ctx, t, c, ns, "bw", old, []string{"bw-master-0", "bw-worker-0"}, 2, true)
	waitCounts(ctx, t, c, ns, "bw", 1, 0, 1, map[string]int32{"master": 1, "worker": 1})
	old = runningPods(ctx, t, c, ns, "bw", 2)
	failed := time.Now()
	annotatePod(ctx, t, c, ns, "bw-worker-0", simExitCode, "1")
	w := waitingIs(ctx, t, c, ns, "bw", batch.ReasonRestarting, "after the first waits")
	if !strings.Contains(w.Message, "bw-worker-0 exited with code 1") {
		t.Errorf("Waiting message %q: want it to name the pod that failed and how", w.Message)
	}
	second := waitReplaced(ctx, t, c, ns, "bw", old, []string{"bw-master-0", "bw-worker-0"}, 2, true)
	waited := time.Since(failed)
	// Note: the pod's end is written in whole seconds, so the back-off may end up to 1 s before
	// the wall time it is counted from here.
	if waited < render.RestartBackoffBase-time.Second {
		t.Errorf("the second restart ran %s after the failure; want its back-off, %s, first", waited, render.RestartBackoffBase)
	}
	waitCounts(ctx, t, c, ns, "bw", 2, 0, 2, map[string]int32{"master": 2, "worker": 2})
	t.Logf("first restart: new gang running in %s; second: %s after the failure (%s from when the Waiting condition said so)", first, waited, second)
}

// intoASecondBackoff creates job (a master and a worker, OnFailure, backoffLimit 5), fails its
// worker once (the gang restarts at once, counted) and again, and returns once the job says the
// second restart waits for its back-off; old are the pods of the second run.
func intoASecondBackoff(ctx context.Context, t *testing.T, c client.Client, ns, job string) map[string]types.UID {
	t.Helper()
	create(ctx, t, c, ns, pyTorchJob(job).Workers(1, sim("", "")).Policy(batch.RestartPolicyOnFailure).BackoffLimit(5).Obj())
	gang := []string{job + "-master-0", job + "-worker-0"}
	old := runningPods(ctx, t, c, ns, job, 2)
	annotatePod(ctx, t, c, ns, job+"-worker-0", simExitCode, "1")
	waitReplaced(ctx, t, c, ns, job, old, gang, 2, true)
	waitCounts(ctx, t, c, ns, job, 1, 0, 1, map[string]int32{"master": 1, "worker": 1})
	old = runningPods(ctx, t, c, ns, job, 2)
	annotatePod(ctx, t, c, ns, job+"-worker-0", simExitCode, "1")
	waitingIs(ctx, t, c, ns, job, batch.ReasonRestarting, "after the first waits")
	return old
}

// heldFailuresCount: a failure held in back-off is counted once whatever ends the hold. The
// operator learns of a hand deletion from its watch (the pod's last state, exit code included) and
// of a pause from the job: render tests cannot show that the count reaches the status.
func heldFailuresCount(ctx context.Context, t *testing.T, c client.Client, ns string) {
	// The second failure waits 10 s; kubectl delete pod on it ends the wait and counts it.
	old := intoASecondBackoff(ctx, t, c, ns, "hc")
	deleted := time.Now()
	if err := c.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hc-worker-0"}}); err != nil {
		t.Fatalf("deleting hc-worker-0: %v", err)
	}
	waitReplaced(ctx, t, c, ns, "hc", old, []string{"hc-master-0", "hc-worker-0"}, 2, true)
	if took := time.Since(deleted); took >= render.RestartBackoffBase {
		t.Errorf("the gang ran again %s after the failed pod was deleted; want at once, before its back-off (%s) ended", took, render.RestartBackoffBase)
	}
	waitCounts(ctx, t, c, ns, "hc", 2, 0, 2, map[string]int32{"master": 2, "worker": 2})

	// The third waits 20 s; a pause during it deletes the failed pod and counts the failure.
	annotatePod(ctx, t, c, ns, "hc-worker-0", simExitCode, "1")
	waitingIs(ctx, t, c, ns, "hc", batch.ReasonRestarting, "after the first waits")
	patchJob(ctx, t, c, ns, "hc", `{"spec":{"runMode":{"pause":{"enabled":true}}}}`)
	st := waitPhase(ctx, t, c, ns, "hc", batch.JobPaused)
	if st.BackoffCount != 3 || st.DisruptionCount != 0 {
		t.Errorf("paused during the third failure's back-off: backoffCount %d, disruptionCount %d; want 3 and 0", st.BackoffCount, st.DisruptionCount)
	}
}

// templateEditEndsTheBackoff: a user who fixes the image of a crash-looping job during a restart's
// back-off gets the fixed pods at once, as the kubelet restarts a container whose spec changed;
// an edit outside the templates keeps the wait (render/backoff.go).
func templateEditEndsTheBackoff(ctx context.Context, t *testing.T, c client.Client, ns string) {
	// The second failure waits 10 s from its end.
	old := intoASecondBackoff(ctx, t, c, ns, "be")
	var failed corev1.Pod
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "be-worker-0"}, &failed); err != nil {
		t.Fatal(err)
	}
	var ended time.Time
	for _, s := range failed.Status.ContainerStatuses {
		if s.State.Terminated != nil {
			ended = s.State.Terminated.FinishedAt.Time
		}
	}
	if ended.IsZero() {
		t.Fatalf("be-worker-0 is held but its container has no finishedAt: %+v", failed.Status)
	}
	backoffEnds := ended.Add(render.RestartBackoffBase)

	// runPolicy is no template: the wait goes on.
	patchJob(ctx, t, c, ns, "be", `{"spec":{"runPolicy":{"backoffLimit":6}}}`)
	for until := time.Now().Add(2 * time.Second); time.Now().Before(until); time.Sleep(200 * time.Millisecond) {
		for _, p := range jobPods(ctx, t, c, ns, "be") {
			if p.UID != old[p.Name] || p.DeletionTimestamp != nil {
				t.Fatalf("an edit of runPolicy ended the back-off: %s is %s (deleting %v) at %s, the wait ends at %s", p.Name, p.UID, p.DeletionTimestamp != nil, time.Now().UTC().Format(time.StampMilli), backoffEnds.UTC().Format(time.StampMilli))
			}
		}
	}

	// The fixed image ends it.
	job := &batch.PyTorchTrainingJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "be"}}
	fix := `[{"op":"test","path":"/spec/replicaSpecs/1/type","value":"worker"},` +
		`{"op":"replace","path":"/spec/replicaSpecs/1/template/spec/containers/0/image","value":"example.invalid/train:2"}]`
	if err := c.Patch(ctx, job, client.RawPatch(types.JSONPatchType, []byte(fix))); err != nil {
		t.Fatalf("fixing be's worker image: %v", err)
	}
	edited := time.Now()
	want := render.TemplateHash(&job.Spec.ReplicaSpecs[1].Template)
	var fresh corev1.Pod
	eventually(t, 30*time.Second, "a new be-worker-0 is created", func() (bool, string) {
		for _, p := range jobPods(ctx, t, c, ns, "be") {
			if p.Name == "be-worker-0" && p.UID != old[p.Name] {
				fresh = p
				return true, ""
			}
		}
		return false, "not yet"
	})
	took := time.Since(edited)
	if took > 3*time.Second || !time.Now().Before(backoffEnds) {
		t.Errorf("the new be-worker-0 was created %s after the edit, %s before the back-off's end; want within 3 s and before it", took, time.Until(backoffEnds))
	}
	if got := fresh.Spec.Containers[0].Image; got != "example.invalid/train:2" {
		t.Errorf("the new be-worker-0 runs %s; want the edited template's example.invalid/train:2", got)
	}
	if got := fresh.Annotations[batch.AnnotationTemplateHash]; got != want {
		t.Errorf("the new be-worker-0 says it was made from template %q; want the edited one's %q", got, want)
	}
	waitReplaced(ctx, t, c, ns, "be", old, []string{"be-master-0", "be-worker-0"}, 2, true)
	waitCounts(ctx, t, c, ns, "be", 2, 0, 2, map[string]int32{"master": 2, "worker": 2})
	t.Logf("the fixed be-worker-0 was created %s after the edit, %s before the back-off would have ended", took.Round(time.Millisecond), backoffEnds.Sub(edited.Add(took)).Round(time.Millisecond))
}
