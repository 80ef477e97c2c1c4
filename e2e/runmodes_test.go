//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
	"github.com/trainyard/trainyard/controller"
)

// TestRunModes: debug, pause and resume, elastic scaling and gang scheduling through the operator
// (SPEC §9-§10). The features run in parallel, each in its own namespace.
func TestRunModes(t *testing.T) {
	testenv.TestInParallel(t,
		operatorFeature("pause deletes the pods and holds no GPU; resume brings them back with the resumeSpecs args", "pause", pauseAndResume),
		operatorFeature("debug mode runs the debug command, a pod's exit neither fails nor restarts the job, and switching debug off replaces the pods with the real command", "debug", debugMode),
		operatorFeature("kubectl scale changes an elastic job's pods, removing the highest indices, new pods get the torchrun flags of the new size, a remaining worker failing right after a scale-down restarts the gang as a disruption (backoffCount 0), and past maxReplicas is refused", "elastic", elasticScale),
		operatorFeature("a HorizontalPodAutoscaler scales an elastic job through its scale subresource", "hpa", hpaScales),
		operatorFeature("a Volcano job's PodGroup exists before any of its pods, which name it", "gang", volcanoPodGroup),
		operatorFeature("a coscheduling gang job: PodGroup first; pause deletes the pods gracefully and the PodGroup; resume brings both back, Resuming then Running", "cosched", coschedulingPauseResume),
	)
}

func patchJob(ctx context.Context, t *testing.T, c client.Client, ns, name, patch string) {
	t.Helper()
	job := &batch.PyTorchTrainingJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if err := c.Patch(ctx, job, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatalf("patching %s with %s: %v", name, patch, err)
	}
}

func pauseAndResume(ctx context.Context, t *testing.T, c client.Client, ns string) {
	job := pyTorchJob("pr").Workers(2, sim("", "")).Obj().(*batch.PyTorchTrainingJob)
	for i := range job.Spec.ReplicaSpecs {
		job.Spec.ReplicaSpecs[i].Template.Spec.Containers[0].Resources.Limits = corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}
	}
	job.Spec.RunMode = &batch.RunMode{Pause: &batch.PauseMode{Enabled: ptr(false), ResumeSpecs: []batch.ResumeSpec{{Type: "worker", Args: []string{"--resume-from=checkpoint"}}}}}
	create(ctx, t, c, ns, job)
	before := waitPhase(ctx, t, c, ns, "pr", batch.JobRunning)
	patchJob(ctx, t, c, ns, "pr", `{"spec":{"runMode":{"pause":{"enabled":true}}}}`)
	st := waitPhase(ctx, t, c, ns, "pr", batch.JobPaused)
	if pods := podsByName(ctx, t, c, ns, "pr"); len(pods) != 0 {
		t.Errorf("a Paused job has pods (and so GPUs): %v", keys(pods))
	}
	if got := condition(st, batch.ConditionPaused); got != "True/"+batch.ReasonPaused {
		t.Errorf("Paused condition = %q; want True/%s", got, batch.ReasonPaused)
	}
	time.Sleep(1100 * time.Millisecond) // startTime has second precision: the resumed one must be later
	patchJob(ctx, t, c, ns, "pr", `{"spec":{"runMode":{"pause":{"enabled":false}}}}`)
	st = waitPhase(ctx, t, c, ns, "pr", batch.JobRunning)
	eventually(t, 30*time.Second, "the resumed workers run with the resumeSpecs args", func() (bool, string) {
		p, ok := getPod(ctx, c, ns, "pr-worker-1")
		if !ok {
			return false, "no pr-worker-1"
		}
		return slices.Equal(p.Spec.Containers[0].Args, []string{"--resume-from=checkpoint"}), fmt.Sprint(p.Spec.Containers[0].Args)
	})
	if got := condition(st, batch.ConditionPaused); got != "False/"+batch.ReasonResuming {
		t.Errorf("Paused condition after resume = %q; want False/%s", got, batch.ReasonResuming)
	}
	if st.StartTime == nil || before.StartTime == nil || !st.StartTime.After(before.StartTime.Time) {
		t.Errorf("startTime %v after resume, %v before; the deadline clock restarts on resume", st.StartTime, before.StartTime)
	}
}

