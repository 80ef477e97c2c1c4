//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
	kubeflowv1 "github.com/trainyard/trainyard/apis/kubeflow/v1"
)

// TestGangScheduling: coscheduling gang jobs against the real scheduler-plugins scheduler
// (scheduler_plugins_test.go). Each feature runs in its own namespace on a pool of two KWOK nodes
// of its own (8 GPUs each, labelled and tainted for that feature only), so the capacity it
// reasons about is known whatever the other features run. The features run in parallel. Their job
// names (the PodGroups' names) are unique in the suite: scheduler-plugins' controller (v0.32.7)
// counts the pods of every namespace whose pod-group label has the PodGroup's name (tried: a
// PodGroup with no pod of its own went Running on a pod in another namespace).
func TestGangScheduling(t *testing.T) {
	testenv.TestInParallel(t,
		gangFitsBindsWhole(),
		gangWaitsForCapacity(),
		finishedGangFreesItsClaim(),
		kubeflowGangBindsWhole(),
	)
}

const (
	// poolLabel labels and taints a feature's own nodes; its value is the feature's namespace.
	poolLabel = "e2e.trainyard.dev/gang-pool"
	gpu       = corev1.ResourceName("nvidia.com/gpu")
	poolNodes = 2
	nodeGPUs  = 8
)

// gangFeature is a feature on the real coscheduling scheduler: its setup makes the namespace, the
// node pool and a watch of the pods' binds; its teardown deletes the jobs and checks that their
// pods and PodGroups go with them, before the pool's nodes are deleted.
type gangFeature struct {
	c    client.Client
	ns   string
	pods *podWatch
}

func newGangFeature(name, prefix string) (*gangFeature, *features.FeatureBuilder) {
	g := &gangFeature{}
	f := features.New(name).WithLabel("area", "gang").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			requireCoscheduler(t)
			g.c, g.ns = namespaced(ctx, t, cfg, prefix)
			createPool(ctx, t, g.c, g.ns)
			g.pods = watchPods(ctx, t, g.ns)
			return ctx
		})
	return g, f
}

// teardown deletes the feature's jobs and waits until their pods and PodGroups are gone, so that
// no pod is left on the pool's nodes when they are deleted.
func (g *gangFeature) teardown(f *features.FeatureBuilder) *features.FeatureBuilder {
	return f.Teardown(func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
		for _, kind := range []client.Object{&batch.PyTorchTrainingJob{}, &kubeflowv1.PyTorchJob{}} {
			if err := g.c.DeleteAllOf(ctx, kind, client.InNamespace(g.ns)); err != nil {
				t.Errorf("deleting the jobs (%T): %v", kind, err)
			}
		}
		start := time.Now()
		eventually(t, 60*time.Second, "the jobs' pods and PodGroups are gone", func() (bool, string) {
			var pods corev1.PodList
			pgs := &unstructured.UnstructuredList{}
			pgs.SetAPIVersion("scheduling.x-k8s.io/v1alpha1")
			pgs.SetKind("PodGroupList")
			if err := g.c.List(ctx, &pods, client.InNamespace(g.ns)); err != nil {
				return false, err.Error()
			}
			if err := g.c.List(ctx, pgs, client.InNamespace(g.ns)); err != nil {
				return false, err.Error()
			}
			return len(pods.Items) == 0 && len(pgs.Items) == 0, fmt.Sprintf("%d pods, %d PodGroups", len(pods.Items), len(pgs.Items))
		})
		t.Logf("the jobs' pods and PodGroups were gone %.2f s after the jobs were deleted", time.Since(start).Seconds())
		if auditLog != "" { // the operator and the garbage collector race for so few objects
			t.Logf("deleted first by: PodGroups %v, pods %v", firstDeletions(t, g.ns, "podgroups"), firstDeletions(t, g.ns, "pods"))
		}
		return ctx
	})
}

