//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
)

// assessFn is one assessment of a feature against the shared operator, in a namespace of its own.
type assessFn func(ctx context.Context, t *testing.T, c client.Client, ns string)

// operatorFeature is a feature named for what it shows, with one assessment.
func operatorFeature(name, prefix string, assess assessFn) features.Feature {
	return features.New(name).
		WithLabel("area", "operator").
		Assess(name, func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			c, ns := namespaced(ctx, t, cfg, prefix)
			assess(ctx, t, c, ns)
			return ctx
		}).
		Feature()
}

// TestJobLifecycle: jobs of both kinds run to their outcome through the operator, as SPEC §3-§8
// and §12 say. The features run in parallel, each in its own namespace.
func TestJobLifecycle(t *testing.T) {
	testenv.TestInParallel(t,
		operatorFeature("PyTorch master and workers run to Succeeded and the running workers are cleaned up", "pt-ok", pyTorchSucceeds),
		operatorFeature("TensorFlow chief, ps and workers run to Succeeded", "tf-ok", tensorFlowSucceeds),
		operatorFeature("restartPolicy Never: a worker exiting 1 fails the job", "never-1", failsOnExit(batch.RestartPolicyNever, batch.ReasonFailed)),
		operatorFeature("restartPolicy ExitCode: a worker exiting 1 fails the job", "exitcode-1", failsOnExit(batch.RestartPolicyExitCode, batch.ReasonFailed)),
		operatorFeature("restartPolicy ExitCode: a worker exiting 137 comes back with its gang, backoffCount 1, then the job succeeds", "exitcode-137", exitCode137Restarts),
		operatorFeature("backoffLimit used up fails the job with BackoffLimitExceeded", "backoff", backoffLimitExceeded),
		operatorFeature("activeDeadlineSeconds fails the job with DeadlineExceeded within 2 s of the deadline", "deadline", deadlineExceeded),
		operatorFeature("cleanUpPolicy All, Unfinished and None keep the pods each says", "cleanup", cleanUpPolicies),
		operatorFeature("a pod deleted by hand comes back with its gang, counted as a disruption, not in backoffCount", "deleted-pod", podDeletedByHand),
		operatorFeature("a deleted job takes its pods and its Service with it, the operator deleting its pods", "job-deleted", jobDeleted),
		operatorFeature("a job deleted with --cascade=orphan leaves its pods", "job-orphaned", jobDeletedOrphaning),
	)
}

func pyTorchSucceeds(ctx context.Context, t *testing.T, c client.Client, ns string) {
	create(ctx, t, c, ns, pyTorchJob("ok").Master(sim("3s", "0")).Workers(3, sim("", "")).Obj())
	st := waitPhase(ctx, t, c, ns, "ok", batch.JobRunning)
	if st.StartTime == nil {
		t.Error("a Running job has no startTime")
	}
	st = waitPhase(ctx, t, c, ns, "ok", batch.JobSucceeded)
	if st.CompletionTime == nil || condition(st, batch.ConditionCompleted) != "True/Succeeded" {
		t.Errorf("Succeeded without completionTime or Completed condition: %+v", st)
	}
	eventually(t, 30*time.Second, "only the master's pod is left, Succeeded", func() (bool, string) {
		pods := podsByName(ctx, t, c, ns, "ok")
		return len(pods) == 1 && pods["ok-master-0"] == "Succeeded", keys(pods)
	})
	eventually(t, 10*time.Second, "the aggregate counts the master succeeded and 3 workers deleted", func() (bool, string) {
		st, _ := jobStatus(ctx, c, ns, "ok")
		a := st.Aggregate
		return a.Succeeded == 1 && a.Deleted == 3 && a.Running == 0, fmt.Sprintf("%+v", a)
	})
}

func tensorFlowSucceeds(ctx context.Context, t *testing.T, c client.Client, ns string) {
	create(ctx, t, c, ns, tensorFlowJob("tf").
		Replica(batch.TensorFlowReplicaChief, 1, sim("3s", "0")).
		Replica(batch.TensorFlowReplicaPS, 2, sim("", "")).
		Replica(batch.TensorFlowReplicaWorker, 2, sim("", "")).Obj())
	st := waitPhase(ctx, t, c, ns, "tf", batch.JobRunning)
	if st.DesiredReplicas != 5 {
		t.Errorf("desiredReplicas = %d; want 5", st.DesiredReplicas)
	}
	waitPhase(ctx, t, c, ns, "tf", batch.JobSucceeded)
	eventually(t, 30*time.Second, "only the chief's pod is left", func() (bool, string) {
		pods := podsByName(ctx, t, c, ns, "tf")
		return len(pods) == 1 && pods["tf-chief-0"] == "Succeeded", keys(pods)
	})
}