func debugMode(ctx context.Context, t *testing.T, c client.Client, ns string) {
	job := pyTorchJob("dbg").Workers(1, sim("", "")).WorkerPolicy(batch.RestartPolicyOnFailure).Obj().(*batch.PyTorchTrainingJob)
	job.Spec.ReplicaSpecs[1].Template.Spec.Containers[0].Args = []string{"train.py"}
	job.Spec.RunMode = &batch.RunMode{Debug: &batch.DebugMode{Enabled: ptr(true)}}
	create(ctx, t, c, ns, job)
	waitPhase(ctx, t, c, ns, "dbg", batch.JobRunning)
	p := waitPodRunning(ctx, t, c, ns, "dbg-worker-0")
	if got := p.Spec.Containers[0].Command; !slices.Equal(got, []string{"sleep", "inf"}) || len(p.Spec.Containers[0].Args) != 0 {
		t.Errorf("debug pod runs %v %v; want [sleep inf] and no args", got, p.Spec.Containers[0].Args)
	}
	uid := p.UID
	annotatePod(ctx, t, c, ns, "dbg-worker-0", simExitCode, "1")
	eventually(t, 30*time.Second, "dbg-worker-0 has exited", func() (bool, string) {
		p, _ := getPod(ctx, c, ns, "dbg-worker-0")
		return p.Status.Phase == corev1.PodFailed, string(p.Status.Phase)
	})
	time.Sleep(3 * time.Second) // time for a (wrong) restart or failure to show
	st, _ := jobStatus(ctx, c, ns, "dbg")
	p, _ = getPod(ctx, c, ns, "dbg-worker-0")
	if st.Phase != batch.JobRunning || st.BackoffCount != 0 || p.UID != uid {
		t.Errorf("after a debug pod exited 1: phase %s, backoffCount %d, pod replaced %v; want Running, 0, not replaced", st.Phase, st.BackoffCount, p.UID != uid)
	}

	// Debug off: every pod is replaced by one running the template's command, and the debug
	// pod's exit 1 counts for nothing.
	masterUID := func() types.UID { p, _ := getPod(ctx, c, ns, "dbg-master-0"); return p.UID }()
	patchJob(ctx, t, c, ns, "dbg", `{"spec":{"runMode":{"debug":{"enabled":false}}}}`)
	eventually(t, 30*time.Second, "both pods are replaced by ones running the real command", func() (bool, string) {
		w, okW := getPod(ctx, c, ns, "dbg-worker-0")
		m, okM := getPod(ctx, c, ns, "dbg-master-0")
		if !okW || !okM || w.UID == uid || m.UID == masterUID || w.DeletionTimestamp != nil || m.DeletionTimestamp != nil {
			return false, "old pods still there"
		}
		wc := w.Spec.Containers[0]
		return slices.Equal(wc.Args, []string{"train.py"}) && len(wc.Command) == 0 && w.Annotations[batch.AnnotationRunMode] == "Immediate",
			fmt.Sprintf("worker runs %v %v, run mode %q", wc.Command, wc.Args, w.Annotations[batch.AnnotationRunMode])
	})
	st = waitPhase(ctx, t, c, ns, "dbg", batch.JobRunning)
	if st.BackoffCount != 0 || condition(st, batch.ConditionFailed) == "True/"+batch.ReasonFailed {
		t.Errorf("after debug off: backoffCount %d, conditions %+v; the debug pod's exit must not count", st.BackoffCount, st.Conditions)
	}
}

