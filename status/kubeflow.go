package status

import (
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
	kubeflowv1 "github.com/trainyard/trainyard/apis/kubeflow/v1"
	"github.com/trainyard/trainyard/render"
)

// ToKubeflow writes a status derived by Derive in Kubeflow's shape, for the kubeflow.org kinds:
// the conditions one to one (render.KubeflowConditions), the most recent transition last (the
// State column shows the last one); per replica type the pods running (active), succeeded and
// failed, Trainyard's restart count, and the selector an autoscaler needs; start and completion
// times; backoffCount and observedGeneration. render.FromKubeflowStatus reads it back.
func ToKubeflow(st *batch.TrainingJobStatus, j *render.Job) kubeflowv1.JobStatus {
	ks := kubeflowv1.JobStatus{
		StartTime:          st.StartTime,
		CompletionTime:     st.CompletionTime,
		BackoffCount:       st.BackoffCount,
		ObservedGeneration: st.ObservedGeneration,
	}
	for _, pair := range render.KubeflowConditions {
		for _, c := range st.Conditions {
			if c.Type == pair.Status {
				ks.Conditions = append(ks.Conditions, kubeflowv1.JobCondition{
					Type: pair.Kubeflow, Status: corev1.ConditionStatus(c.Status), Reason: c.Reason, Message: c.Message,
					LastUpdateTime: c.LastTransitionTime, LastTransitionTime: c.LastTransitionTime,
				})
			}
		}
	}
	sort.SliceStable(ks.Conditions, func(a, b int) bool {
		return ks.Conditions[a].LastTransitionTime.Before(&ks.Conditions[b].LastTransitionTime)
	})
	ks.ReplicaStatuses = make(map[kubeflowv1.ReplicaType]*kubeflowv1.ReplicaStatus, len(j.Replicas))
	for _, t := range j.Replicas {
		sel := map[string]string{
			kubeflowv1.LabelJobName:      j.Name,
			kubeflowv1.LabelOperatorName: kubeflowv1.OperatorName,
			kubeflowv1.LabelReplicaType:  t.Type,
		}
		rs := &kubeflowv1.ReplicaStatus{
			LabelSelector: &metav1.LabelSelector{MatchLabels: sel},
			Selector:      labels.SelectorFromSet(sel).String(),
		}
		if i := slices.IndexFunc(st.Tasks, func(ts batch.TaskStatus) bool { return ts.Type == t.Type }); i >= 0 {
			rs.Restarts = st.Tasks[i].RestartCount
			for _, p := range st.Tasks[i].ReplicaStatus {
				switch p.Phase {
				case corev1.PodRunning:
					rs.Active++
				case corev1.PodSucceeded:
					rs.Succeeded++
				case corev1.PodFailed:
					rs.Failed++
				}
			}
		}
		ks.ReplicaStatuses[render.KubeflowReplicaType(t.Type)] = rs
	}
	return ks
}

// ProjectKubeflow is st as it reads back after being written in Kubeflow's shape: what the
// controller compares, so that detail Kubeflow's status cannot hold (per-pod status, the
// aggregate) causes no write.
func ProjectKubeflow(st *batch.TrainingJobStatus, j *render.Job) batch.TrainingJobStatus {
	ks := ToKubeflow(st, j)
	return render.FromKubeflowStatus(&ks)
}