// gangJob is a coscheduling PyTorchTrainingJob of a master and workers whose pods each ask for
// gpus GPUs and may only run on the pool's nodes.
func gangJob(name, pool string, workers int32, gpus int64, master, worker map[string]string) *batch.PyTorchTrainingJob {
	job := pyTorchJob(name).Master(master).Workers(workers, worker).Obj().(*batch.PyTorchTrainingJob)
	job.Spec.Scheduler = &batch.SchedulePolicy{Coscheduling: &batch.CoschedulingScheduler{}}
	for i := range job.Spec.ReplicaSpecs {
		spec := &job.Spec.ReplicaSpecs[i].Template.Spec
		spec.Containers[0].Resources.Limits = corev1.ResourceList{gpu: *resource.NewQuantity(gpus, resource.DecimalSI)}
		spec.NodeSelector = map[string]string{poolLabel: pool}
		spec.Tolerations = []corev1.Toleration{{Key: poolLabel, Operator: corev1.TolerationOpEqual, Value: pool, Effect: corev1.TaintEffectNoSchedule}}
	}
	return job
}

// gangFitsBindsWhole: a gang that fits the pool exactly (4 pods of 4 GPUs on 2 nodes of 8) is
// bound whole by the real scheduler, which holds its pods at Permit until every one has a node;
// scheduler-plugins' controller then reports its PodGroup Running.
func gangFitsBindsWhole() features.Feature {
	g, f := newGangFeature("a coscheduling job that fits binds whole: the real scheduler holds its pods at Permit until all have a node, and the PodGroup goes Running", "gang-fits")
	f = f.Assess("scheduler-plugins' profile runs Coscheduling at queueSort, preFilter, postFilter, reserve and permit", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
		plugins := profilePlugins(t)
		for _, point := range []string{"QueueSort", "PreFilter", "PostFilter", "Reserve", "Permit"} {
			if !slices.Contains(plugins[point], "Coscheduling") {
				t.Errorf("%s plugins are %v; want Coscheduling among them", point, plugins[point])
			}
		}
		if got := plugins["QueueSort"]; len(got) != 1 {
			t.Errorf("QueueSort plugins are %v; want Coscheduling alone", got)
		}
		return ctx
	})
	f = f.Assess("the 4 pods are bound together by scheduler-plugins-scheduler, after waiting at Permit", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
		start := time.Now()
		create(ctx, t, g.c, g.ns, gangJob("gang-fits", g.ns, 3, 4, sim("", ""), sim("", "")))
		bound := g.pods.waitBound(t, "gang-fits-", 4)
		t.Logf("job created to all 4 pods bound: %.2f s; first to last bind %s", lastBind(bound).Sub(start).Seconds(), spread(bound))
		boundByCoscheduler(ctx, t, g, "gang-fits", 4)
		waits := schedulerLogLines(t, "Pod is waiting to be scheduled to node", `pod="`+g.ns+"/")
		if len(waits) == 0 {
			t.Errorf("no pod of %s waited at Permit for its gang (scheduler log %s)", g.ns, coscheduler.schedulerLog)
		}
		siblings := 0
		for _, msg := range schedulingFailures(ctx, t, g.c, g.ns, "gang-fits-") {
			if strings.Contains(msg, "cannot find enough sibling pods") {
				siblings++
			}
		}
		t.Logf("%d of the 4 pods waited at Permit for the rest of the gang; %d FailedScheduling events for pods whose siblings did not exist yet (the operator creates one pod, then the rest)", len(waits), siblings)
		return ctx
	})
	f = f.Assess("the job runs and scheduler-plugins' controller reports its PodGroup Running", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
		waitPhase(ctx, t, g.c, g.ns, "gang-fits", batch.JobRunning)
		waitPodGroupPhase(ctx, t, g.c, g.ns, "gang-fits", "Running", 4)
		return ctx
	})
	return g.teardown(f).Feature()
}

