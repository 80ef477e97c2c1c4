package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
	kubeflowv1 "github.com/trainyard/trainyard/apis/kubeflow/v1"
)

func TestSampleOf(t *testing.T) {
	kubeflowJob := func(active map[kubeflowv1.ReplicaType]int32, conditions ...kubeflowv1.JobCondition) *kubeflowv1.PyTorchJob {
		j := &kubeflowv1.PyTorchJob{}
		j.Status.Conditions = conditions
		j.Status.ReplicaStatuses = map[kubeflowv1.ReplicaType]*kubeflowv1.ReplicaStatus{}
		for t, n := range active {
			j.Status.ReplicaStatuses[t] = &kubeflowv1.ReplicaStatus{Active: n}
		}
		return j
	}
	cond := func(t kubeflowv1.JobConditionType, s corev1.ConditionStatus) kubeflowv1.JobCondition {
		return kubeflowv1.JobCondition{Type: t, Status: s}
	}
	cases := map[string]struct {
		job  client.Object
		want jobSample
	}{
		"a T9k job reads its phase and aggregate": {
			job:  &batch.PyTorchTrainingJob{Status: batch.TrainingJobStatus{Phase: batch.JobRunning, Aggregate: batch.Aggregate{Running: 8}}},
			want: jobSample{phase: batch.JobRunning, running: 8},
		},
		"a kubeflow job with Running True is Running, its active pods summed": {
			job: kubeflowJob(map[kubeflowv1.ReplicaType]int32{kubeflowv1.ReplicaTypeMaster: 1, kubeflowv1.ReplicaTypeWorker: 7},
				cond(kubeflowv1.JobCreated, corev1.ConditionTrue), cond(kubeflowv1.JobRunning, corev1.ConditionTrue)),
			want: jobSample{phase: batch.JobRunning, running: 8},
		},
		"a kubeflow job with Succeeded True is Succeeded though Running is still listed": {
			job:  kubeflowJob(nil, cond(kubeflowv1.JobRunning, corev1.ConditionFalse), cond(kubeflowv1.JobSucceeded, corev1.ConditionTrue)),
			want: jobSample{phase: batch.JobSucceeded},
		},
		"a kubeflow job only Created is Pending": {
			job:  kubeflowJob(nil, cond(kubeflowv1.JobCreated, corev1.ConditionTrue)),
			want: jobSample{phase: batch.JobPending},
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			got, ok := sampleOf(c.job)
			if !ok {
				t.Fatal("not read")
			}
			if diff := cmp.Diff(c.want, got, cmp.AllowUnexported(jobSample{})); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
