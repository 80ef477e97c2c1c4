package status

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
	kubeflowv1 "github.com/trainyard/trainyard/apis/kubeflow/v1"
	"github.com/trainyard/trainyard/render"
)

func kubeflowJob(suspend bool, st kubeflowv1.JobStatus) render.Job {
	tmpl := func(n int32) *kubeflowv1.ReplicaSpec {
		return &kubeflowv1.ReplicaSpec{Replicas: &n, RestartPolicy: kubeflowv1.RestartPolicyNever, Template: corev1.PodTemplateSpec{
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "pytorch", Image: "train"}}},
		}}
	}
	return render.FromPyTorchJob(&kubeflowv1.PyTorchJob{
		ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "ns", UID: "job-uid", Generation: 2},
		Spec: kubeflowv1.PyTorchJobSpec{
			RunPolicy:           &kubeflowv1.RunPolicy{Suspend: &suspend},
			PyTorchReplicaSpecs: map[kubeflowv1.ReplicaType]*kubeflowv1.ReplicaSpec{"Master": tmpl(1), "Worker": tmpl(2)},
		},
		Status: st,
	})
}

// TestKubeflowStatusRoundTrip follows a Kubeflow job through its phases. At each step the status
// Derive gives is written in Kubeflow's shape and read back as the next step's input, as the
// controller does: the phase must survive the trip (Kubeflow's status has none; it is read from
// the conditions), and reading back what was written must change nothing (else every reconcile
// would write).
func TestKubeflowStatusRoundTrip(t *testing.T) {
	running := []corev1.Pod{podOf("master", 0, corev1.PodRunning), podOf("worker", 0, corev1.PodRunning), podOf("worker", 1, corev1.PodRunning)}
	steps := []struct {
		name    string
		suspend bool
		pods    []corev1.Pod
		want    batch.JobPhase
		// wantCounts: per Kubeflow replica type, active/succeeded/failed.
		wantCounts map[kubeflowv1.ReplicaType][3]int32
	}{
		{name: "created, pods pending", pods: []corev1.Pod{podOf("master", 0, corev1.PodPending)}, want: batch.JobPending},
		{name: "every pod running", pods: running, want: batch.JobRunning,
			wantCounts: map[kubeflowv1.ReplicaType][3]int32{"Master": {1, 0, 0}, "Worker": {2, 0, 0}}},
		{name: "suspended, pods still there", suspend: true, pods: running, want: batch.JobRunning},
		{name: "suspended, no pod left", suspend: true, want: batch.JobPaused},
		{name: "resumed, pods pending", pods: []corev1.Pod{podOf("master", 0, corev1.PodPending)}, want: batch.JobResuming},
		{name: "running again", pods: running, want: batch.JobRunning},
		{name: "master succeeded", pods: []corev1.Pod{podOf("master", 0, corev1.PodSucceeded, 0), podOf("worker", 0, corev1.PodRunning), podOf("worker", 1, corev1.PodSucceeded, 0)},
			want: batch.JobSucceeded, wantCounts: map[kubeflowv1.ReplicaType][3]int32{"Master": {0, 1, 0}, "Worker": {1, 1, 0}}},
	}
	var stored kubeflowv1.JobStatus
	now := t0
	for _, step := range steps {
		now = now.Add(10 * time.Second)
		j := kubeflowJob(step.suspend, stored)
		st, _ := derive(t, j, step.pods, now)
		if st.Phase != step.want {
			t.Fatalf("%s: Derive gave phase %s; want %s", step.name, st.Phase, step.want)
		}
		written := ToKubeflow(&st, &j)
		back := render.FromKubeflowStatus(&written)
		if back.Phase != step.want {
			t.Errorf("%s: phase %s read back as %s from conditions %+v", step.name, step.want, back.Phase, written.Conditions)
		}
		if diff := cmp.Diff(ProjectKubeflow(&st, &j), ProjectKubeflow(&back, &j)); diff != "" {
			t.Errorf("%s: reading back what was written changes it (-written +again):\n%s", step.name, diff)
		}
		if last := written.Conditions[len(written.Conditions)-1]; !last.LastTransitionTime.Equal(&metav1.Time{Time: now}) {
			t.Errorf("%s: last condition %s changed at %s, not the latest (the State column shows the last one)", step.name, last.Type, last.LastTransitionTime)
		}
		for typ, want := range step.wantCounts {
			rs := written.ReplicaStatuses[typ]
			if got := [3]int32{rs.Active, rs.Succeeded, rs.Failed}; got != want {
				t.Errorf("%s: replicaStatuses[%s] active/succeeded/failed = %v; want %v", step.name, typ, got, want)
			}
		}
		stored = written
	}
	if sel := stored.ReplicaStatuses["Worker"].Selector; sel != "training.kubeflow.org/job-name=j,training.kubeflow.org/operator-name=trainyard,training.kubeflow.org/replica-type=worker" {
		t.Errorf("replicaStatuses.Worker.selector = %q", sel)
	}
}