func failsOnExit(policy batch.RestartPolicy, reason string) assessFn {
	return func(ctx context.Context, t *testing.T, c client.Client, ns string) {
		ann := sim("1s", "1")
		ann[simLastLog] = "Traceback (most recent call last):\n  File \"train.py\", line 3, in <module>\nValueError: lr must be positive\n"
		create(ctx, t, c, ns, pyTorchJob("fail").Workers(2, ann).WorkerPolicy(policy).Obj())
		st := waitPhase(ctx, t, c, ns, "fail", batch.JobFailed)
		if got := condition(st, batch.ConditionFailed); got != "True/"+reason {
			t.Errorf("Failed condition = %q; want True/%s", got, reason)
		}
		// The failed worker's log is quoted: its container's terminationMessagePolicy is
		// FallbackToLogsOnError, so its terminated message holds the log's tail.
		const quoted = `exited with code 1 after logging "ValueError: lr must be positive"`
		if m := meta.FindStatusCondition(st.Conditions, batch.ConditionFailed); m == nil || !strings.Contains(m.Message, quoted) {
			t.Errorf("Failed condition %+v; want its message to say %s", m, quoted)
		}
		if st.BackoffCount != 0 || st.CompletionTime == nil {
			t.Errorf("backoffCount %d, completionTime %v; want 0 and set", st.BackoffCount, st.CompletionTime)
		}
		eventually(t, 30*time.Second, "no pod is left running", func() (bool, string) {
			pods := podsByName(ctx, t, c, ns, "fail")
			for _, phase := range pods {
				if phase == "Running" || phase == "Pending" || phase == "Terminating" {
					return false, keys(pods)
				}
			}
			return true, ""
		})
	}
}

func exitCode137Restarts(ctx context.Context, t *testing.T, c client.Client, ns string) {
	create(ctx, t, c, ns, pyTorchJob("rs").Workers(1, sim("", "")).WorkerPolicy(batch.RestartPolicyExitCode).Obj())
	var first types.UID
	eventually(t, 60*time.Second, "rs-worker-0 runs", func() (bool, string) {
		p, ok := getPod(ctx, c, ns, "rs-worker-0")
		first = p.UID
		return ok && p.Status.Phase == corev1.PodRunning, string(p.Status.Phase)
	})
	annotatePod(ctx, t, c, ns, "rs-worker-0", simExitCode, "137")
	eventually(t, 60*time.Second, "rs-worker-0 comes back as a new pod and runs", func() (bool, string) {
		p, ok := getPod(ctx, c, ns, "rs-worker-0")
		return ok && p.UID != first && p.Status.Phase == corev1.PodRunning, fmt.Sprintf("uid %s phase %s", p.UID, p.Status.Phase)
	})
	eventually(t, 10*time.Second, "backoffCount 1 and the worker task's restartCount 1", func() (bool, string) {
		st, _ := jobStatus(ctx, c, ns, "rs")
		restarts := int32(-1)
		for _, task := range st.Tasks {
			if task.Type == "worker" {
				restarts = task.RestartCount
			}
		}
		return st.BackoffCount == 1 && restarts == 1 && st.Phase == batch.JobRunning,
			fmt.Sprintf("phase %s backoffCount %d worker restartCount %d", st.Phase, st.BackoffCount, restarts)
	})
	annotatePod(ctx, t, c, ns, "rs-master-0", simExitCode, "0")
	st := waitPhase(ctx, t, c, ns, "rs", batch.JobSucceeded)
	if st.BackoffCount != 1 {
		t.Errorf("backoffCount = %d after success; want 1", st.BackoffCount)
	}
}

func backoffLimitExceeded(ctx context.Context, t *testing.T, c client.Client, ns string) {
	// Every worker pod exits 1 a second after it starts: restarted once, then the limit is used up.
	create(ctx, t, c, ns, pyTorchJob("bo").Workers(1, sim("1s", "1")).WorkerPolicy(batch.RestartPolicyOnFailure).BackoffLimit(1).Obj())
	st := waitPhase(ctx, t, c, ns, "bo", batch.JobFailed)
	if got := condition(st, batch.ConditionFailed); got != "True/"+batch.ReasonBackoffLimitExceeded {
		t.Errorf("Failed condition = %q; want True/%s", got, batch.ReasonBackoffLimitExceeded)
	}
	if st.BackoffCount != 1 {
		t.Errorf("backoffCount = %d; want 1 (the limit)", st.BackoffCount)
	}
}

