//go:build integration

package integration

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
	"github.com/trainyard/trainyard/apply"
	"github.com/trainyard/trainyard/controller"
	"github.com/trainyard/trainyard/render"
	"github.com/trainyard/trainyard/status"
)

// TestABigJobsStatusFitsTheAPIServer: the status of a running 10,000-pod PyTorchTrainingJob whose
// pods have a sidecar, written as the controller writes it (status.Derive, then the Applier's
// server-side apply of the status), against the real kube-apiserver and etcd. Listing every pod,
// the write is refused for its size; as Derive bounds it, the write is stored, and reads back with
// every pod counted.
func TestABigJobsStatusFitsTheAPIServer(t *testing.T) {
	const workers = 9999
	ns := newNamespace(t)
	obj := manifest(t, fmt.Sprintf(`
kind: PyTorchTrainingJob
metadata: {name: big-training-run-with-a-long-name}
spec:
  replicaSpecs:
  - {type: master, replicas: 1, template: PYTORCH_POD}
  - {type: worker, replicas: %d, template: PYTORCH_POD}`, workers))
	job, model, pods := createWithPods(t, ns, obj, func(string) corev1.PodStatus {
		return corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{
			{Name: "pytorch", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
			{Name: "istio-proxy", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
		}}
	})
	now := time.Now()
	out, err := render.Render(render.Input{Job: model, Pods: pods, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	st := status.Derive(status.Input{Job: &model, Generation: job.Generation, Current: job.Status, Pods: pods, Out: out, Now: now})

	c, err := client.New(restConfig, client.Options{Scheme: controller.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	applier := apply.NewApplier(c, controller.FieldManager, controller.IntentAnnotation)

	// Every pod listed, as the status did before it was bounded.
	full := *st.DeepCopy()
	full.Tasks[1].ReplicaStatus = nil
	full.Tasks[1].ReplicaStatusOmitted = 0
	for _, p := range pods[1:] {
		full.Tasks[1].ReplicaStatus = append(full.Tasks[1].ReplicaStatus, batch.ReplicaStatus{Name: p.Name, UID: p.UID, Phase: p.Status.Phase,
			Containers: []batch.ContainerStatus{{Name: "pytorch", State: "running"}, {Name: "istio-proxy", State: "running"}}})
	}
	_, err = applier.ApplyStatus(t.Context(), job, &full, controller.StatusFieldManager)
	// etcd refuses a request over 1.5 MiB ("etcdserver: request is too large"); one over 2 MiB
	// the API server's etcd client does not even send ("trying to send message larger than max").
	if err == nil || !strings.Contains(err.Error(), "too large") && !strings.Contains(err.Error(), "larger than max") {
		t.Fatalf("the status listing all %d pods: %v; want the API server refusing it as too large", workers+1, err)
	}
	t.Logf("every pod listed: %v", err)

	if _, err := applier.ApplyStatus(t.Context(), job, &st, controller.StatusFieldManager); err != nil {
		t.Fatalf("the status as Derive gives it: %v", err)
	}
	back, err := jobs(t, obj, ns).Get(t.Context(), job.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	data, err := back.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	read := &batch.PyTorchTrainingJob{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(back.Object, read); err != nil {
		t.Fatal(err)
	}
	w := read.Status.Tasks[1]
	if read.Status.Aggregate.Running != workers+1 || w.ReplicaStatusOmitted == 0 || int(w.ReplicaStatusOmitted)+len(w.ReplicaStatus) != workers {
		t.Errorf("read back: aggregate %+v, workers listed %d, omitted %d; want all %d running counted and every worker listed or omitted",
			read.Status.Aggregate, len(w.ReplicaStatus), w.ReplicaStatusOmitted, workers+1)
	}
	t.Logf("as Derive gives it: stored, the job %d bytes; %d workers listed, %d omitted", len(data), len(w.ReplicaStatus), w.ReplicaStatusOmitted)
}

// TestManyEndedReplicasLeaveTheStatusWritable: a round in which 2,000 workers of a running job are
// evicted, written as the controller writes it, against the real API server: a ReplicaFailure
// message naming every one (64,914 bytes, as it was) is refused by the CRD's schema, and the
// status as Derive gives it now (the first 10 named, the rest counted) is stored.
func TestManyEndedReplicasLeaveTheStatusWritable(t *testing.T) {
	const workers = 2000
	ns := newNamespace(t)
	obj := manifest(t, fmt.Sprintf(`
kind: PyTorchTrainingJob
metadata: {name: evicted}
spec:
  replicaSpecs:
  - {type: master, replicas: 1, template: PYTORCH_POD}
  - {type: worker, replicas: %d, restartPolicy: OnFailure, template: PYTORCH_POD}
  runPolicy: {restartScope: Replica}`, workers))
	job, model, pods := createWithPods(t, ns, obj, func(replicaType string) corev1.PodStatus {
		if replicaType == "worker" {
			return corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted"}
		}
		return corev1.PodStatus{Phase: corev1.PodRunning}
	})
	now := time.Now()
	out, err := render.Render(render.Input{Job: model, Pods: pods, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Decisions.Restarts) != workers {
		t.Fatalf("render restarts %d replicas; want the %d evicted", len(out.Decisions.Restarts), workers)
	}
	st := status.Derive(status.Input{Job: &model, Generation: job.Generation, Current: job.Status, Pods: pods, Out: out, Now: now})
	c, err := client.New(restConfig, client.Options{Scheme: controller.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	applier := apply.NewApplier(c, controller.FieldManager, controller.IntentAnnotation)

	// Every ending named, as the message was before it was bounded.
	full := *st.DeepCopy()
	parts := make([]string, 0, workers)
	for _, r := range out.Decisions.Restarts {
		parts = append(parts, r.Pod+" was evicted")
	}
	i := slices.IndexFunc(full.Conditions, func(c metav1.Condition) bool { return c.Type == batch.ConditionReplicaFailure })
	if i < 0 {
		t.Fatalf("no ReplicaFailure condition: %+v", full.Conditions)
	}
	full.Conditions[i].Message = strings.Join(parts, "; ") + "; they are restarted alone"
	_, err = applier.ApplyStatus(t.Context(), job, &full, controller.StatusFieldManager)
	if err == nil || !strings.Contains(err.Error(), "message") {
		t.Fatalf("a ReplicaFailure message of %d bytes: %v; want the API server refusing it, naming the message", len(full.Conditions[i].Message), err)
	}
	t.Logf("every ending named (%d bytes): %s", len(full.Conditions[i].Message), shortError(err))

	if _, err := applier.ApplyStatus(t.Context(), job, &st, controller.StatusFieldManager); err != nil {
		t.Fatalf("the status as Derive gives it: %v", err)
	}
	t.Logf("as Derive gives it: stored; ReplicaFailure %q", st.Conditions[slices.IndexFunc(st.Conditions, func(c metav1.Condition) bool { return c.Type == batch.ConditionReplicaFailure })].Message)
}

// shortError is the start of an error's text: the API server's may quote the whole value.
func shortError(err error) string {
	s := err.Error()
	if len(s) > 300 {
		return s[:300] + "..."
	}
	return s
}

// createWithPods creates the PyTorchTrainingJob obj in namespace ns and returns it, its model and
// a pod for each of its replicas, each of the status given for its replica type, as the operator
// would observe them (not created: the API server only stores the job's status here).
func createWithPods(t *testing.T, ns string, obj *unstructured.Unstructured, podStatus func(replicaType string) corev1.PodStatus) (*batch.PyTorchTrainingJob, render.Job, []*corev1.Pod) {
	t.Helper()
	stored, err := create(t, ns, obj)
	if err != nil {
		t.Fatal(err)
	}
	job := typedPyTorchJob(t, stored)
	model := render.FromPyTorchTrainingJob(job)
	var pods []*corev1.Pod
	for _, r := range model.Replicas {
		for i := range r.Replicas {
			pods = append(pods, &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: render.PodName(job.Name, r.Type, i), Namespace: ns,
					UID:    types.UID(fmt.Sprintf("%08x-5f1d-4e8b-9c3a-2d6f8e1a7b90", len(pods))),
					Labels: map[string]string{batch.LabelReplicaType: r.Type, batch.LabelReplicaIndex: strconv.Itoa(int(i))}},
				Status: podStatus(r.Type),
			})
		}
	}
	return job, model, pods
}
