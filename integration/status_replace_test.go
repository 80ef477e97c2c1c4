//go:build integration

package integration

import (
	"testing"
	"time"

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

// TestAReplacedStatusOfANewJob: the status of a job handed to MultiKueue is written whole
// (Applier.ReplaceStatus), as the controller writes it: first on a job with no status yet, whose
// counts are all zero but one (the status schema requires each), then over a status another
// controller wrote, whose fields the write removes. Against the real kube-apiserver.
func TestAReplacedStatusOfANewJob(t *testing.T) {
	ns := newNamespace(t)
	obj := manifest(t, `
kind: PyTorchTrainingJob
metadata: {name: dispatched, labels: {kueue.x-k8s.io/queue-name: team-a}}
spec:
  managedBy: kueue.x-k8s.io/multikueue
  replicaSpecs:
  - {type: master, replicas: 1, template: PYTORCH_POD}`)
	stored, err := create(t, ns, obj)
	if err != nil {
		t.Fatal(err)
	}
	job := typedPyTorchJob(t, stored)
	model := render.FromPyTorchTrainingJob(job)
	now := time.Now()
	out, err := render.Render(render.Input{Job: model, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	st := status.Derive(status.Input{Job: &model, Generation: job.Generation, Current: job.Status, Out: out, Now: now})
	c, err := client.New(restConfig, client.Options{Scheme: controller.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	applier := apply.NewApplier(c, controller.FieldManager, controller.IntentAnnotation)

	read := func() *batch.PyTorchTrainingJob {
		t.Helper()
		back, err := jobs(t, obj, ns).Get(t.Context(), job.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return typedPyTorchJob(t, back)
	}

	if _, err := applier.ReplaceStatus(t.Context(), job, &st, controller.StatusFieldManager); err != nil {
		t.Fatalf("the first status of a new job (phase %s, aggregate %+v): %v", st.Phase, st.Aggregate, err)
	}
	got := read()
	if got.Status.Phase != st.Phase || got.Status.Aggregate != st.Aggregate || len(got.Status.Conditions) != len(st.Conditions) {
		t.Errorf("read back: phase %q, aggregate %+v, %d conditions; want %q, %+v, %d", got.Status.Phase, got.Status.Aggregate,
			len(got.Status.Conditions), st.Phase, st.Aggregate, len(st.Conditions))
	}

	// MultiKueue copies a worker's status over it, with a condition of its own.
	theirs := `{"status":{"phase":"Running","aggregate":{"running":1,"creating":0},"conditions":[{"type":"Copied","status":"True","reason":"FromWorker","message":"x","lastTransitionTime":"2026-11-30T00:00:00Z"}]}}`
	if err := c.Status().Patch(t.Context(), got, client.RawPatch(types.MergePatchType, []byte(theirs))); err != nil {
		t.Fatal(err)
	}
	got = read()
	if _, err := applier.ReplaceStatus(t.Context(), got, &st, controller.StatusFieldManager); err != nil {
		t.Fatalf("replacing another writer's status: %v", err)
	}
	got = read()
	if got.Status.Phase != st.Phase || got.Status.Aggregate != st.Aggregate {
		t.Errorf("read back: phase %q, aggregate %+v; want %q, %+v", got.Status.Phase, got.Status.Aggregate, st.Phase, st.Aggregate)
	}
	for _, cond := range got.Status.Conditions {
		if cond.Type == "Copied" {
			t.Errorf("the other writer's condition is left: %+v", cond)
		}
	}
}

// typedPyTorchJob is a PyTorchTrainingJob read from the server as the controller holds it: typed,
// its kind set.
func typedPyTorchJob(t *testing.T, u *unstructured.Unstructured) *batch.PyTorchTrainingJob {
	t.Helper()
	j := &batch.PyTorchTrainingJob{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, j); err != nil {
		t.Fatal(err)
	}
	j.SetGroupVersionKind(batch.GroupVersion.WithKind("PyTorchTrainingJob"))
	return j
}
