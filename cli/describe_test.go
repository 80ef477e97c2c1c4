package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
	kubeflowv1 "github.com/trainyard/trainyard/apis/kubeflow/v1"
	"github.com/trainyard/trainyard/apis/kueue"
	"github.com/trainyard/trainyard/controller"
)

// TestDescribeQueue: describe of a queued job shows its LocalQueue and its Workload's conditions in
// Kueue's words, says when the Workload is inactive, and says so when there is no Workload yet.
func TestDescribeQueue(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 1, 0, 0, time.UTC)
	wl := &unstructured.Unstructured{}
	wl.SetGroupVersionKind(kueue.GroupVersion.WithKind(kueue.KindWorkload))
	wl.SetNamespace("ns")
	wl.SetName("pytorchjob-k-1a2b3")
	wl.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "kubeflow.org/v1", Kind: "PyTorchJob", Name: "k", UID: "uid-k", Controller: yes()}})
	_ = unstructured.SetNestedField(wl.Object, false, "spec", "active")
	_ = unstructured.SetNestedSlice(wl.Object, []any{map[string]any{
		"type": "QuotaReserved", "status": "False", "reason": "Pending", "lastTransitionTime": "2026-01-01T00:00:30Z",
		"message": "couldn't assign flavors to pod set master: insufficient unused quota for nvidia.com/gpu in flavor gpu-a, 1 more needed",
	}}, "status", "conditions")
	_ = unstructured.SetNestedSlice(wl.Object, []any{map[string]any{
		"name": "multikueue", "state": "Pending", "lastTransitionTime": "2026-01-01T00:00:50Z",
		"message": "The workload got reservation on \"worker1\"",
	}}, "status", "admissionChecks")

	// An elastic job's admitted Workload, and the slice its new size waits in.
	running := wl.DeepCopy()
	running.SetName("pytorchjob-k-aaaaa")
	unstructured.RemoveNestedField(running.Object, "spec", "active")
	unstructured.RemoveNestedField(running.Object, "status")
	_ = unstructured.SetNestedSlice(running.Object, []any{map[string]any{
		"type": "Admitted", "status": "True", "reason": "Admitted", "lastTransitionTime": "2026-01-01T00:00:00Z", "message": "The workload is admitted",
	}}, "status", "conditions")
	slice := wl.DeepCopy()
	slice.SetName("pytorchjob-k-bbbbb")
	slice.SetCreationTimestamp(metav1.NewTime(now))
	slice.SetAnnotations(map[string]string{kueue.AnnotationWorkloadSliceReplacementFor: "ns/pytorchjob-k-aaaaa"})
	unstructured.RemoveNestedField(slice.Object, "spec", "active")
	unstructured.RemoveNestedField(slice.Object, "status", "admissionChecks")

	// An admitted Workload placed by topology, its assignment in Kueue's compact form: the master
	// in one domain; the workers in 2 nodes of one rack, then 9 nodes of another, one pod each.
	placed := running.DeepCopy()
	placed.SetName("pytorchjob-k-ccccc")
	levels := []any{"rack", "kubernetes.io/hostname"}
	_ = unstructured.SetNestedSlice(placed.Object, []any{
		map[string]any{"name": "master", "count": int64(1), "topologyAssignment": map[string]any{"levels": levels, "slices": []any{
			map[string]any{"domainCount": int64(1), "podCounts": map[string]any{"universal": int64(1)},
				"valuesPerLevel": []any{map[string]any{"universal": "rack-a"}, map[string]any{"universal": "node-a1"}}},
		}}},
		map[string]any{"name": "worker", "count": int64(12), "topologyAssignment": map[string]any{"levels": levels, "slices": []any{
			map[string]any{"domainCount": int64(2), "podCounts": map[string]any{"individual": []any{int64(2), int64(1)}},
				"valuesPerLevel": []any{map[string]any{"universal": "rack-a"}, map[string]any{"individual": map[string]any{"prefix": "node-a", "roots": []any{"1", "2"}}}}},
			map[string]any{"domainCount": int64(9), "podCounts": map[string]any{"universal": int64(1)},
				"valuesPerLevel": []any{map[string]any{"universal": "rack-b"}, map[string]any{"individual": map[string]any{"prefix": "node-b", "suffix": "-x", "roots": []any{"1", "2", "3", "4", "5", "6", "7", "8", "9"}}}}},
		}}},
	}, "status", "admission", "podSetAssignments")
	_ = unstructured.SetNestedSlice(placed.Object, []any{map[string]any{"name": "node-b4-x"}}, "status", "unhealthyNodes")

	// An admitted Workload with a maximum execution time: 100 s used before, 60 s since its admission.
	timed := running.DeepCopy()
	timed.SetName("pytorchjob-k-ddddd")
	_ = unstructured.SetNestedField(timed.Object, int64(600), "spec", "maximumExecutionTimeSeconds")
	_ = unstructured.SetNestedField(timed.Object, int64(100), "status", "accumulatedPastExecutionTimeSeconds")

	queued := pytorchJob(map[string]string{kueue.LabelQueueName: "lq"})
	for name, tc := range map[string]struct {
		objs []*unstructured.Unstructured
		// t9k: the job is taken as a T9k kind's (its model has no Kubeflow part).
		t9k  bool
		want []string
	}{
		"its Workload, inactive, with Kueue's words": {
			objs: []*unstructured.Unstructured{wl},
			want: []string{
				"Kueue: LocalQueue lq, Workload pytorchjob-k-1a2b3 (inactive: trainyard resume activates it)",
				"  QuotaReserved     False    Pending  30s  couldn't assign flavors to pod set master: insufficient unused quota",
				"  check multikueue  Pending           10s  The workload got reservation on \"worker1\"",
			},
		},
		"a T9k job's Workload deactivated by hand, which resume activates too": {
			objs: []*unstructured.Unstructured{wl},
			t9k:  true,
			want: []string{"Workload pytorchjob-k-1a2b3 (inactive: trainyard resume activates it)"},
		},
		"a Workload with a maximum execution time: the time used, earlier admissions' and this one's": {
			objs: []*unstructured.Unstructured{timed},
			want: []string{"Workload pytorchjob-k-ddddd (active; maximum execution time 600 s, 160 s used)"},
		},
		"no Workload yet": {want: []string{"Kueue: LocalQueue lq; no Workload yet"}},
		"an elastic job's admitted Workload, and the slice its new size waits in": {
			objs: []*unstructured.Unstructured{slice, running},
			want: []string{
				"Kueue: LocalQueue lq, Workload pytorchjob-k-aaaaa (active)",
				"Kueue: the job's new size waits in Workload pytorchjob-k-bbbbb (a slice replacing pytorchjob-k-aaaaa)",
				"Pending  30s  couldn't assign flavors to pod set master: insufficient unused quota",
			},
		},
		"an admitted Workload placed by topology: each pod set's domains, the first 8 named": {
			objs: []*unstructured.Unstructured{placed},
			want: []string{
				"  topology of master by rack/kubernetes.io/hostname: rack-a/node-a1 (1 pod)\n",
				"  topology of worker by rack/kubernetes.io/hostname: rack-a/node-a1 (2 pods), rack-a/node-a2 (1 pod), rack-b/node-b1-x (1 pod), " +
					"rack-b/node-b2-x (1 pod), rack-b/node-b3-x (1 pod), rack-b/node-b4-x (1 pod), rack-b/node-b5-x (1 pod), rack-b/node-b6-x (1 pod), and 3 more domains (3 pods)\n",
				"  Kueue is finding other nodes for the pods placed on node-b4-x (failed: tainted, not ready or gone)\n",
			},
		},
	} {
		t.Run(name, func(t *testing.T) {
			b := fake.NewClientBuilder().WithScheme(controller.Scheme()).WithObjects(queued)
			for _, o := range tc.objs {
				b = b.WithObjects(o)
			}
			s := &session{client: b.Build(), namespace: "ns"}
			j := &job{info: &kinds[2], obj: queued, model: kinds[2].model(queued)}
			if tc.t9k {
				j.model.Kubeflow = nil
			}
			var out bytes.Buffer
			describe(&out, j, nil, nil, s.queueView(context.Background(), j), now)
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("describe lacks %q:\n%s", w, out.String())
				}
			}
		})
	}

	// A job with no queue label has no Kueue line.
	var out bytes.Buffer
	plain := pytorchJob(nil)
	s := &session{client: fake.NewClientBuilder().WithScheme(controller.Scheme()).Build(), namespace: "ns"}
	j := &job{info: &kinds[2], obj: plain, model: kinds[2].model(plain)}
	describe(&out, j, nil, nil, s.queueView(context.Background(), j), now)
	if strings.Contains(out.String(), "Kueue") {
		t.Errorf("describe of an unqueued job mentions Kueue:\n%s", out.String())
	}
}