func elasticScale(ctx context.Context, t *testing.T, c client.Client, ns string) {
	job := pyTorchJob("el").Workers(2, sim("", "")).Policy(batch.RestartPolicyOnFailure).Obj().(*batch.PyTorchTrainingJob)
	// Note: with maxRestarts a worker's own restart scope is the replica (the agents take a new one
	// in), so the scale-down's gang restart below is the window's doing.
	job.Spec.TorchrunConfig = &batch.TorchrunConfig{Enabled: ptr(true), MaxRestarts: ptr(int32(3))}
	job.Spec.Elastic = &batch.ElasticConfig{Enabled: ptr(true), MinReplicas: ptr(int32(2)), MaxReplicas: ptr(int32(6)), ExpectedReplicas: ptr(int32(3))}
	create(ctx, t, c, ns, job)
	waitPhase(ctx, t, c, ns, "el", batch.JobRunning)
	scale := func(n int, wantErr string) time.Time {
		start := time.Now()
		out, err := kubectlNS(ctx, t, ns, "", "scale", "ptj/el", fmt.Sprintf("--replicas=%d", n))
		if wantErr != "" {
			if err == nil || !strings.Contains(out, wantErr) {
				t.Errorf("kubectl scale --replicas=%d: %v %s; want a refusal saying %q", n, err, out, wantErr)
			}
			return start
		}
		if err != nil {
			t.Fatal(err)
		}
		return start
	}
	start := scale(5, "")
	eventually(t, 30*time.Second, "5 pods after scaling to 5", func() (bool, string) {
		pods := podsByName(ctx, t, c, ns, "el")
		return len(pods) == 5, keys(pods)
	})
	t.Logf("kubectl scale to 5: all 5 pods existed %.2f s after the command started", time.Since(start).Seconds())
	// The new pods' torchrun flags and world size are those of 5 pods (elastic: --nnodes=min:max).
	if p, ok := getPod(ctx, c, ns, "el-worker-3"); !ok {
		t.Error("no el-worker-3 after scaling to 5")
	} else if got, args := envOf(p, "WORLD_SIZE"), p.Spec.Containers[0].Args; got != "5" || !slices.Contains(args, "--nnodes=2:6") || !slices.Contains(args, "--nproc_per_node=1") {
		t.Errorf("el-worker-3: WORLD_SIZE %q, args %v; want 5, --nnodes=2:6 and --nproc_per_node=1", got, args)
	}
	scale(2, "")
	eventually(t, 30*time.Second, "the master and worker 0 are left after scaling to 2", func() (bool, string) {
		pods := podsByName(ctx, t, c, ns, "el")
		return len(pods) == 2 && pods["el-master-0"] != "" && pods["el-worker-0"] != "", keys(pods)
	})
	// The remaining workers fail on the peer taken away (torch 2.4-2.7's agents even end): that
	// is the scale-down's doing, restarted as a disruption, not counted toward backoffLimit.
	eventually(t, 10*time.Second, "status.lastScaleDownTime says when", func() (bool, string) {
		st, _ := jobStatus(ctx, c, ns, "el")
		return st.LastScaleDownTime != nil, "unset"
	})
	master, _ := getPod(ctx, c, ns, "el-master-0")
	annotatePods(ctx, t, c, ns, "el-worker-0", map[string]string{simRunDuration: "100ms", simExitCode: "1"})
	eventually(t, 30*time.Second, "worker-0's exit 1 after the scale-down restarts it as a disruption", func() (bool, string) {
		st, _ := jobStatus(ctx, c, ns, "el")
		return st.DisruptionCount == 1 && st.BackoffCount == 0, fmt.Sprintf("disruptionCount %d, backoffCount %d, phase %s", st.DisruptionCount, st.BackoffCount, st.Phase)
	})
	// With the gang: the rendezvous the master's agent keeps is closed (torch 2.4-2.7), so a
	// worker replaced alone would be refused.
	eventually(t, 30*time.Second, "the master is replaced with the worker", func() (bool, string) {
		p, ok := getPod(ctx, c, ns, "el-master-0")
		return ok && p.UID != master.UID, fmt.Sprintf("el-master-0 exists %v, uid %s (was %s)", ok, p.UID, master.UID)
	})
	scale(7, "maxReplicas")
}