// gangWaitsForCapacity: with a small gang holding half the pool, a gang that needs more than the
// rest binds no pod at all (the pods that would fit are rejected with the gang rather than bound);
// once the small job succeeds and its pods go, the waiting gang binds whole.
func gangWaitsForCapacity() features.Feature {
	g, f := newGangFeature("a gang that cannot fit binds no pod while a smaller gang runs, and binds whole when the smaller one finishes", "gang-waits")
	f = f.Assess("the small gang (2 pods of 4 GPUs) binds whole and runs", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
		create(ctx, t, g.c, g.ns, gangJob("gang-small", g.ns, 1, 4, sim("", ""), sim("", "")))
		g.pods.waitBound(t, "gang-small-", 2)
		waitPhase(ctx, t, g.c, g.ns, "gang-small", batch.JobRunning)
		return ctx
	})
	f = f.Assess("the big gang (3 pods of 4 GPUs, 8 GPUs free) binds no pod while the small one runs", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
		create(ctx, t, g.c, g.ns, gangJob("gang-big", g.ns, 2, 4, sim("", ""), sim("", "")))
		// The first refusals may be for siblings not created yet; this one is for want of GPUs.
		eventually(t, 60*time.Second, "scheduler-plugins-scheduler has tried the whole big gang and refused it for want of GPUs", func() (bool, string) {
			failures := schedulingFailures(ctx, t, g.c, g.ns, "gang-big-")
			for _, msg := range failures {
				if strings.Contains(msg, "Insufficient nvidia.com/gpu") {
					return true, ""
				}
			}
			return false, fmt.Sprint(failures)
		})
		// Some more attempts (the retry backoff is 1 s to 10 s): none may bind a pod.
		time.Sleep(10 * time.Second)
		if bound := g.pods.of("gang-big-"); len(bound) != 0 {
			t.Errorf("pods of the gang that cannot fit were bound: %v", bound)
		}
		st, _ := jobStatus(ctx, g.c, g.ns, "gang-big")
		if st.Phase == batch.JobRunning {
			t.Errorf("the big job is Running with 8 GPUs free for its 12")
		}
		if st, _ := jobStatus(ctx, g.c, g.ns, "gang-small"); st.Phase != batch.JobRunning {
			t.Errorf("the small job is %s; want Running", st.Phase)
		}
		pg, _ := getPodGroup(ctx, g.c, g.ns, "gang-big")
		phase, _, _ := unstructured.NestedString(pg.Object, "status", "phase")
		failures := schedulingFailures(ctx, t, g.c, g.ns, "gang-big-")
		t.Logf("after %d FailedScheduling events, no pod of the big gang is bound; its job is %s, its PodGroup %q; last: %s", len(failures), st.Phase, phase, failures[len(failures)-1])
		return ctx
	})
	f = f.Assess("when the small job succeeds, the big gang binds whole", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
		start := time.Now()
		annotatePod(ctx, t, g.c, g.ns, "gang-small-master-0", simExitCode, "0")
		var smallDone, smallPGGone, bigRunning time.Time
		eventually(t, 60*time.Second, "the small job is Succeeded, its PodGroup gone, the big gang bound and its job Running", func() (bool, string) {
			now := time.Now()
			if st, _ := jobStatus(ctx, g.c, g.ns, "gang-small"); smallDone.IsZero() && st.Phase == batch.JobSucceeded {
				smallDone = now
			}
			if _, err := getPodGroup(ctx, g.c, g.ns, "gang-small"); smallPGGone.IsZero() && apierrors.IsNotFound(err) {
				smallPGGone = now
			}
			if st, _ := jobStatus(ctx, g.c, g.ns, "gang-big"); bigRunning.IsZero() && st.Phase == batch.JobRunning {
				bigRunning = now
			}
			bound := g.pods.of("gang-big-")
			return !smallDone.IsZero() && !smallPGGone.IsZero() && !bigRunning.IsZero() && len(bound) == 3,
				fmt.Sprintf("small done %v, its PodGroup gone %v, big bound %d, big Running %v", !smallDone.IsZero(), !smallPGGone.IsZero(), len(bound), !bigRunning.IsZero())
		})
		bound := g.pods.of("gang-big-")
		freed := g.pods.endedAt("gang-small-master-0")
		t.Logf("after the small master's exit annotation: master Succeeded %.2f s, small job Succeeded %.2f s, its PodGroup gone %.2f s; "+
			"the big gang's 3 pods bound %.2f s, %.3f s after the master's GPUs were free (first to last bind %s); big job Running %.2f s (its pods start after 0.5 s)",
			freed.Sub(start).Seconds(), smallDone.Sub(start).Seconds(), smallPGGone.Sub(start).Seconds(),
			lastBind(bound).Sub(start).Seconds(), lastBind(bound).Sub(freed).Seconds(), spread(bound), bigRunning.Sub(start).Seconds())
		boundByCoscheduler(ctx, t, g, "gang-big", 3)
		return ctx
	})
	return g.teardown(f).Feature()
}