// TestPhaseOfAJobKueueHolds: a kubeflow.org job Kueue holds (suspended, Waiting Queued) is shown
// Pending, as a queued T9k job is; a user's suspend stays Paused.
func TestPhaseOfAJobKueueHolds(t *testing.T) {
	for _, tc := range []struct {
		waiting string
		want    string
	}{{"Queued", "Pending"}, {"", "Paused"}} {
		o := pytorchJob(nil)
		o.Status.Conditions = []kubeflowv1.JobCondition{{Type: kubeflowv1.JobSuspended, Status: "True", Reason: "PyTorchJobSuspended"}}
		if tc.waiting != "" {
			o.Status.Conditions = append([]kubeflowv1.JobCondition{{Type: kubeflowv1.JobWaiting, Status: "True", Reason: tc.waiting}}, o.Status.Conditions...)
		}
		j := &job{info: &kinds[2], obj: o, model: kinds[2].model(o)}
		if got := j.phase(); got != tc.want {
			t.Errorf("Waiting %q: phase %s; want %s", tc.waiting, got, tc.want)
		}
	}
}

// TestQueuedWithoutKueue: with no Workload CRD, describe says Kueue is not installed rather than
// pass the API's no-match error on.
func TestQueuedWithoutKueue(t *testing.T) {
	queued := pytorchJob(map[string]string{kueue.LabelQueueName: "lq"})
	c := fake.NewClientBuilder().WithScheme(controller.Scheme()).WithObjects(queued).WithInterceptorFuncs(interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if u, ok := list.(*unstructured.UnstructuredList); ok && u.GroupVersionKind().Group == kueue.GroupVersion.Group {
				return &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: kueue.GroupVersion.Group, Kind: kueue.KindWorkload}}
			}
			return c.List(ctx, list, opts...)
		},
	}).Build()
	s := &session{client: c, namespace: "ns"}
	j := &job{info: &kinds[2], obj: queued, model: kinds[2].model(queued)}
	var out bytes.Buffer
	describe(&out, j, nil, nil, s.queueView(context.Background(), j), time.Now())
	if !strings.Contains(out.String(), "Kueue: LocalQueue lq; the Workload could not be read: Kueue is not installed (no workloads.kueue.x-k8s.io)") {
		t.Errorf("describe:\n%s", out.String())
	}
	// Without Kueue nothing holds runPolicy.suspend (the job runs unqueued): pause and resume
	// write it, as for any kubeflow.org job.
	for _, pause := range []bool{true, false} {
		msg, err := s.setPaused(context.Background(), j, pause)
		if err != nil {
			t.Fatalf("pause %v: %v", pause, err)
		}
		after := &kubeflowv1.PyTorchJob{}
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(queued), after); err != nil {
			t.Fatal(err)
		}
		if rp := after.Spec.RunPolicy; rp == nil || rp.Suspend == nil || *rp.Suspend != pause {
			t.Errorf("pause %v: runPolicy %+v; want suspend %v", pause, rp, pause)
		}
		if want := map[bool]string{true: "pytorchjob/k paused (runPolicy.suspend)", false: "pytorchjob/k resumed (runPolicy.suspend): its pods are created again"}[pause]; !strings.HasPrefix(msg, want) {
			t.Errorf("pause %v: %q; want it to begin %q", pause, msg, want)
		}
		j = &job{info: &kinds[2], obj: after, model: kinds[2].model(after)}
	}
}

