package controller

import (
	"context"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// A kubeflow.org kind whose CRD is installed is served only if the operator may list and watch
// its jobs and patch their status: a default install beside Kubeflow's own CRDs (or the chart's
// kubeflow.enabled turned off) leaves the kind alone instead of stopping on a refused watch.
func TestAKindIsServedOnlyWithTheRightsToServeIt(t *testing.T) {
	mapper := meta.NewDefaultRESTMapper(nil)
	for _, k := range []jobKind{pyTorchKind, tensorFlowKind, pyTorchJobKind, tfJobKind} {
		mapper.Add(k.gvk, meta.RESTScopeNamespace)
	}
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

	served, later, err := servedKinds(mapper, may)
	if err != nil {
		t.Fatal(err)
	}
	var got, waiting []string
	for _, k := range served {
		got = append(got, k.gvk.Kind)
	}
	for _, k := range later {
		waiting = append(waiting, k.gvk.Kind)
	}
	if want := []string{"PyTorchTrainingJob", "TensorFlowTrainingJob", "TFJob"}; !equalStrings(got, want) {
		t.Errorf("served %v; want %v", got, want)
	}
	if want := []string{"PyTorchJob"}; !equalStrings(waiting, want) {
		t.Errorf("left for later %v; want %v", waiting, want)
	}
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
