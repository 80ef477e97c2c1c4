//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
)

// TestRunModes: debug, pause and resume, elastic scaling and gang scheduling through the operator
// (SPEC §9-§10). The features run in parallel, each in its own namespace.
func TestRunModes(t *testing.T) {
	testenv.TestInParallel(t,
		operatorFeature("pause deletes the pods and holds no GPU; resume brings them back with the resumeSpecs args", "pause", pauseAndResume),
		operatorFeature("debug mode runs the debug command, and a pod's exit neither fails nor restarts the job", "debug", debugMode),
		operatorFeature("kubectl scale changes an elastic job's pods, removing the highest indices, and is refused past maxReplicas", "elastic", elasticScale),
		operatorFeature("a Volcano job's PodGroup exists before any of its pods, which name it", "gang", volcanoPodGroup),
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
	p, _ := getPod(ctx, c, ns, "dbg-worker-0")
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
}

func elasticScale(ctx context.Context, t *testing.T, c client.Client, ns string) {
	job := pyTorchJob("el").Workers(2, sim("", "")).Obj().(*batch.PyTorchTrainingJob)
	job.Spec.TorchrunConfig = &batch.TorchrunConfig{Enabled: ptr(true)}
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
	scale(2, "")
	eventually(t, 30*time.Second, "the master and worker 0 are left after scaling to 2", func() (bool, string) {
		pods := podsByName(ctx, t, c, ns, "el")
		return len(pods) == 2 && pods["el-master-0"] != "" && pods["el-worker-0"] != "", keys(pods)
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
// turns ready when the Deployment is available, the TensorBoard outlives the job's completion and
// goes with the job.
func TestTensorBoard(t *testing.T) {
	testenv.Test(t, operatorFeature("a TensorBoard is created, reported ready, outlives the job's success and goes with the job", "tb", tensorBoardLifecycle))
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
				return condition(st, batch.ConditionInitialized) == "False/"+batch.ReasonPodGroupCRDMissing, fmt.Sprintf("%+v", st.Conditions)
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
