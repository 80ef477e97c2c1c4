package status

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
	kubeflowv1 "github.com/trainyard/trainyard/apis/kubeflow/v1"
	"github.com/trainyard/trainyard/render"
)

// ToKubeflow writes a status derived by Derive in Kubeflow's shape, for the kubeflow.org kinds:
// the conditions one to one (render.KubeflowConditions; Created and Suspended worded as Kubeflow's
// operator words them, kubeflowWording), the most recent transition last (the
// State column shows the last one); per replica type the pods running (active), succeeded and
// failed, Trainyard's restart count, and the selector an autoscaler needs; start and completion
// times; backoffCount, disruptionCount, gangRestarts, lastScaleDownTime and observedGeneration. render.FromKubeflowStatus reads it back.
func ToKubeflow(st *batch.TrainingJobStatus, j *render.Job) kubeflowv1.JobStatus {
	ks := kubeflowv1.JobStatus{
		StartTime:          st.StartTime,
		CompletionTime:     st.CompletionTime,
		BackoffCount:       st.BackoffCount,
		DisruptionCount:    st.DisruptionCount,
		GangRestarts:       st.GangRestarts,
		LastScaleDownTime:  st.LastScaleDownTime,
		ObservedGeneration: st.ObservedGeneration,
	}
	suspended := meta.IsStatusConditionTrue(st.Conditions, batch.ConditionPaused)
	restarting := restartingNow(st)
	for _, pair := range render.KubeflowConditions {
		for _, c := range st.Conditions {
			if c.Type == pair.Status && (pair.Kubeflow != kubeflowv1.JobRestarting || restarting) {
				reason, message := kubeflowWording(j, pair.Kubeflow, c, suspended)
				ks.Conditions = append(ks.Conditions, kubeflowv1.JobCondition{
					Type: pair.Kubeflow, Status: corev1.ConditionStatus(c.Status), Reason: reason, Message: message,
					LastUpdateTime: c.LastTransitionTime, LastTransitionTime: c.LastTransitionTime,
				})
			}
		}
	}
	// A restart held for its back-off is under way too, though render has made no restart yet (it
	// records one when it makes it): Restarting says so, from the Waiting condition that says why.
	if w := meta.FindStatusCondition(st.Conditions, batch.ConditionWaiting); restarting && !slices.ContainsFunc(ks.Conditions,
		func(c kubeflowv1.JobCondition) bool { return c.Type == kubeflowv1.JobRestarting }) {
		ks.Conditions = append(ks.Conditions, kubeflowv1.JobCondition{
			Type: kubeflowv1.JobRestarting, Status: corev1.ConditionTrue, Reason: j.Kind + string(kubeflowv1.JobRestarting),
			Message:        render.KubeflowOutcomeMessage(j, kubeflowv1.JobRestarting, batch.ReasonRestarting, w.Message),
			LastUpdateTime: w.LastTransitionTime, LastTransitionTime: w.LastTransitionTime,
		})
	}
	// Transition times have a second's precision: of two in one second, the one that holds (True)
	// goes last, so that a job resumed and running within a second says Running, not Suspended.
	sort.SliceStable(ks.Conditions, func(a, b int) bool {
		ta, tb := &ks.Conditions[a].LastTransitionTime, &ks.Conditions[b].LastTransitionTime
		return ta.Before(tb) || ta.Equal(tb) && ks.Conditions[a].Status != corev1.ConditionTrue && ks.Conditions[b].Status == corev1.ConditionTrue
	})
	// A Created that turned False (an edit render refuses, InvalidSpec) goes before the conditions
	// that hold: Kubeflow's operator never sets it False, and last it would show a running job's
	// State as Created; the Reason column says InvalidSpec.
	sort.SliceStable(ks.Conditions, func(a, b int) bool {
		return createdFalse(&ks.Conditions[a]) && !createdFalse(&ks.Conditions[b])
	})
	// Waiting goes first: the State column shows the last condition's type, which stays one of
	// Kubeflow's.
	if c := meta.FindStatusCondition(st.Conditions, batch.ConditionWaiting); c != nil {
		ks.Conditions = append([]kubeflowv1.JobCondition{{
			Type: kubeflowv1.JobWaiting, Status: corev1.ConditionStatus(c.Status), Reason: c.Reason, Message: c.Message,
			LastUpdateTime: c.LastTransitionTime, LastTransitionTime: c.LastTransitionTime,
		}}, ks.Conditions...)
	}
	ks.ReplicaStatuses = make(map[kubeflowv1.ReplicaType]*kubeflowv1.ReplicaStatus, len(j.Replicas))
	for _, t := range j.Replicas {
		sel := map[string]string{
			kubeflowv1.LabelJobName:      j.Name,
			kubeflowv1.LabelOperatorName: kubeflowv1.OperatorName(j.Kind),
			kubeflowv1.LabelReplicaType:  t.Type,
		}
		rs := &kubeflowv1.ReplicaStatus{
			LabelSelector: &metav1.LabelSelector{MatchLabels: sel},
			Selector:      labels.SelectorFromSet(sel).String(),
		}
		// A finished job's counts are those it finished with, as Kubeflow's operator keeps them
		// (it counts no pod once the job has finished): the clean-up's deletions do not zero them.
		// Its success counts the replicas still running as succeeded, as Kubeflow's does.
		from := st
		if j.Finished() && finished(st.Phase) {
			from = &j.Status // as written before: its restart counts too
		}
		rs.Restarts = countPhases(from, t.Type, rs)
		if st.Phase == batch.JobSucceeded {
			rs.Succeeded += rs.Active
			rs.Active = 0
		}
		ks.ReplicaStatuses[render.KubeflowReplicaType(t.Type)] = rs
	}
	return ks
}