// TestDescribePartlyAdmitted: an elastic job Kueue admitted partially shows the admitted pods as
// its desired ones, as its status does, and says so beside the spec's count.
func TestDescribePartlyAdmitted(t *testing.T) {
	o := ptj(nil, batch.JobRunning)
	o.Labels = map[string]string{kueue.LabelQueueName: "lq"}
	o.Spec.ReplicaSpecs = []batch.PyTorchReplicaSpec{{Type: "worker", ReplicaTemplate: batch.ReplicaTemplate{Replicas: ptr32(4)}}}
	o.Status.DesiredReplicas, o.Status.Aggregate.Running = 2, 2
	s := &session{client: fake.NewClientBuilder().WithScheme(controller.Scheme()).WithObjects(o).Build(), namespace: "ns"}
	j := &job{info: &kinds[0], obj: o, model: kinds[0].model(o)}
	var out bytes.Buffer
	describe(&out, j, nil, nil, s.queueView(context.Background(), j), time.Now())
	for _, want := range []string{"Running  2/2 running", "Admitted: 2 of the 4 pods the spec asks"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("describe lacks %q:\n%s", want, out.String())
		}
	}
}

// TestDescribeSaysDisruptionsAndTheTensorBoard: what get's columns leave out, describe says: the
// restarts no exit code caused (and the scale-down whose failures were not counted), and a TensorBoard that does not work, and where it serves.
func TestDescribeSaysDisruptionsAndTheTensorBoard(t *testing.T) {
	o := ptj(nil, batch.JobRunning)
	o.Status.DisruptionCount = 1
	o.Status.LastScaleDownTime = &metav1.Time{Time: time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)}
	o.Status.Tensorboard = &batch.DependentStatus{Name: "tensorboard", Reason: "PVCNotFound", Note: `persistentvolumeclaim "logs" not found`}
	j := &job{info: &kinds[0], obj: o, model: kinds[0].model(o)}
	var out bytes.Buffer
	describe(&out, j, nil, nil, nil, time.Now())
	for _, want := range []string{
		"Restarts: backoffCount 0 of backoffLimit 3; disruptions 1 (evictions, preemptions, lost nodes, failures after a scale-down: not counted toward backoffLimit); last scaled down 2026-12-01T03:00:00Z",
		`TensorBoard: not ready: PVCNotFound: persistentvolumeclaim "logs" not found (Service p-tensorboard, port 6006)`,
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("describe lacks %q:\n%s", want, out.String())
		}
	}
}

// TestDescribePausedSaysHowToResume: a paused job's describe says what brings it back.
func TestDescribePausedSaysHowToResume(t *testing.T) {
	for i, o := range []client.Object{ptj(nil, batch.JobPaused), func() client.Object {
		k := pytorchJob(nil)
		k.Status.Conditions = []kubeflowv1.JobCondition{{Type: kubeflowv1.JobSuspended, Status: "True", Reason: "PyTorchJobSuspended"}}
		return k
	}()} {
		k := &kinds[[]int{0, 2}[i]]
		var out bytes.Buffer
		describe(&out, &job{info: k, obj: o, model: k.model(o)}, nil, nil, nil, time.Now())
		want := "Paused: its pods are deleted until it is resumed: trainyard resume " + strings.ToLower(k.kind) + "/" + o.GetName() + " -n ns\n"
		if !strings.Contains(out.String(), want) {
			t.Errorf("describe:\n%s\nwant the line %q", out.String(), want)
		}
	}
}