// finishedGangFreesItsClaim: a gang job that uses the whole pool succeeds with cleanUpPolicy None,
// which keeps every pod; its PodGroup is deleted as soon as it is Succeeded, and a next gang that
// needs the whole pool again binds whole.
func finishedGangFreesItsClaim() features.Feature {
	g, f := newGangFeature("a finished gang's claim is gone: its PodGroup is deleted at once though cleanUpPolicy None keeps its pods, and the next gang binds whole", "gang-done")
	f = f.Assess("a whole-pool gang succeeds with cleanUpPolicy None: its pods are kept, its PodGroup is deleted", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
		done := gangJob("gang-done", g.ns, 3, 4, sim("3s", "0"), sim("2s", "0"))
		done.Spec.RunPolicy = &batch.RunPolicy{CleanUpPolicy: batch.CleanUpPolicyNone}
		create(ctx, t, g.c, g.ns, done)
		g.pods.waitBound(t, "gang-done-", 4)
		var succeededAt, goneAt time.Time
		eventually(t, 60*time.Second, "the job is Succeeded and its PodGroup is gone", func() (bool, string) {
			st, _ := jobStatus(ctx, g.c, g.ns, "gang-done")
			if succeededAt.IsZero() && st.Phase == batch.JobSucceeded {
				succeededAt = time.Now()
			}
			if _, err := getPodGroup(ctx, g.c, g.ns, "gang-done"); goneAt.IsZero() && apierrors.IsNotFound(err) {
				goneAt = time.Now()
			}
			return !succeededAt.IsZero() && !goneAt.IsZero(), fmt.Sprintf("phase %s", st.Phase)
		})
		t.Logf("PodGroup gone %.2f s after the job was seen Succeeded (polled every 0.1 s)", goneAt.Sub(succeededAt).Seconds())
		pods := podsByName(ctx, t, g.c, g.ns, "gang-done")
		if len(pods) != 4 {
			t.Errorf("cleanUpPolicy None kept %d pods (%s); want all 4", len(pods), keys(pods))
		}
		return ctx
	})
	f = f.Assess("the next gang, needing the whole pool again, binds whole", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
		start := time.Now()
		create(ctx, t, g.c, g.ns, gangJob("gang-next", g.ns, 3, 4, sim("", ""), sim("", "")))
		bound := g.pods.waitBound(t, "gang-next-", 4)
		waitPhase(ctx, t, g.c, g.ns, "gang-next", batch.JobRunning)
		t.Logf("next gang created to all 4 pods bound: %.2f s (first to last bind %s)", lastBind(bound).Sub(start).Seconds(), spread(bound))
		boundByCoscheduler(ctx, t, g, "gang-next", 4)
		return ctx
	})
	return g.teardown(f).Feature()
}