func deadlineExceeded(ctx context.Context, t *testing.T, c client.Client, ns string) {
	const seconds = 5
	create(ctx, t, c, ns, pyTorchJob("dl").Workers(1, sim("", "")).Deadline(seconds).Obj())
	// Nothing happens to the job once it runs: only the operator's own timer can end it.
	var st batch.TrainingJobStatus
	var failedAt time.Time
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		st, _ = jobStatus(ctx, c, ns, "dl")
		if st.Phase == batch.JobFailed {
			failedAt = time.Now()
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if failedAt.IsZero() || st.StartTime == nil {
		t.Fatalf("the job did not fail by its deadline: %+v", st)
	}
	due := st.StartTime.Add(seconds * time.Second)
	late := failedAt.Sub(due)
	t.Logf("startTime %s, deadline %s, Failed seen %s: %.2f s after the deadline", st.StartTime.Format(time.RFC3339), due.Format(time.RFC3339), failedAt.Format("15:04:05.000"), late.Seconds())
	if got := condition(st, batch.ConditionFailed); got != "True/"+batch.ReasonDeadlineExceeded {
		t.Errorf("Failed condition = %q; want True/%s", got, batch.ReasonDeadlineExceeded)
	}
	if late > 2*time.Second {
		t.Errorf("Failed %.2f s after the deadline; want within 2 s", late.Seconds())
	}
}

func cleanUpPolicies(ctx context.Context, t *testing.T, c client.Client, ns string) {
	want := map[batch.CleanUpPolicy]map[string]string{
		batch.CleanUpPolicyAll:        {},
		batch.CleanUpPolicyUnfinished: {"-master-0": "Succeeded"},
		batch.CleanUpPolicyNone:       {"-master-0": "Succeeded", "-worker-0": "Running", "-worker-1": "Running"},
	}
	for policy := range want {
		name := map[batch.CleanUpPolicy]string{batch.CleanUpPolicyAll: "all", batch.CleanUpPolicyUnfinished: "unfinished", batch.CleanUpPolicyNone: "none"}[policy]
		create(ctx, t, c, ns, pyTorchJob(name).Master(sim("2s", "0")).Workers(2, sim("", "")).CleanUp(policy).Obj())
	}
	for policy, left := range want {
		name := map[batch.CleanUpPolicy]string{batch.CleanUpPolicyAll: "all", batch.CleanUpPolicyUnfinished: "unfinished", batch.CleanUpPolicyNone: "none"}[policy]
		waitPhase(ctx, t, c, ns, name, batch.JobSucceeded)
		expect := map[string]string{}
		for suffix, phase := range left {
			expect[name+suffix] = phase
		}
		eventually(t, 30*time.Second, fmt.Sprintf("cleanUpPolicy %s leaves %v", policy, expect), func() (bool, string) {
			pods := podsByName(ctx, t, c, ns, name)
			return equalMaps(pods, expect), keys(pods)
		})
	}
	// None keeps every pod: still there a moment later.
	time.Sleep(2 * time.Second)
	if pods := podsByName(ctx, t, c, ns, "none"); len(pods) != 3 {
		t.Errorf("cleanUpPolicy None: pods %v; want all 3 kept", keys(pods))
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// podDeletedByHand: a pod deleted by someone else is a disruption (SPEC §7): restarted as the
// restart policy says, counted in disruptionCount, never in backoffCount. Note: until issue 16
// the pod came back alone whatever the policy; now OnFailure restarts plain PyTorch's gang (a
// lone new rank could not join its peers), and Never would fail the job (never-worker-deleted-by-
// someone-else-fails-job), as an eviction does.
func podDeletedByHand(ctx context.Context, t *testing.T, c client.Client, ns string) {
	create(ctx, t, c, ns, pyTorchJob("dp").Workers(1, sim("", "")).Policy(batch.RestartPolicyOnFailure).Obj())
	old := runningPods(ctx, t, c, ns, "dp", 2)
	p, _ := getPod(ctx, c, ns, "dp-worker-0")
	if err := c.Delete(ctx, &p); err != nil {
		t.Fatal(err)
	}
	waitReplaced(ctx, t, c, ns, "dp", old, []string{"dp-master-0", "dp-worker-0"}, 2, true)
	eventually(t, 10*time.Second, "the job runs both pods again, backoffCount 0 and disruptionCount 1 (a pod deleted by someone else is a disruption)", func() (bool, string) {
		st, _ := jobStatus(ctx, c, ns, "dp")
		return st.Phase == batch.JobRunning && st.Aggregate.Running == 2 && st.BackoffCount == 0 && st.DisruptionCount == 1,
			fmt.Sprintf("phase %s running %d backoffCount %d disruptionCount %d", st.Phase, st.Aggregate.Running, st.BackoffCount, st.DisruptionCount)
	})
}

func jobDeleted(ctx context.Context, t *testing.T, c client.Client, ns string) {
	job := createWithPods(ctx, t, c, ns, "gone", 39)
	var svc corev1.Service
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "gone"}, &svc); err != nil {
		t.Fatalf("the job's Service: %v", err)
	}
	if err := c.Delete(ctx, job); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "the job's pods and Service are gone", func() (bool, string) {
		pods := podsByName(ctx, t, c, ns, "gone")
		err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "gone"}, &corev1.Service{})
		return len(pods) == 0 && err != nil, fmt.Sprintf("pods %v, service lookup: %v", keys(pods), err)
	})
	// The operator deletes them itself, at once, beside the garbage collector (20 a second).
	if auditLog == "" {
		return
	}
	deleted := firstDeletions(t, ns, "pods")
	t.Logf("pods deleted (the first deletion of each, by user agent): %v", deleted)
	if deleted["trainyard"] == 0 {
		t.Errorf("the operator deleted none of the deleted job's 40 pods (deletions by user agent: %v)", deleted)
	}
}

