package controller

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
)

// TestAWatchOfAKindGoneIsNoError: the caches' watch error handler takes a kind the API server no
// longer serves (its CRD deleted) as news said once, not as client-go's "Failed to watch" error at
// every retry; every other error still goes to client-go's handler.
func TestAWatchOfAKindGoneIsNoError(t *testing.T) {
	handler := cacheOptions().DefaultWatchErrorHandler
	if handler == nil {
		t.Fatal("the operator's cache has client-go's watch error handler, which logs a deleted CRD's kind as an error at every retry")
	}
	var passed []error
	saved := watchErrors.next
	watchErrors.next = func(_ context.Context, _ *toolscache.Reflector, err error) { passed = append(passed, err) }
	t.Cleanup(func() { watchErrors.next = saved })

	r := toolscache.NewReflector(nil, &corev1.Pod{}, toolscache.NewStore(toolscache.MetaNamespaceKeyFunc), 0)
	gone := apierrors.NewNotFound(schema.GroupResource{Group: "kueue.x-k8s.io", Resource: "workloads"}, "")
	ctx := context.Background()
	handler(ctx, r, gone)
	handler(ctx, r, errors.Join(errors.New("failed to list"), gone))
	if len(passed) != 0 {
		t.Errorf("a kind gone reached client-go's handler (logged as an error): %v", passed)
	}
	if !watchErrors.said[r.TypeDescription()] {
		t.Errorf("a kind gone was not said")
	}
	other := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("denied"))
	handler(ctx, r, other)
	if len(passed) != 1 || passed[0] != other {
		t.Errorf("errors passed on: %v; want the Forbidden one", passed)
	}
}

// The news names the kind as a user knows it: it said the Go type of a typed kind
// ("type": "*v1beta1.PyTorchTrainingJob").
func TestAKindGoneIsNamedByItsKind(t *testing.T) {
	g := newGoneKinds()
	var said []any
	g.info = func(_ string, kv ...any) { said = append(said, kv...) }
	gone := apierrors.NewNotFound(schema.GroupResource{Group: batch.GroupVersion.Group, Resource: "pytorchtrainingjobs"}, "")
	g.handle(context.Background(), toolscache.NewReflector(nil, &batch.PyTorchTrainingJob{}, toolscache.NewStore(toolscache.MetaNamespaceKeyFunc), 0), gone)
	want := "PyTorchTrainingJob.batch.tensorstack.dev"
	if len(said) < 2 || said[0] != "kind" || said[1] != want {
		t.Errorf("said %v; want kind %s", said, want)
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(schema.GroupVersionKind{Group: "kueue.x-k8s.io", Version: "v1beta2", Kind: "Workload"})
	if got := watchedKind(toolscache.NewReflector(nil, u, toolscache.NewStore(toolscache.MetaNamespaceKeyFunc), 0).TypeDescription()); !strings.Contains(got, "Workload") {
		t.Errorf("an unstructured kind is said as %q; want its kind", got)
	}
}