func volcanoPodGroup(ctx context.Context, t *testing.T, c client.Client, ns string) {
	job := pyTorchJob("vc").Workers(3, sim("", "")).Obj().(*batch.PyTorchTrainingJob)
	job.Spec.Scheduler = &batch.SchedulePolicy{Volcano: &batch.VolcanoScheduler{Queue: "research"}}
	create(ctx, t, c, ns, job)
	// No Volcano scheduler runs here: the pods are created and stay Pending, unscheduled.
	eventually(t, 30*time.Second, "4 pods exist", func() (bool, string) {
		pods := podsByName(ctx, t, c, ns, "vc")
		return len(pods) == 4, keys(pods)
	})
	pg := &unstructured.Unstructured{}
	pg.SetAPIVersion("scheduling.volcano.sh/v1beta1")
	pg.SetKind("PodGroup")
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "vc"}, pg); err != nil {
		t.Fatalf("the job's PodGroup: %v", err)
	}
	if mm, _, _ := unstructured.NestedInt64(pg.Object, "spec", "minMember"); mm != 4 {
		t.Errorf("PodGroup minMember = %d; want 4", mm)
	}
	if q, _, _ := unstructured.NestedString(pg.Object, "spec", "queue"); q != "research" {
		t.Errorf("PodGroup queue = %q; want research", q)
	}
	for _, p := range jobPods(ctx, t, c, ns, "vc") {
		if p.CreationTimestamp.Before(ptr(pg.GetCreationTimestamp())) {
			t.Errorf("%s was created before its PodGroup", p.Name)
		}
		if p.Annotations[batch.AnnotationVolcanoGroupName] != "vc" || p.Spec.SchedulerName != batch.VolcanoSchedulerName {
			t.Errorf("%s: group annotation %q, schedulerName %q; want vc and %s", p.Name, p.Annotations[batch.AnnotationVolcanoGroupName], p.Spec.SchedulerName, batch.VolcanoSchedulerName)
		}
	}
}

