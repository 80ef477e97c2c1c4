package cli

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
	kubeflowv1 "github.com/trainyard/trainyard/apis/kubeflow/v1"
	"github.com/trainyard/trainyard/apis/kueue"
	"github.com/trainyard/trainyard/controller"
	"github.com/trainyard/trainyard/render"
)

// pauseCase runs setPaused on obj (a job of kinds[kind]) in a fake cluster holding objs, and
// returns the message and the job as the cluster has it afterwards.
func pauseCase(t *testing.T, kind int, obj client.Object, pause bool, objs ...client.Object) (string, client.Object, client.Client, error) {
	t.Helper()
	c := fake.NewClientBuilder().WithScheme(controller.Scheme()).WithObjects(append(objs, obj)...).Build()
	s := &session{client: c, namespace: "ns"}
	ctx := context.Background()
	read := kinds[kind].newJob()
	if err := c.Get(ctx, client.ObjectKeyFromObject(obj), read); err != nil {
		t.Fatal(err)
	}
	msg, err := s.setPaused(ctx, &job{info: &kinds[kind], obj: read, model: kinds[kind].model(read)}, pause)
	after := kinds[kind].newJob()
	if err := c.Get(ctx, client.ObjectKeyFromObject(obj), after); err != nil {
		t.Fatal(err)
	}
	return msg, after, c, err
}

func ptj(mode *batch.RunMode, phase batch.JobPhase) *batch.PyTorchTrainingJob {
	j := &batch.PyTorchTrainingJob{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid-p"}}
	j.Spec.RunMode = mode
	j.Status.Phase = phase
	return j
}

func TestPauseT9k(t *testing.T) {
	resume := []batch.ResumeSpec{{Type: "worker", Command: []string{"python", "resume.py"}}}
	msg, after, _, err := pauseCase(t, 0, ptj(&batch.RunMode{Pause: &batch.PauseMode{ResumeSpecs: resume}}, batch.JobRunning), true)
	if err != nil {
		t.Fatal(err)
	}
	p := after.(*batch.PyTorchTrainingJob).Spec.RunMode.Pause
	if p.Enabled == nil || !*p.Enabled || p.Enable != nil {
		t.Errorf("pause: runMode.pause enabled %s, enable %s; want enabled true and no enable", show(p.Enabled), show(p.Enable))
	}
	if len(p.ResumeSpecs) != 1 || p.ResumeSpecs[0].Command[1] != "resume.py" {
		t.Errorf("pause lost the user's resumeSpecs: %+v", p.ResumeSpecs)
	}
	if !strings.Contains(msg, "pytorchtrainingjob/p paused (runMode.pause)") {
		t.Errorf("message: %s", msg)
	}

	// The older spelling written by the user is kept and set alike.
	_, after, _, err = pauseCase(t, 0, ptj(&batch.RunMode{Pause: &batch.PauseMode{Enable: yes()}}, batch.JobPaused), false)
	if err != nil {
		t.Fatal(err)
	}
	p = after.(*batch.PyTorchTrainingJob).Spec.RunMode.Pause
	if p.Enabled == nil || *p.Enabled || p.Enable == nil || *p.Enable {
		t.Errorf("resume with the alias: enabled %s, enable %s; want both false", show(p.Enabled), show(p.Enable))
	}

	// A queued job resumed waits for Kueue's admission, and is told so.
	queued := ptj(&batch.RunMode{Pause: &batch.PauseMode{Enabled: yes()}}, batch.JobPaused)
	queued.Labels = map[string]string{kueue.LabelQueueName: "lq"}
	msg, _, _, err = pauseCase(t, 0, queued, false)
	if err != nil || !strings.Contains(msg, "it waits in LocalQueue lq, and its pods are created once Kueue admits it") {
		t.Errorf("resuming a queued job: %q, %v", msg, err)
	}

	// Not paused, its Workload deactivated by hand or by Kueue (its re-queuing limit, say): resume
	// activates it; one the job's own pause deactivated is left to the operator.
	running := ptj(nil, batch.JobPending)
	running.Labels = map[string]string{kueue.LabelQueueName: "lq"}
	wl := &unstructured.Unstructured{}
	wl.SetGroupVersionKind(kueue.GroupVersion.WithKind(kueue.KindWorkload))
	wl.SetNamespace("ns")
	wl.SetName("pytorchtrainingjob-p-1a2b3")
	wl.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: batch.GroupVersion.String(), Kind: "PyTorchTrainingJob", Name: "p", UID: "uid-p", Controller: yes()}})
	_ = unstructured.SetNestedField(wl.Object, false, "spec", "active")
	byPause := wl.DeepCopy()
	byPause.SetAnnotations(map[string]string{render.AnnotationDeactivated: "true"})
	// One Kueue deactivated for the maximum execution time is refused: activated, Kueue would stop
	// it again at once.
	usedUp := wl.DeepCopy()
	_ = unstructured.SetNestedField(usedUp.Object, int64(8), "spec", "maximumExecutionTimeSeconds")
	_ = unstructured.SetNestedSlice(usedUp.Object, []any{map[string]any{"type": "Evicted", "status": "True", "reason": "DeactivatedDueToMaximumExecutionTimeExceeded",
		"message": "The workload is deactivated due to exceeding the maximum execution time", "lastTransitionTime": "2026-01-01T00:00:00Z"}}, "status", "conditions")
	if _, _, c, err := pauseCase(t, 0, running, false, usedUp); err == nil || !strings.Contains(err.Error(), "kubectl label pytorchtrainingjob p kueue.x-k8s.io/max-exec-time-seconds=<seconds> --overwrite -n ns") {
		t.Errorf("resuming a job whose maximum execution time is used up: %v; want a refusal naming the label", err)
	} else {
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(wl.GroupVersionKind())
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(wl), got); err != nil {
			t.Fatal(err)
		}
		if active, found, _ := unstructured.NestedBool(got.Object, "spec", "active"); !found || active {
			t.Errorf("the refused resume activated the Workload")
		}
	}
	for _, tc := range []struct {
		wl         *unstructured.Unstructured
		msg        string
		wantActive bool
	}{
		{wl, "pytorchtrainingjob/p was not paused, but its Kueue Workload pytorchtrainingjob-p-1a2b3 was inactive; it is active again", true},
		{byPause, "pytorchtrainingjob/p is not paused", false},
	} {
		msg, _, c, err := pauseCase(t, 0, running, false, tc.wl)
		if err != nil || !strings.HasPrefix(msg, tc.msg) {
			t.Errorf("resuming a job that is not paused, its Workload inactive (annotations %v): %q, %v; want %q", tc.wl.GetAnnotations(), msg, err, tc.msg)
		}
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(wl.GroupVersionKind())
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(wl), got); err != nil {
			t.Fatal(err)
		}
		if active, _, _ := unstructured.NestedBool(got.Object, "spec", "active"); active != tc.wantActive {
			t.Errorf("Workload annotated %v: active %v after resume; want %v", tc.wl.GetAnnotations(), active, tc.wantActive)
		}
	}

	// Already paused: no write.
	paused := ptj(&batch.RunMode{Pause: &batch.PauseMode{Enabled: yes()}}, batch.JobPaused)
	msg, after, _, err = pauseCase(t, 0, paused, true)
	if err != nil || msg != "pytorchtrainingjob/p is already paused" {
		t.Errorf("pausing a paused job: %q, %v", msg, err)
	}
	if after.GetResourceVersion() != "999" {
		t.Errorf("pausing a paused job wrote it (resourceVersion %s)", after.GetResourceVersion())
	}

	// A finished job is refused, naming its phase.
	_, _, _, err = pauseCase(t, 0, ptj(nil, batch.JobSucceeded), true)
	if err == nil || !strings.Contains(err.Error(), "pytorchtrainingjob/p is Succeeded") {
		t.Errorf("pausing a Succeeded job: %v", err)
	}
}