// kubeflowGangBindsWhole: a Kubeflow PyTorchJob whose templates name scheduler-plugins-scheduler
// gets a scheduling.x-k8s.io PodGroup from runPolicy.schedulingPolicy, and the real scheduler binds
// its pods whole.
func kubeflowGangBindsWhole() features.Feature {
	g, f := newGangFeature("a Kubeflow PyTorchJob with schedulingPolicy is bound whole by the coscheduling scheduler", "gang-kf")
	f = f.Assess("its PodGroup carries minAvailable and scheduleTimeoutSeconds, and its 3 pods bind together", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
		tmpl := fmt.Sprintf(`
      template:
        metadata:
          annotations: {%s}
        spec:
          schedulerName: %s
          nodeSelector: {%s: %s}
          tolerations: [{key: %s, operator: Equal, value: %s, effect: NoSchedule}]
          terminationGracePeriodSeconds: 0
          containers: [{name: pytorch, image: example.invalid/train:1, resources: {limits: {nvidia.com/gpu: 4}}}]`,
			simRunsForever, batch.CoschedulingSchedulerName, poolLabel, g.ns, poolLabel, g.ns)
		applyYAML(ctx, t, g.ns, `apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: kfgang}
spec:
  runPolicy:
    schedulingPolicy: {minAvailable: 3, scheduleTimeoutSeconds: 30}
  pytorchReplicaSpecs:
    Master:
      replicas: 1`+tmpl+`
    Worker:
      replicas: 2`+tmpl+"\n")
		bound := g.pods.waitBound(t, "kfgang-", 3)
		t.Logf("first to last bind %s", spread(bound))
		pg, err := getPodGroup(ctx, g.c, g.ns, "kfgang")
		if err != nil {
			t.Fatalf("the job's PodGroup: %v", err)
		}
		mm, _, _ := unstructured.NestedInt64(pg.Object, "spec", "minMember")
		timeout, _, _ := unstructured.NestedInt64(pg.Object, "spec", "scheduleTimeoutSeconds")
		if mm != 3 || timeout != 30 {
			t.Errorf("PodGroup minMember %d, scheduleTimeoutSeconds %d; want 3 and 30", mm, timeout)
		}
		for _, name := range []string{"kfgang-master-0", "kfgang-worker-0", "kfgang-worker-1"} {
			boundByCoschedulerPod(ctx, t, g, name)
		}
		waitKubeflow(ctx, t, g.c, g.ns, "kfgang", kubeflowv1.JobRunning)
		waitPodGroupPhase(ctx, t, g.c, g.ns, "kfgang", "Running", 3)
		return ctx
	})
	return g.teardown(f).Feature()
}

// boundByCoscheduler checks that the job's n pods name scheduler-plugins-scheduler, run on the
// feature's pool and were bound by that scheduler (its log says so).
func boundByCoscheduler(ctx context.Context, t *testing.T, g *gangFeature, job string, n int) {
	t.Helper()
	pods := jobPods(ctx, t, g.c, g.ns, job)
	if len(pods) != n {
		t.Errorf("%s has %d pods; want %d", job, len(pods), n)
	}
	for _, p := range pods {
		boundByCoschedulerPod(ctx, t, g, p.Name)
	}
}

func boundByCoschedulerPod(ctx context.Context, t *testing.T, g *gangFeature, name string) {
	t.Helper()
	p, ok := getPod(ctx, g.c, g.ns, name)
	if !ok {
		t.Errorf("no pod %s", name)
		return
	}
	if p.Spec.SchedulerName != batch.CoschedulingSchedulerName || !strings.HasPrefix(p.Spec.NodeName, g.ns+"-") {
		t.Errorf("%s: schedulerName %q, node %q; want %s and a node of pool %s", name, p.Spec.SchedulerName, p.Spec.NodeName, batch.CoschedulingSchedulerName, g.ns)
	}
	if len(schedulerLogLines(t, "Successfully bound pod to node", fmt.Sprintf("pod=%q", g.ns+"/"+name))) == 0 {
		t.Errorf("scheduler-plugins' log has no bind of %s/%s", g.ns, name)
	}
}

