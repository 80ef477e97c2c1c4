package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
	kubeflowv1 "github.com/trainyard/trainyard/apis/kubeflow/v1"
	"github.com/trainyard/trainyard/controller"
)

// scripted is a fake cluster in which the n-th read of the job first plays steps[n-1] (an
// operator's and kubelets' work between two polls); reads counts the job's reads.
func scripted(t *testing.T, objs []client.Object, steps ...func(context.Context, client.Client)) (c client.WithWatch, reads *int) {
	t.Helper()
	reads = new(int)
	return fake.NewClientBuilder().WithScheme(controller.Scheme()).WithObjects(objs...).
		WithStatusSubresource(&batch.PyTorchTrainingJob{}, &kubeflowv1.PyTorchJob{}).
		WithInterceptorFuncs(interceptor.Funcs{
			Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
				if _, isPod := obj.(*corev1.Pod); !isPod {
					*reads++
					if *reads <= len(steps) {
						steps[*reads-1](ctx, c)
					}
				}
				return c.Get(ctx, key, obj, opts...)
			},
		}).Build(), reads
}

// twoWorkers is a running PyTorchTrainingJob of two workers and its two pods.
func twoWorkers() []client.Object {
	j := ptj(nil, batch.JobRunning)
	j.Spec.ReplicaSpecs = []batch.PyTorchReplicaSpec{{Type: "worker", ReplicaTemplate: batch.ReplicaTemplate{Replicas: ptr32(2)}}}
	j.Status.Aggregate.Running = 2
	objs := []client.Object{j}
	for _, name := range []string{"p-worker-0", "p-worker-1"} {
		objs = append(objs, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns",
			Labels: map[string]string{batch.LabelOwnerKind: "PyTorchTrainingJob", batch.LabelOwnerName: "p"}}})
	}
	return objs
}

func setStatus(mutate func(*batch.PyTorchTrainingJob)) func(context.Context, client.Client) {
	return func(ctx context.Context, c client.Client) {
		j := &batch.PyTorchTrainingJob{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "p"}, j); err != nil {
			panic(err)
		}
		mutate(j)
		if err := c.Status().Update(ctx, j); err != nil {
			panic(err)
		}
	}
}

func deletePod(name string) func(context.Context, client.Client) {
	return func(ctx context.Context, c client.Client) {
		if err := c.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}}); err != nil {
			panic(err)
		}
	}
}

func noStep(context.Context, client.Client) {}

func waitCase(t *testing.T, c client.WithWatch, kind int, name string, pause bool, timeout time.Duration) (string, error) {
	t.Helper()
	defer func(d time.Duration) { waitInterval = d }(waitInterval)
	waitInterval = time.Millisecond
	s := &session{client: c, namespace: "ns"}
	obj := kinds[kind].newJob()
	obj.SetNamespace("ns")
	obj.SetName(name)
	var out bytes.Buffer
	err := s.waitPaused(context.Background(), &job{info: &kinds[kind], obj: obj}, pause, timeout, &out)
	return out.String(), err
}

// A pause is waited out until the job says Paused and its last pod is gone, not when the status
// first says Paused.
func TestWaitPaused(t *testing.T) {
	c, reads := scripted(t, twoWorkers(),
		noStep,
		setStatus(func(j *batch.PyTorchTrainingJob) { j.Status.Phase = batch.JobPaused; j.Status.Aggregate.Running = 0 }),
		noStep,
		deletePod("p-worker-0"),
		deletePod("p-worker-1"),
	)
	out, err := waitCase(t, c, 0, "p", true, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"pytorchtrainingjob/p: Running 2/2 running",
		"pytorchtrainingjob/p: Paused 0/2 running, 2 pods left",
		"pytorchtrainingjob/p: Paused 0/2 running, 1 pod left",
		"pytorchtrainingjob/p: Paused 0/2 running",
		"pytorchtrainingjob/p paused, with no pod left after",
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != len(want) {
		t.Fatalf("printed:\n%s\nwant %d lines", out, len(want))
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("line %d: %q; want %q", i, lines[i], w)
		}
	}
	if *reads != 5 {
		t.Errorf("returned after %d reads of the job; want 5 (the read that saw the last pod gone)", *reads)
	}
}