func pytorchJob(labels map[string]string) *kubeflowv1.PyTorchJob {
	return &kubeflowv1.PyTorchJob{ObjectMeta: metav1.ObjectMeta{Name: "k", Namespace: "ns", UID: "uid-k", Labels: labels}}
}

func TestPauseKubeflow(t *testing.T) {
	msg, after, _, err := pauseCase(t, 2, pytorchJob(nil), true)
	if err != nil {
		t.Fatal(err)
	}
	if rp := after.(*kubeflowv1.PyTorchJob).Spec.RunPolicy; rp == nil || rp.Suspend == nil || !*rp.Suspend {
		t.Errorf("pause: runPolicy %+v; want suspend true", rp)
	}
	if !strings.Contains(msg, "pytorchjob/k paused (runPolicy.suspend)") {
		t.Errorf("message: %s", msg)
	}
}

// A kubeflow.org job queued by Kueue's own integration: its Workload is deactivated, its
// runPolicy.suspend (Kueue's) untouched.
func TestPauseKubeflowQueued(t *testing.T) {
	queued := map[string]string{kueue.LabelQueueName: "lq"}
	wl := &unstructured.Unstructured{}
	wl.SetGroupVersionKind(kueue.GroupVersion.WithKind(kueue.KindWorkload))
	wl.SetNamespace("ns")
	wl.SetName("pytorchjob-k-1a2b3")
	wl.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "kubeflow.org/v1", Kind: "PyTorchJob", Name: "k", UID: "uid-k", Controller: yes()}})
	other := wl.DeepCopy()
	other.SetName("pytorchjob-other-9z8y7")
	other.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "kubeflow.org/v1", Kind: "PyTorchJob", Name: "other", UID: "uid-o", Controller: yes()}})

	msg, after, c, err := pauseCase(t, 2, pytorchJob(queued), true, wl, other)
	if err != nil {
		t.Fatal(err)
	}
	if rp := after.(*kubeflowv1.PyTorchJob).Spec.RunPolicy; rp != nil && rp.Suspend != nil {
		t.Errorf("the queued job's runPolicy.suspend was written: %v", *rp.Suspend)
	}
	for name, want := range map[string]bool{wl.GetName(): false, other.GetName(): true} {
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(wl.GroupVersionKind())
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: name}, got); err != nil {
			t.Fatal(err)
		}
		active, found, _ := unstructured.NestedBool(got.Object, "spec", "active")
		if !found {
			active = true
		}
		if active != want {
			t.Errorf("Workload %s active %v; want %v", name, active, want)
		}
	}
	if !strings.Contains(msg, "Workload pytorchjob-k-1a2b3 is deactivated") {
		t.Errorf("message: %s", msg)
	}
	// The job is marked as paused by its user, so that it says Paused rather than Queued.
	if got := after.GetAnnotations()[batch.AnnotationPausedByUser]; got != wl.GetName() {
		t.Errorf("paused: annotation %s = %q; want the Workload's name", batch.AnnotationPausedByUser, got)
	}

	// Resumed: the Workload active again and the mark gone.
	inactive := wl.DeepCopy()
	_ = unstructured.SetNestedField(inactive.Object, false, "spec", "active")
	marked := pytorchJob(queued)
	marked.Annotations = map[string]string{batch.AnnotationPausedByUser: wl.GetName()}
	msg, after, _, err = pauseCase(t, 2, marked, false, inactive)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := after.GetAnnotations()[batch.AnnotationPausedByUser]; ok || !strings.Contains(msg, "is active again") {
		t.Errorf("resumed: annotations %v, message %q; want no %s", after.GetAnnotations(), msg, batch.AnnotationPausedByUser)
	}

	// No Workload yet: a clear error, nothing written.
	_, _, _, err = pauseCase(t, 2, pytorchJob(queued), true, other)
	if err == nil || !strings.Contains(err.Error(), "has no Workload yet") {
		t.Errorf("pausing a queued job without a Workload: %v", err)
	}
}