// profilePlugins reads, from the scheduler's log, the plugins its profile enabled at each
// extension point (the scheduler logs them once as it starts).
func profilePlugins(t *testing.T) map[string][]string {
	t.Helper()
	lines := schedulerLogLines(t, "the scheduler starts to work with those plugins")
	if len(lines) != 1 {
		t.Fatalf("%d lines list the profile's plugins in %s; want 1", len(lines), coscheduler.schedulerLog)
	}
	raw := lines[0][strings.Index(lines[0], "Plugins=")+len("Plugins="):]
	var points map[string]struct{ Enabled []struct{ Name string } }
	if err := json.Unmarshal([]byte(raw), &points); err != nil {
		t.Fatalf("the profile's plugins: %v: %s", err, raw)
	}
	out := map[string][]string{}
	for point, set := range points {
		for _, p := range set.Enabled {
			out[point] = append(out[point], p.Name)
		}
	}
	return out
}

func getPodGroup(ctx context.Context, c client.Client, ns, name string) (*unstructured.Unstructured, error) {
	pg := &unstructured.Unstructured{}
	pg.SetAPIVersion("scheduling.x-k8s.io/v1alpha1")
	pg.SetKind("PodGroup")
	return pg, c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, pg)
}

// waitPodGroupPhase waits for the phase scheduler-plugins' controller writes in the PodGroup's
// status, with running pods counted.
func waitPodGroupPhase(ctx context.Context, t *testing.T, c client.Client, ns, name, phase string, running int64) {
	t.Helper()
	eventually(t, 30*time.Second, fmt.Sprintf("PodGroup %s is %s with %d running", name, phase, running), func() (bool, string) {
		pg, err := getPodGroup(ctx, c, ns, name)
		if err != nil {
			return false, err.Error()
		}
		got, _, _ := unstructured.NestedString(pg.Object, "status", "phase")
		n, _, _ := unstructured.NestedInt64(pg.Object, "status", "running")
		return got == phase && n == running, fmt.Sprintf("status %v", pg.Object["status"])
	})
}

// schedulingFailures are the messages of the FailedScheduling events scheduler-plugins-scheduler
// reported for the namespace's pods whose names start with prefix.
func schedulingFailures(ctx context.Context, t *testing.T, c client.Client, ns, prefix string) []string {
	t.Helper()
	var evs corev1.EventList
	if err := c.List(ctx, &evs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range evs.Items {
		from := e.ReportingController
		if from == "" {
			from = e.Source.Component
		}
		if e.Reason == "FailedScheduling" && from == batch.CoschedulingSchedulerName && strings.HasPrefix(e.InvolvedObject.Name, prefix) {
			out = append(out, e.InvolvedObject.Name+": "+e.Message)
		}
	}
	return out
}

// podWatch records, for each pod of a namespace, when the test first saw it bound to a node and
// when it first saw it ended (Succeeded, Failed or deleted): the times the features measure.
type podWatch struct {
	mu           sync.Mutex
	bound, ended map[string]time.Time
}

func watchPods(ctx context.Context, t *testing.T, ns string) *podWatch {
	t.Helper()
	w, err := watchClient(t).Watch(ctx, &corev1.PodList{}, client.InNamespace(ns))
	if err != nil {
		t.Fatal(err)
	}
	pw := &podWatch{bound: map[string]time.Time{}, ended: map[string]time.Time{}}
	go func() {
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			now := time.Now()
			pw.mu.Lock()
			if _, seen := pw.bound[p.Name]; !seen && p.Spec.NodeName != "" {
				pw.bound[p.Name] = now
			}
			end := ev.Type == watch.Deleted || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
			if _, seen := pw.ended[p.Name]; !seen && end {
				pw.ended[p.Name] = now
			}
			pw.mu.Unlock()
		}
	}()
	t.Cleanup(w.Stop)
	return pw
}

// of is when each pod whose name starts with prefix was first seen bound.
func (w *podWatch) of(prefix string) map[string]time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]time.Time{}
	for name, at := range w.bound {
		if strings.HasPrefix(name, prefix) {
			out[name] = at
		}
	}
	return out
}

