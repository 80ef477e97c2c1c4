package controller

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// mayServe asks for each right serving a kind takes and names the first one lacking.
func TestMayServeNamesTheRightLacking(t *testing.T) {
	// The API server's answers: every right on TFJobs, none but list on PyTorchJobs.
	var asked []string
	c := fake.NewClientBuilder().WithScheme(Scheme()).WithInterceptorFuncs(interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			r := obj.(*authorizationv1.SelfSubjectAccessReview)
			a := r.Spec.ResourceAttributes
			asked = append(asked, a.Verb+" "+a.Group+"/"+a.Resource+"/"+a.Subresource)
			r.Status.Allowed = a.Resource == "tfjobs" || a.Verb == "list"
			return nil
		},
	}).Build()
	may := func(k jobKind) (string, error) { return mayServe(context.Background(), c, k) }

	if why, _ := may(pyTorchJobKind); why != "watch pytorchjobs" {
		t.Errorf("the right lacking for PyTorchJobs: %q; want %q", why, "watch pytorchjobs")
	}
	if why, _ := may(tfJobKind); why != "" {
		t.Errorf("the right lacking for TFJobs: %q; want none", why)
	}
	want := "patch kubeflow.org/tfjobs/status"
	found := false
	for _, a := range asked {
		found = found || a == want
	}
	if !found {
		t.Errorf("asked %v; want the status's patch asked too (%s)", asked, want)
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// A kubeflow.org kind whose CRD is installed is served only while the operator may list and watch
// its jobs and patch their status: a default install beside Kubeflow's own CRDs (or the chart's
// kubeflow.enabled turned off) leaves the kind alone instead of stopping on a refused watch; a
// right granted later serves the kind without a restart; a right taken away from a served kind
// stops the operator, saying which.
func TestAKindIsServedOnlyWithTheRightsToServeIt(t *testing.T) {
	mapper := meta.NewDefaultRESTMapper(nil)
	for _, k := range []jobKind{pyTorchJobKind, tfJobKind} {
		mapper.Add(k.gvk, meta.RESTScopeNamespace)
	}
	var mu sync.Mutex
	denied := map[string]string{"PyTorchJob": "watch pytorchjobs"}
	var setUp []string
	ks := &kindServer{
		mapper: mapper,
		may: func(k jobKind) (string, error) {
			mu.Lock()
			defer mu.Unlock()
			return denied[k.gvk.Kind], nil
		},
		setup: func(k jobKind) error {
			mu.Lock()
			defer mu.Unlock()
			setUp = append(setUp, k.gvk.Kind)
			return nil
		},
		every: 10 * time.Millisecond,
	}
	served := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(setUp)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- ks.run(ctx, []jobKind{pyTorchJobKind, tfJobKind}) }()

	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for range 500 {
			if ok() {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Fatalf("%s: not so; served %v", what, served())
	}
	waitFor("TFJob served at once", func() bool { return slices.Equal(served(), []string{"TFJob"}) })
	time.Sleep(50 * time.Millisecond) // five rounds of asking
	if got := served(); !slices.Equal(got, []string{"TFJob"}) {
		t.Fatalf("served %v without the rights to PyTorchJobs; want TFJob only", got)
	}

	mu.Lock()
	delete(denied, "PyTorchJob")
	mu.Unlock()
	waitFor("PyTorchJob served once granted", func() bool { return slices.Equal(served(), []string{"TFJob", "PyTorchJob"}) })

	mu.Lock()
	denied["TFJob"] = "patch tfjobs/status"
	mu.Unlock()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "TFJob.kubeflow.org (denied: patch tfjobs/status)") {
			t.Fatalf("run ended with %v; want the TFJob right it lost named", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a right taken away from a served kind did not stop the operator")
	}
}