// hpaScales: an HPA whose minReplicas is above the job's expectedReplicas scales the job up
// through the scale subresource (the HPA controller acts on minReplicas without metrics, which
// this cluster has none of), and the operator creates the pods.
func hpaScales(ctx context.Context, t *testing.T, c client.Client, ns string) {
	job := pyTorchJob("hpa").Workers(2, sim("", "")).Obj().(*batch.PyTorchTrainingJob)
	// Note: with maxRestarts a worker's own restart scope is the replica (the agents take a new one
	// in), so the scale-down's gang restart below is the window's doing.
	job.Spec.TorchrunConfig = &batch.TorchrunConfig{Enabled: ptr(true), MaxRestarts: ptr(int32(3))}
	job.Spec.Elastic = &batch.ElasticConfig{Enabled: ptr(true), MinReplicas: ptr(int32(2)), MaxReplicas: ptr(int32(6)), ExpectedReplicas: ptr(int32(3))}
	create(ctx, t, c, ns, job)
	st := waitPhase(ctx, t, c, ns, "hpa", batch.JobRunning)
	if st.Selector == "" {
		t.Errorf("status.selector is empty; the HPA needs it")
	}
	hpa := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hpa"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: batch.GroupVersion.String(), Kind: "PyTorchTrainingJob", Name: "hpa"},
			MinReplicas:    ptr(int32(5)),
			MaxReplicas:    6,
		},
	}
	start := time.Now()
	if err := c.Create(ctx, hpa); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "the HPA raised expectedReplicas to 5 and 5 pods exist", func() (bool, string) {
		var j batch.PyTorchTrainingJob
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "hpa"}, &j); err != nil {
			return false, err.Error()
		}
		pods := podsByName(ctx, t, c, ns, "hpa")
		return deref(j.Spec.Elastic.ExpectedReplicas) == 5 && len(pods) == 5, fmt.Sprintf("expectedReplicas %d, pods %s", deref(j.Spec.Elastic.ExpectedReplicas), keys(pods))
	})
	t.Logf("HPA created to 5 pods: %.2f s; the HPA controller looks every 1 s here, but kube-controller-manager learns of a CRD kind only when its discovery cache refreshes (every 30 s), and the CRDs were installed at suite start", time.Since(start).Seconds())
	var evs corev1.EventList
	_ = c.List(ctx, &evs, client.InNamespace(ns), client.MatchingFields{"involvedObject.name": "hpa", "involvedObject.kind": "HorizontalPodAutoscaler"})
	for _, e := range evs.Items {
		t.Logf("HPA event: %s %s x%d: %s", e.Type, e.Reason, e.Count, e.Message)
	}
	eventually(t, 30*time.Second, "the job's status counts 5 running", func() (bool, string) {
		st, _ := jobStatus(ctx, c, ns, "hpa")
		return st.Aggregate.Running == 5, fmt.Sprintf("%+v", st.Aggregate)
	})
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// envOf is the value of the training container's environment variable name, or "".
func envOf(p corev1.Pod, name string) string {
	for _, e := range p.Spec.Containers[0].Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

// coschedulingPauseResume: a scheduler-plugins gang job, its pods scheduled by the real
// coscheduling scheduler (scheduler_plugins_test.go). Its PodGroup exists before the pods; pausing
// deletes the pods with their grace period, then the PodGroup; resuming creates the PodGroup again,
// then the pods, which the scheduler binds as a gang again, and the job is Resuming until they run.
func coschedulingPauseResume(ctx context.Context, t *testing.T, c client.Client, ns string) {
	requireCoscheduler(t)
	job := pyTorchJob("cs").Workers(2, sim("", "")).Obj().(*batch.PyTorchTrainingJob)
	for i := range job.Spec.ReplicaSpecs {
		spec := &job.Spec.ReplicaSpecs[i].Template
		spec.Annotations[simStartDelay] = "3s" // long enough to see Resuming
		spec.Spec.TerminationGracePeriodSeconds = ptr(int64(30))
	}
	job.Spec.Scheduler = &batch.SchedulePolicy{Coscheduling: &batch.CoschedulingScheduler{}}
	job.Spec.RunMode = &batch.RunMode{Pause: &batch.PauseMode{Enabled: ptr(false)}}
	create(ctx, t, c, ns, job)
	pg := func() (*unstructured.Unstructured, error) {
		pg := &unstructured.Unstructured{}
		pg.SetAPIVersion("scheduling.x-k8s.io/v1alpha1")
		pg.SetKind("PodGroup")
		return pg, c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "cs"}, pg)
	}
	podGroupFirst := func() {
		t.Helper()
		g, err := pg()
		if err != nil {
			t.Fatalf("the job's PodGroup: %v", err)
		}
		if mm, _, _ := unstructured.NestedInt64(g.Object, "spec", "minMember"); mm != 3 {
			t.Errorf("PodGroup minMember = %d; want 3", mm)
		}
		for _, p := range jobPods(ctx, t, c, ns, "cs") {
			if p.CreationTimestamp.Before(ptr(g.GetCreationTimestamp())) {
				t.Errorf("%s was created before its PodGroup", p.Name)
			}
			if p.Labels[batch.LabelCoschedulingPodGroup] != "cs" || p.Spec.SchedulerName != batch.CoschedulingSchedulerName {
				t.Errorf("%s: label %s = %q, schedulerName %q; want cs and %s", p.Name, batch.LabelCoschedulingPodGroup, p.Labels[batch.LabelCoschedulingPodGroup], p.Spec.SchedulerName, batch.CoschedulingSchedulerName)
			}
		}
	}
	waitPhase(ctx, t, c, ns, "cs", batch.JobRunning)
	podGroupFirst()

	graces := watchDeletions(ctx, t, ns)
	patchJob(ctx, t, c, ns, "cs", `{"spec":{"runMode":{"pause":{"enabled":true}}}}`)
	waitPhase(ctx, t, c, ns, "cs", batch.JobPaused)
	eventually(t, 30*time.Second, "the PodGroup is deleted", func() (bool, string) {
		_, err := pg()
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	got := graces()
	for _, name := range []string{"cs-master-0", "cs-worker-0", "cs-worker-1"} {
		if g, ok := got[name]; !ok || g != 30 {
			t.Errorf("%s was deleted with grace period %d (seen %v); want its 30 s", name, g, ok)
		}
	}

	patchJob(ctx, t, c, ns, "cs", `{"spec":{"runMode":{"pause":{"enabled":false}}}}`)
	st := waitPhase(ctx, t, c, ns, "cs", batch.JobResuming)
	if st.Aggregate.Running == 3 {
		t.Errorf("Resuming with all 3 replicas running: %+v", st.Aggregate)
	}
	waitPhase(ctx, t, c, ns, "cs", batch.JobRunning)
	podGroupFirst()
}

// watchClient is a client of the test cluster that can watch.
func watchClient(t *testing.T) client.WithWatch {
	t.Helper()
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfigPath)
	if err != nil {
		t.Fatal(err)
	}
	wc, err := client.NewWithWatch(rc, client.Options{Scheme: controller.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return wc
}

// watchDeletions watches the namespace's pods and returns a function that reports, for each pod
// seen being deleted gracefully, its deletionGracePeriodSeconds (0 for a pod that went at once).
func watchDeletions(ctx context.Context, t *testing.T, ns string) func() map[string]int64 {
	t.Helper()
	w, err := watchClient(t).Watch(ctx, &corev1.PodList{}, client.InNamespace(ns))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	seen := map[string]int64{}
	go func() {
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			// The first event that shows the deletion carries the grace period asked for; the
			// fake kubelet then removes the pod with grace 0.
			mu.Lock()
			if _, ok := seen[p.Name]; !ok && (p.DeletionTimestamp != nil || ev.Type == watch.Deleted) {
				seen[p.Name] = deref(p.DeletionGracePeriodSeconds)
			}
			mu.Unlock()
		}
	}()
	t.Cleanup(w.Stop)
	return func() map[string]int64 {
		mu.Lock()
		defer mu.Unlock()
		return maps.Clone(seen)
	}
}

// kubectlNS runs the pinned kubectl in namespace ns of the test cluster.
func kubectlNS(ctx context.Context, t *testing.T, ns, stdin string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.CommandContext(ctx, kubectlPath, append([]string{"--kubeconfig", kubeconfigPath, "-n", ns}, args...)...)
	cmd.Env = append(os.Environ(), "KUBECACHEDIR="+filepath.Join(repoRoot, ".devcluster", "e2e", "cache"))
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestTensorBoard: a job's TensorBoard Deployment and Service are created, status.tensorboard
// turns ready when the Deployment is available, the TensorBoard outlives the job's completion,
// goes when tensorboardSpec is removed and comes back when it is written again, and goes with the
// job.
func TestTensorBoard(t *testing.T) {
	testenv.Test(t, operatorFeature("a TensorBoard is created, reported ready, outlives the job's success, follows tensorboardSpec's removal and return, and goes with the job", "tb", tensorBoardLifecycle))
}

func tensorBoardLifecycle(ctx context.Context, t *testing.T, c client.Client, ns string) {
	// The logs' claim, bound to a volume that nothing mounts (no container runs here).
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: ns + "-logs"},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/nonexistent/" + ns}},
			ClaimRef:                      &corev1.ObjectReference{Namespace: ns, Name: "logs"},
		},
	}
	if err := c.Create(ctx, pv); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), pv) })
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "logs"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			StorageClassName: ptr(""),
			VolumeName:       pv.Name,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	if err := c.Create(ctx, pvc); err != nil {
		t.Fatal(err)
	}
	job := pyTorchJob("tb").Master(sim("4s", "0")).Obj().(*batch.PyTorchTrainingJob)
	job.Spec.TensorboardSpec = &batch.TensorBoardSpec{Image: "example.invalid/tensorboard:1", LogDir: &batch.LogDir{PVC: []batch.PVCLogDir{{Name: "logs"}}}}
	create(ctx, t, c, ns, job)
	eventually(t, 60*time.Second, "status.tensorboard is ready", func() (bool, string) {
		st, _ := jobStatus(ctx, c, ns, "tb")
		if st.Tensorboard == nil {
			return false, "no status.tensorboard"
		}
		return st.Tensorboard.Ready && st.Tensorboard.Dependent != nil, fmt.Sprintf("%+v", *st.Tensorboard)
	})
	waitPhase(ctx, t, c, ns, "tb", batch.JobSucceeded)
	time.Sleep(2 * time.Second)
	for _, obj := range []client.Object{&appsv1.Deployment{}, &corev1.Service{}} {
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "tb-tensorboard"}, obj); err != nil {
			t.Errorf("after the job succeeded, its TensorBoard %T: %v", obj, err)
		}
	}
	// tensorboardSpec removed: the TensorBoard goes; written again: it comes back.
	tbGone := func() (bool, string) {
		errD := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "tb-tensorboard"}, &appsv1.Deployment{})
		errS := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "tb-tensorboard"}, &corev1.Service{})
		return apierrors.IsNotFound(errD) && apierrors.IsNotFound(errS), fmt.Sprintf("deployment: %v, service: %v", errD, errS)
	}
	spec := job.Spec.TensorboardSpec
	setTensorBoard := func(tb *batch.TensorBoardSpec) {
		t.Helper()
		var live batch.PyTorchTrainingJob
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "tb"}, &live); err != nil {
			t.Fatal(err)
		}
		live.Spec.TensorboardSpec = tb
		if err := c.Update(ctx, &live); err != nil {
			t.Fatal(err)
		}
	}
	setTensorBoard(nil)
	eventually(t, 30*time.Second, "the TensorBoard goes when tensorboardSpec is removed", tbGone)
	setTensorBoard(spec)
	eventually(t, 30*time.Second, "the TensorBoard comes back when tensorboardSpec is written again", func() (bool, string) {
		gone, why := tbGone()
		return !gone, why
	})
	if err := c.Delete(ctx, job); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "the TensorBoard goes with the job", func() (bool, string) {
		errD := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "tb-tensorboard"}, &appsv1.Deployment{})
		errS := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "tb-tensorboard"}, &corev1.Service{})
		return errD != nil && errS != nil, fmt.Sprintf("deployment: %v, service: %v", errD, errS)
	})
}

