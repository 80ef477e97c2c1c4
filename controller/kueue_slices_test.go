package controller

import (
	"context"
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
	"github.com/trainyard/trainyard/render"
)

// A sliced job's shrink lowers its admitted Workload's count in place. A Kueue without workload
// slices (ElasticJobsViaWorkloadSlices off) refuses that in its webhook; the job's Workload is then
// deleted, under a UID precondition, so that the job queues anew at its new size (as it does against
// the real Kueue v0.19.2 with the feature off: e2e TestKueueWithoutSlices), and a Warning event says
// why the job's pods are all created again. Any other failure is returned, and nothing is deleted.
func TestSliceShrinkRefusedByKueueReplacesTheWorkload(t *testing.T) {
	gr := schema.GroupResource{Group: "kueue.x-k8s.io", Resource: "workloads"}
	refusal := apierrors.NewInvalid(schema.GroupKind{Group: "kueue.x-k8s.io", Kind: "Workload"}, "w",
		field.ErrorList{field.Invalid(field.NewPath("spec", "podSets").Index(1).Child("count"), 1, "field is immutable")})
	for _, tc := range []struct {
		name       string
		patchErr   error
		wantDelete bool
		wantErr    string
	}{
		{name: "lowered in place", patchErr: nil},
		{name: "refused as invalid (Kueue's webhook)", patchErr: refusal, wantDelete: true},
		{name: "refused as forbidden", patchErr: apierrors.NewForbidden(gr, "w", errors.New("denied by webhook")), wantDelete: true},
		{name: "the Workload is gone", patchErr: apierrors.NewNotFound(gr, "w")},
		{name: "the API server fails", patchErr: apierrors.NewInternalError(errors.New("etcd")), wantErr: "lowering Workload w pod set worker to 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var patches int
			var deleted []string
			var precondition *types.UID
			c := interceptor.NewClient(fake.NewClientBuilder().WithScheme(Scheme()).Build(), interceptor.Funcs{
				Patch: func(ctx context.Context, cl client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
					patches++
					if patch.Type() != types.JSONPatchType {
						t.Errorf("patch type %s; want a JSON patch", patch.Type())
					}
					return tc.patchErr
				},
				Delete: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
					deleted = append(deleted, obj.GetName())
					o := &client.DeleteOptions{}
					o.ApplyOptions(opts)
					if o.Preconditions != nil {
						precondition = o.Preconditions.UID
					}
					return nil
				},
			})
			live := newWorkload()
			live.SetNamespace("ns")
			live.SetName("w")
			live.SetUID("wuid")
			rec := events.NewFakeRecorder(4)
			k := &kueueSync{client: c, recorder: rec}
			d := &render.KueueDecisions{ScaleDown: &render.PodSetCount{Index: 1, Name: "worker", Count: 1}}
			err := k.sliceWrites(context.Background(), &batch.PyTorchTrainingJob{}, d, live)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("sliceWrites: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("sliceWrites error %v; want one containing %q", err, tc.wantErr)
			}
			if patches != 1 {
				t.Errorf("%d patches of the Workload; want 1", patches)
			}
			close(rec.Events)
			var recorded []string
			for e := range rec.Events {
				recorded = append(recorded, e)
			}
			if !tc.wantDelete {
				if len(deleted) > 0 {
					t.Errorf("deleted %v; want nothing deleted", deleted)
				}
				if len(recorded) > 0 {
					t.Errorf("events %q; want none", recorded)
				}
				return
			}
			// The user learns why every pod of the job is created again.
			if len(recorded) != 1 || !strings.HasPrefix(recorded[0], "Warning KueueShrinkRefused Kueue refused to lower Workload w's worker count to 1 in place") ||
				!strings.Contains(recorded[0], "queued anew at its new size") {
				t.Errorf("events %q; want one Warning KueueShrinkRefused naming the Workload, the pod set and the count, saying the job is queued anew", recorded)
			}
			if len(deleted) != 1 || deleted[0] != "w" {
				t.Fatalf("deleted %v; want the admitted Workload w", deleted)
			}
			if precondition == nil || *precondition != "wuid" {
				t.Errorf("deletion's UID precondition %v; want wuid (never a Workload of the same name made since)", precondition)
			}
		})
	}
}