// createWithPods creates a PyTorch job of a master and workers that run until deleted, and waits
// until all its pods exist.
func createWithPods(ctx context.Context, t *testing.T, c client.Client, ns, name string, workers int32) client.Object {
	t.Helper()
	job := pyTorchJob(name).Workers(workers, sim("", "")).Obj()
	create(ctx, t, c, ns, job)
	want := int(workers) + 1
	eventually(t, 90*time.Second, fmt.Sprintf("the job's %d pods exist", want), func() (bool, string) {
		n := len(jobPods(ctx, t, c, ns, name))
		return n == want, fmt.Sprintf("%d pods", n)
	})
	return job
}

// firstDeletions counts, by the deleter's user agent (its first word), the objects of resource in
// namespace ns whose deletion the audit log shows accepted first (a graceful deletion's later
// ones, as the kubelet's, are not counted).
func firstDeletions(t *testing.T, ns, resource string) map[string]int {
	t.Helper()
	first := map[string]string{}
	readAudit(t, func(e auditEntry) {
		r := e.ObjectRef
		if e.Verb != "delete" || r.Resource != resource || r.Subresource != "" || r.Namespace != ns || e.ResponseStatus.Code != http.StatusOK {
			return
		}
		if _, ok := first[r.Name]; !ok {
			first[r.Name], _, _ = strings.Cut(e.UserAgent, "/")
		}
	})
	out := map[string]int{}
	for _, agent := range first {
		out[agent]++
	}
	return out
}

// A job deleted with kubectl delete --cascade=orphan leaves its pods: the garbage collector
// removes the job's ownerReference from each before the job goes, and the operator then deletes
// none of them.
func jobDeletedOrphaning(ctx context.Context, t *testing.T, c client.Client, ns string) {
	job := createWithPods(ctx, t, c, ns, "kept", 3)
	if err := c.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationOrphan)); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "the job is gone", func() (bool, string) {
		err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "kept"}, &batch.PyTorchTrainingJob{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	// The operator acts on the job's delete event at once; three seconds cover it on a busy host.
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		pods := jobPods(ctx, t, c, ns, "kept")
		if len(pods) != 4 {
			t.Fatalf("%d of the orphaned job's 4 pods left", len(pods))
		}
		for _, p := range pods {
			if p.DeletionTimestamp != nil || len(p.OwnerReferences) != 0 {
				t.Fatalf("pod %s: deletionTimestamp %v, ownerReferences %v; want neither (orphaned)", p.Name, p.DeletionTimestamp, p.OwnerReferences)
			}
		}
	}
	if auditLog != "" {
		if deleted := firstDeletions(t, ns, "pods"); len(deleted) != 0 {
			t.Errorf("pods of the orphaned job deleted: %v", deleted)
		}
	}
}