// TestGangCRDInstalledLater: a job whose PodGroup kind is not installed creates no pod and says
// which CRD is missing; installing the CRD later lets it go on with no edit to the job. It runs
// alone: it removes the T9k PodGroup stand-in CRD for a while.
func TestGangCRDInstalledLater(t *testing.T) {
	const crd = "podgroups.scheduler.tensorstack.dev"
	reinstall := func(ctx context.Context, t *testing.T) {
		if out, err := kubectlNS(ctx, t, "default", "", "apply", "--server-side", "-f", podGroupCRDs); err != nil {
			t.Fatalf("installing the PodGroup CRDs: %v\n%s", err, out)
		}
		eventually(t, 60*time.Second, crd+" is Established", func() (bool, string) {
			out, err := kubectlNS(ctx, t, "default", "", "get", "crd", crd, "-o", `jsonpath={.status.conditions[?(@.type=="Established")].status}`)
			return err == nil && strings.TrimSpace(out) == "True", out
		})
	}
	testenv.Test(t, operatorFeature("a gang job waits, naming the missing PodGroup CRD, and goes on once it is installed", "gang-later",
		func(ctx context.Context, t *testing.T, c client.Client, ns string) {
			if out, err := kubectlNS(ctx, t, "default", "", "delete", "crd", crd, "--wait=true"); err != nil {
				t.Fatalf("removing %s: %v\n%s", crd, err, out)
			}
			t.Cleanup(func() { reinstall(context.Background(), t) })
			job := pyTorchJob("gl").Workers(3, sim("", "")).Obj().(*batch.PyTorchTrainingJob)
			job.Spec.Scheduler = &batch.SchedulePolicy{T9kScheduler: &batch.T9kScheduler{Queue: "default"}}
			create(ctx, t, c, ns, job)
			eventually(t, 30*time.Second, "the job says the PodGroup CRD is missing", func() (bool, string) {
				st, _ := jobStatus(ctx, c, ns, "gl")
				return condition(st, batch.ConditionInitialized) == "False/"+batch.ReasonPodGroupCRDMissing &&
					condition(st, batch.ConditionWaiting) == "True/"+batch.ReasonPodGroupCRDMissing, fmt.Sprintf("%+v", st.Conditions)
			})
			eventually(t, 30*time.Second, "a Warning event names the missing CRD", func() (bool, string) {
				var evs corev1.EventList
				if err := c.List(ctx, &evs, client.InNamespace(ns)); err != nil {
					return false, err.Error()
				}
				var seen []string
				for _, e := range evs.Items {
					if e.Type == corev1.EventTypeWarning && e.Reason == batch.ReasonPodGroupCRDMissing && strings.Contains(e.Message, crd) {
						return true, ""
					}
					seen = append(seen, e.Reason)
				}
				return false, fmt.Sprint(seen)
			})
			time.Sleep(2 * time.Second)
			if pods := podsByName(ctx, t, c, ns, "gl"); len(pods) != 0 {
				t.Fatalf("pods were created without their PodGroup kind: %v", keys(pods))
			}
			reinstall(ctx, t)
			eventually(t, 60*time.Second, "the PodGroup and the 4 pods exist", func() (bool, string) {
				pg := &unstructured.Unstructured{}
				pg.SetAPIVersion("scheduler.tensorstack.dev/v1beta1")
				pg.SetKind("PodGroup")
				err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "gl"}, pg)
				pods := podsByName(ctx, t, c, ns, "gl")
				return err == nil && len(pods) == 4, fmt.Sprintf("podgroup: %v, pods: %s", err, keys(pods))
			})
		}))
}