// A resume waits through the job's Waiting reason, printed, to Running; Failed is an error
// naming the Failed condition; a job that never runs times out, saying where it stands.
func TestWaitResumed(t *testing.T) {
	waiting := func(j *batch.PyTorchTrainingJob) {
		j.Status.Phase = batch.JobPending
		j.Status.Aggregate.Running = 0
		j.Status.Conditions = []metav1.Condition{{Type: batch.ConditionWaiting, Status: metav1.ConditionTrue,
			Reason: "Unschedulable", Message: "0/2 nodes are available: 2 Insufficient nvidia.com/gpu."}}
	}
	paused := func(j *batch.PyTorchTrainingJob) { j.Status.Phase = batch.JobPaused; j.Status.Aggregate.Running = 0 }
	c, _ := scripted(t, twoWorkers(),
		setStatus(paused),
		setStatus(waiting),
		setStatus(func(j *batch.PyTorchTrainingJob) {
			j.Status.Phase = batch.JobRunning
			j.Status.Aggregate.Running = 2
			j.Status.Conditions = nil
		}),
	)
	out, err := waitCase(t, c, 0, "p", false, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{
		"pytorchtrainingjob/p: Paused 0/2 running\n",
		"pytorchtrainingjob/p: Pending 0/2 running, Unschedulable: 0/2 nodes are available: 2 Insufficient nvidia.com/gpu.\n",
		"pytorchtrainingjob/p: Running 2/2 running\n",
		"pytorchtrainingjob/p running again after",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("printed:\n%s\nwant a line %q", out, w)
		}
	}

	c, _ = scripted(t, twoWorkers(), setStatus(func(j *batch.PyTorchTrainingJob) {
		j.Status.Phase = batch.JobFailed
		j.Status.Conditions = []metav1.Condition{{Type: batch.ConditionFailed, Status: metav1.ConditionTrue,
			Reason: "BackoffLimitExceeded", Message: "worker 1 failed 3 times"}}
	}))
	if _, err := waitCase(t, c, 0, "p", false, 0); err == nil || !strings.Contains(err.Error(), "failed after it was resumed (BackoffLimitExceeded: worker 1 failed 3 times)") {
		t.Errorf("a job that fails: %v", err)
	}

	c, _ = scripted(t, twoWorkers(), setStatus(waiting))
	_, err = waitCase(t, c, 0, "p", false, 20*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "timed out after 20ms waiting for pytorchtrainingjob/p to be running again; it is Pending 0/2 running, Unschedulable: 0/2 nodes") {
		t.Errorf("a job that waits past the timeout: %v", err)
	}
}

func ptr32(n int32) *int32 { return &n }

// A job whose spec the operator refuses never turns Paused or Running: a pause waits for its
// pods to go and returns; a resume says at once that the job cannot run.
func TestWaitOnAJobWithARefusedSpec(t *testing.T) {
	invalid := func(j *batch.PyTorchTrainingJob) {
		j.Status.Phase = batch.JobPending
		j.Status.Aggregate.Running = 0
		j.Status.Conditions = []metav1.Condition{{Type: batch.ConditionWaiting, Status: metav1.ConditionTrue,
			Reason: "InvalidSpec", Message: "spec.replicaSpecs[0].template.metadata.labels: Invalid value"}}
	}
	c, _ := scripted(t, twoWorkers(), setStatus(invalid), deletePod("p-worker-0"), deletePod("p-worker-1"))
	if _, err := waitCase(t, c, 0, "p", true, time.Minute); err != nil {
		t.Errorf("pause --wait of a refused job whose pods are gone: %v; want it to return", err)
	}
	c, _ = scripted(t, twoWorkers(), setStatus(invalid))
	if _, err := waitCase(t, c, 0, "p", false, time.Minute); err == nil || !strings.Contains(err.Error(), "cannot run: its spec is refused (InvalidSpec: spec.replicaSpecs[0]") {
		t.Errorf("resume --wait of a refused job: %v; want it to say the job cannot run", err)
	}
}