// countPhases adds the pods of replica type typ in st to rs's counts by phase (running as
// active), and returns the type's restart count.
func countPhases(st *batch.TrainingJobStatus, typ string, rs *kubeflowv1.ReplicaStatus) int32 {
	i := slices.IndexFunc(st.Tasks, func(ts batch.TaskStatus) bool { return ts.Type == typ })
	if i < 0 {
		return 0
	}
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
	return st.Tasks[i].RestartCount
}

func finished(phase batch.JobPhase) bool {
	return phase == batch.JobSucceeded || phase == batch.JobFailed
}

// restartingNow reports whether a restart is under way: the job waits for restarted replicas to
// run again. Kubeflow's Restarting says that and no more: its operator (v1.8.1) sets it on a
// restart and removes it once the job is Running again, and a job that fails at a replica's first
// failure never has it. So it is written only then, although the ReplicaFailure it carries stays.
// Note: a job that fails while restarting says Failed alone; v1.8.1 would keep its Restarting.
func restartingNow(st *batch.TrainingJobStatus) bool {
	w := meta.FindStatusCondition(st.Conditions, batch.ConditionWaiting)
	return w != nil && w.Status == metav1.ConditionTrue && w.Reason == batch.ReasonRestarting
}

// kubeflowWording is the reason and message of condition c as Kubeflow's operator (v1.8.1) words
// them where scripts and dashboards read them: Created True, Suspended True (and Running, False
// while the job is suspended), Suspended False once resumed. The reason is the kind followed by
// what happened (PyTorchJobSuspended), the message names the kind and the job.
//
// Running, Restarting, Succeeded and Failed, when True, carry Kubeflow's reason too (the kind and
// the type: PyTorchJobSucceeded), as tools read the last condition's reason to tell how a job
// ended; their message keeps render's, led by render's reason when it says more than the type
// ("BackoffLimitExceeded: ..."), and FromKubeflowStatus reads render's reason back from it. A
// running job's message, empty in render, is Kubeflow's (render.KubeflowRunningMessage). The other
// conditions keep render's reasons and messages.
func kubeflowWording(j *render.Job, typ kubeflowv1.JobConditionType, c metav1.Condition, suspended bool) (reason, message string) {
	var what string
	switch {
	case typ == kubeflowv1.JobCreated && c.Status == metav1.ConditionTrue:
		what = kubeflowv1.ReasonCreated
	case typ == kubeflowv1.JobSuspended && c.Status == metav1.ConditionTrue,
		typ == kubeflowv1.JobRunning && suspended:
		what = kubeflowv1.ReasonSuspended
	case typ == kubeflowv1.JobSuspended:
		what = kubeflowv1.ReasonResumed
	case c.Status == metav1.ConditionTrue && render.KubeflowOutcomeReasons[typ] != "":
		return j.Kind + string(typ), render.KubeflowOutcomeMessage(j, typ, c.Reason, c.Message)
	default:
		return c.Reason, c.Message
	}
	return j.Kind + what, fmt.Sprintf("%s %s is %s.", j.Kind, j.Name, strings.ToLower(what))
}

// ProjectKubeflow is st as it reads back after being written in Kubeflow's shape: what the
// controller compares, so that detail Kubeflow's status cannot hold (per-pod status, the
// aggregate) causes no write.
func ProjectKubeflow(st *batch.TrainingJobStatus, j *render.Job) batch.TrainingJobStatus {
	ks := ToKubeflow(st, j)
	return render.FromKubeflowStatus(&ks)
}

func createdFalse(c *kubeflowv1.JobCondition) bool {
	return c.Type == kubeflowv1.JobCreated && c.Status != corev1.ConditionTrue
}