func show(b *bool) string {
	if b == nil {
		return "unset"
	}
	return fmt.Sprint(*b)
}

func yes() *bool { b := true; return &b }

// TestPauseInvalidSpec: a job whose spec the operator refuses has no pod and stays Pending,
// InvalidSpec, paused or not: pause and resume say so rather than promise Suspended or pods.
func TestPauseInvalidSpec(t *testing.T) {
	refused := func(generation int64) *kubeflowv1.PyTorchJob {
		j := pytorchJob(nil)
		j.Generation = generation
		j.Status.ObservedGeneration = 1
		j.Status.Conditions = []kubeflowv1.JobCondition{{Type: kubeflowv1.JobWaiting, Status: corev1.ConditionTrue, Reason: "InvalidSpec",
			Message: "spec.runPolicy.schedulingPolicy.minAvailable: Invalid value: 10"}}
		return j
	}
	for _, pause := range []bool{true, false} {
		obj := refused(1)
		if !pause {
			obj.Spec.RunPolicy = &kubeflowv1.RunPolicy{Suspend: yes()}
		}
		msg, err := pauseBumping(t, obj, pause)
		want := "pytorchjob/k " + verbOf(pause) + "d (runPolicy.suspend), but its spec is refused, so it has no pod and stays Pending, InvalidSpec, until the spec is mended: spec.runPolicy.schedulingPolicy.minAvailable: Invalid value: 10"
		if err != nil || msg != want {
			t.Errorf("%s: %q, %v; want %q", verbOf(pause), msg, err, want)
		}
	}
	// A spec edited since the operator refused it may be mended: the usual words.
	msg, err := pauseBumping(t, refused(2), true)
	if err != nil || !strings.Contains(msg, "condition Suspended") {
		t.Errorf("pause after an edit: %q, %v", msg, err)
	}
}

// pauseBumping is pauseCase for a PyTorchJob on a client that, as the API server does, raises
// the job's generation when its spec is patched.
func pauseBumping(t *testing.T, obj *kubeflowv1.PyTorchJob, pause bool) (string, error) {
	t.Helper()
	c := fake.NewClientBuilder().WithScheme(controller.Scheme()).WithObjects(obj).WithInterceptorFuncs(interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, o client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if err := c.Patch(ctx, o, patch, opts...); err != nil {
				return err
			}
			o.SetGeneration(o.GetGeneration() + 1)
			return nil
		},
	}).Build()
	s := &session{client: c, namespace: "ns"}
	read := &kubeflowv1.PyTorchJob{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(obj), read); err != nil {
		t.Fatal(err)
	}
	return s.setPaused(context.Background(), &job{info: &kinds[2], obj: read, model: kinds[2].model(read)}, pause)
}