// endedAt is when the pod was first seen ended; zero if not yet.
func (w *podWatch) endedAt(name string) time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ended[name]
}

// waitBound waits until n pods whose names start with prefix have been bound.
func (w *podWatch) waitBound(t *testing.T, prefix string, n int) map[string]time.Time {
	t.Helper()
	var bound map[string]time.Time
	eventually(t, 60*time.Second, fmt.Sprintf("%d pods %s* are bound", n, prefix), func() (bool, string) {
		bound = w.of(prefix)
		return len(bound) == n, fmt.Sprintf("%d bound", len(bound))
	})
	return bound
}

func lastBind(bound map[string]time.Time) time.Time {
	var last time.Time
	for _, at := range bound {
		if at.After(last) {
			last = at
		}
	}
	return last
}

// spread is the time between the first and the last bind, as seen by the watch.
func spread(bound map[string]time.Time) string {
	times := make([]time.Time, 0, len(bound))
	for _, at := range bound {
		times = append(times, at)
	}
	sort.Slice(times, func(i, j int) bool { return times[i].Before(times[j]) })
	if len(times) == 0 {
		return "-"
	}
	return fmt.Sprintf("%.3f s", times[len(times)-1].Sub(times[0]).Seconds())
}

// poolSeq numbers the pool nodes of a run, for their addresses and pod CIDRs.
var poolSeq atomic.Int32

// createPool creates the feature's own KWOK nodes, named after it, labelled and tainted with
// poolLabel=<ns> so that only its jobs use them, and waits until KWOK reports them Ready. They are
// deleted when the feature ends.
func createPool(ctx context.Context, t *testing.T, c client.Client, ns string) {
	t.Helper()
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("32"),
		corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
		gpu:                   *resource.NewQuantity(nodeGPUs, resource.DecimalSI),
	}
	var names []string
	for i := range poolNodes {
		seq := poolSeq.Add(1)
		name := fmt.Sprintf("%s-%d", ns, i)
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{
				Name:        name,
				Annotations: map[string]string{"node.alpha.kubernetes.io/ttl": "0", "kwok.x-k8s.io/node": "fake"},
				Labels: map[string]string{
					managedLabel: "true", "type": "kwok", poolLabel: ns,
					"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
				},
			},
			Spec: corev1.NodeSpec{
				PodCIDR:  fmt.Sprintf("127.3.%d.0/24", seq),
				PodCIDRs: []string{fmt.Sprintf("127.3.%d.0/24", seq)},
				Taints:   []corev1.Taint{{Key: poolLabel, Value: ns, Effect: corev1.TaintEffectNoSchedule}},
			},
			Status: corev1.NodeStatus{
				Capacity:    capacity,
				Allocatable: capacity,
				Addresses: []corev1.NodeAddress{
					{Type: corev1.NodeInternalIP, Address: fmt.Sprintf("127.1.200.%d", seq)},
					{Type: corev1.NodeHostName, Address: name},
				},
				NodeInfo: corev1.NodeSystemInfo{Architecture: "amd64", OperatingSystem: "linux"},
			},
		}
		if err := c.Create(ctx, node); err != nil {
			t.Fatalf("creating pool node %s: %v", name, err)
		}
		t.Cleanup(func() { _ = c.Delete(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}) })
		names = append(names, name)
	}
	start := time.Now()
	defer func() {
		t.Logf("pool %s: %d nodes Ready %.2f s after creation", ns, poolNodes, time.Since(start).Seconds())
	}()
	eventually(t, 60*time.Second, "the pool's nodes are Ready", func() (bool, string) {
		for _, name := range names {
			var n corev1.Node
			if err := c.Get(ctx, types.NamespacedName{Name: name}, &n); err != nil {
				return false, err.Error()
			}
			ready := false
			for _, cond := range n.Status.Conditions {
				ready = ready || (cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue)
			}
			if !ready {
				return false, name + " not Ready"
			}
		}
		return true, ""
	})
}
