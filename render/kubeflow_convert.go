package render

import (
	"math"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
	kubeflowv1 "github.com/trainyard/trainyard/apis/kubeflow/v1"
	"github.com/trainyard/trainyard/apis/kueue"
)

// Replica types of the kubeflow.org kinds in the order render lists them: for PyTorch the master
// first (rank 0), for TensorFlow as Kubeflow documents them.
var (
	pyTorchJobTypes = []kubeflowv1.ReplicaType{kubeflowv1.ReplicaTypeMaster, kubeflowv1.ReplicaTypeWorker}
	tfJobTypes      = []kubeflowv1.ReplicaType{kubeflowv1.ReplicaTypeChief, kubeflowv1.ReplicaTypeMaster,
		kubeflowv1.ReplicaTypePS, kubeflowv1.ReplicaTypeWorker, kubeflowv1.ReplicaTypeEvaluator}
)

// KubeflowReplicaType is the replicaStatuses key of render's (lower-case) replica type.
func KubeflowReplicaType(typ string) kubeflowv1.ReplicaType {
	for _, t := range tfJobTypes {
		if strings.ToLower(string(t)) == typ {
			return t
		}
	}
	return kubeflowv1.ReplicaType(typ)
}

// FromPyTorchJob converts a kubeflow.org PyTorchJob into the render model.
func FromPyTorchJob(in *kubeflowv1.PyTorchJob) Job {
	j := kubeflowJob(in.ObjectMeta, "PyTorchJob", PyTorch, in.Spec.EffectiveRunPolicy(), in.Spec.PyTorchReplicaSpecs,
		pyTorchJobTypes, kubeflowv1.PyTorchDefaultRestartPolicy, in.Status)
	k := j.Kubeflow
	switch {
	case in.Spec.NprocPerNode != nil:
		k.NprocPerNode = *in.Spec.NprocPerNode
	case in.Spec.ElasticPolicy != nil && in.Spec.ElasticPolicy.NProcPerNode != nil:
		k.NprocPerNode = strconv.Itoa(int(*in.Spec.ElasticPolicy.NProcPerNode))
	}
	if e := in.Spec.ElasticPolicy; e != nil {
		workers := int32(0)
		if w := in.Spec.PyTorchReplicaSpecs[kubeflowv1.ReplicaTypeWorker]; w != nil {
			workers = deref(w.Replicas, 1)
		}
		// One bound set gives the other its value; none set, both are the worker count.
		lo, hi := deref(e.MinReplicas, deref(e.MaxReplicas, workers)), deref(e.MaxReplicas, deref(e.MinReplicas, workers))
		k.Elastic = &KubeflowElastic{
			Min: lo, Max: hi,
			RdzvBackend: deref(e.RDZVBackend, ""), RdzvHost: deref(e.RDZVHost, ""), RdzvPort: deref(e.RDZVPort, 0),
			RdzvID: deref(e.RDZVID, ""), RdzvConf: e.RDZVConf, MaxRestarts: e.MaxRestarts, Standalone: deref(e.Standalone, false),
			Metrics: e.Metrics,
		}
	}
	return j
}

// FromTFJob converts a kubeflow.org TFJob into the render model.
func FromTFJob(in *kubeflowv1.TFJob) Job {
	j := kubeflowJob(in.ObjectMeta, "TFJob", TensorFlow, in.Spec.EffectiveRunPolicy(), in.Spec.TFReplicaSpecs,
		tfJobTypes, kubeflowv1.TFDefaultRestartPolicy, in.Status)
	j.Kubeflow.AllWorkers = in.Spec.SuccessPolicy != nil && *in.Spec.SuccessPolicy == kubeflowv1.SuccessPolicyAllWorkers
	j.Kubeflow.DynamicWorker = in.Spec.EnableDynamicWorker
	return j
}

// kubeflowJob is what both kubeflow.org kinds share: replica types lower-cased (pod names
// J-master-0), the run policy with Kubeflow's defaults, suspend as pause, and a gang scheduler
// chosen by the templates' schedulerName (volcano, or scheduler-plugins' coscheduling).
func kubeflowJob(m metav1.ObjectMeta, kind string, fw Framework, rp kubeflowv1.RunPolicy, specs map[kubeflowv1.ReplicaType]*kubeflowv1.ReplicaSpec,
	order []kubeflowv1.ReplicaType, defaultRestart kubeflowv1.RestartPolicy, st kubeflowv1.JobStatus) Job {
	j := Job{
		APIVersion: kubeflowv1.GroupVersion.String(),
		Kind:       kind,
		Name:       m.Name,
		Namespace:  m.Namespace,
		UID:        m.UID,
		Created:    m.CreationTimestamp,
		Framework:  fw,
		// Note: Kubeflow's operator sets no limit when backoffLimit is unset; jobs moved over keep
		// retrying as they did. (The T9k kinds default to 3.)
		BackoffLimit:          deref(rp.BackoffLimit, math.MaxInt32),
		ActiveDeadlineSeconds: rp.ActiveDeadlineSeconds,
		CleanUpPolicy:         cleanPodPolicy(rp.CleanPodPolicy),
		Pause:                 deref(rp.Suspend, false),
		RestartScope:          batch.RestartScope(m.Annotations[batch.AnnotationRestartScope]),
		Kubeflow: &Kubeflow{TTLSecondsAfterFinished: rp.TTLSecondsAfterFinished, KueueQueue: m.Labels[kueue.LabelQueueName],
			PausedByUser: m.Annotations[batch.AnnotationPausedByUser] != ""},
		Status: FromKubeflowStatus(&st),
	}
	for typ := range specs {
		if !slices.Contains(order, typ) {
			j.Kubeflow.UnknownTypes = append(j.Kubeflow.UnknownTypes, string(typ))
		}
	}
	slices.Sort(j.Kubeflow.UnknownTypes)
	schedulerName := ""
	for _, typ := range order {
		s := specs[typ]
		if s == nil {
			continue
		}
		policy := s.RestartPolicy
		if policy == "" {
			policy = defaultRestart
		}
		j.Replicas = append(j.Replicas, ReplicaType{
			Type:          strings.ToLower(string(typ)),
			Replicas:      deref(s.Replicas, 1),
			RestartPolicy: batch.RestartPolicy(policy),
			Template:      &s.Template,
		})
		if n := s.Template.Spec.SchedulerName; n != "" && schedulerName == "" {
			schedulerName = n
		}
	}
	sp := rp.SchedulingPolicy
	if sp == nil {
		sp = &kubeflowv1.SchedulingPolicy{}
	}
	j.Kubeflow.GangScheduler = m.Annotations[batch.AnnotationGangScheduler]
	switch {
	case j.Kubeflow.GangScheduler != "":
		// Note: Kubeflow's schema has no field for it; the annotation chooses the kube-scheduler's
		// own gang scheduling, and the templates keep their schedulerName (the gang plugin is in
		// every kube-scheduler profile).
		j.Scheduler = &batch.SchedulePolicy{Kubernetes: &batch.KubernetesScheduler{TopologyKey: m.Annotations[batch.AnnotationGangTopologyKey]}}
	case schedulerName == batch.VolcanoSchedulerName:
		j.Scheduler = &batch.SchedulePolicy{Volcano: &batch.VolcanoScheduler{Queue: sp.Queue, PriorityClassName: sp.PriorityClass}}
	case schedulerName == batch.CoschedulingSchedulerName:
		j.Scheduler = &batch.SchedulePolicy{Coscheduling: &batch.CoschedulingScheduler{ScheduleTimeoutSeconds: sp.ScheduleTimeoutSeconds}}
	}
	j.Kubeflow.MinAvailable = sp.MinAvailable
	if sp.MinResources != nil {
		j.Kubeflow.MinResources = *sp.MinResources
	}
	return j
}

// cleanPodPolicy maps Kubeflow's cleanPodPolicy onto render's clean-up policy: Running (the
// default, as seed 002 says) deletes the pods that have not finished.
func cleanPodPolicy(p *kubeflowv1.CleanPodPolicy) batch.CleanUpPolicy {
	switch deref(p, kubeflowv1.DefaultCleanPodPolicy) {
	case kubeflowv1.CleanPodPolicyAll:
		return batch.CleanUpPolicyAll
	case kubeflowv1.CleanPodPolicyNone:
		return batch.CleanUpPolicyNone
	}
	return batch.CleanUpPolicyUnfinished
}

// KubeflowConditions pairs each Kubeflow condition type with the condition of render's status
// it carries; the status package writes them, FromKubeflowStatus reads them back.
var KubeflowConditions = []struct {
	Kubeflow kubeflowv1.JobConditionType
	Status   string
}{
	{kubeflowv1.JobCreated, batch.ConditionInitialized},
	{kubeflowv1.JobRunning, batch.ConditionRunning},
	{kubeflowv1.JobRestarting, batch.ConditionReplicaFailure},
	{kubeflowv1.JobSuspended, batch.ConditionPaused},
	{kubeflowv1.JobSucceeded, batch.ConditionCompleted},
	{kubeflowv1.JobFailed, batch.ConditionFailed},
}

// FromKubeflowStatus reads a Kubeflow job's status as render's: the conditions map one to one,
// the phase follows from them (Kubeflow's status has none), the counters are Trainyard's own
// fields. Pod-level detail (aggregate, per-pod status) is not kept in Kubeflow's shape: tasks
// hold only the restart counts and the pods counted by phase.
func FromKubeflowStatus(ks *kubeflowv1.JobStatus) batch.TrainingJobStatus {
	st := batch.TrainingJobStatus{
		StartTime:          ks.StartTime,
		CompletionTime:     ks.CompletionTime,
		BackoffCount:       ks.BackoffCount,
		DisruptionCount:    ks.DisruptionCount,
		GangRestarts:       ks.GangRestarts,
		LastScaleDownTime:  ks.LastScaleDownTime,
		ObservedGeneration: ks.ObservedGeneration,
	}
	for _, c := range ks.Conditions {
		if c.Status == corev1.ConditionTrue {
			c.Reason, c.Message = fromKubeflowOutcome(c.Type, c.Reason, c.Message)
		}
		if c.Type == kubeflowv1.JobWaiting {
			st.Conditions = append(st.Conditions, metav1.Condition{
				Type: batch.ConditionWaiting, Status: metav1.ConditionStatus(c.Status), Reason: c.Reason, Message: c.Message,
				LastTransitionTime: c.LastTransitionTime,
			})
			continue
		}
		for _, pair := range KubeflowConditions {
			if pair.Kubeflow == c.Type {
				st.Conditions = append(st.Conditions, metav1.Condition{
					Type: pair.Status, Status: metav1.ConditionStatus(c.Status), Reason: c.Reason, Message: c.Message,
					LastTransitionTime: c.LastTransitionTime,
				})
			}
		}
	}
	// Per type, the restart count and the pods by phase as Kubeflow counts them (running,
	// succeeded, failed), as phase-only entries: enough to tell when the counts change.
	for _, typ := range tfJobTypes {
		rs := ks.ReplicaStatuses[typ]
		if rs == nil {
			continue
		}
		ts := batch.TaskStatus{Type: strings.ToLower(string(typ)), RestartCount: rs.Restarts}
		if n := max(0, rs.Active) + max(0, rs.Succeeded) + max(0, rs.Failed); n > 0 {
			ts.ReplicaStatus = make([]batch.ReplicaStatus, 0, n) // one allocation for a 5,000-pod job's
		}
		for _, c := range []struct {
			n     int32
			phase corev1.PodPhase
		}{{rs.Active, corev1.PodRunning}, {rs.Succeeded, corev1.PodSucceeded}, {rs.Failed, corev1.PodFailed}} {
			for range c.n {
				ts.ReplicaStatus = append(ts.ReplicaStatus, batch.ReplicaStatus{Phase: c.phase})
			}
		}
		st.Tasks = append(st.Tasks, ts)
	}
	st.Phase = phaseOf(st.Conditions)
	return st
}

// phaseOf is the phase that status.Derive's conditions stand for.
func phaseOf(conds []metav1.Condition) batch.JobPhase {
	is := func(typ string, status metav1.ConditionStatus) *metav1.Condition {
		for i := range conds {
			if conds[i].Type == typ && conds[i].Status == status {
				return &conds[i]
			}
		}
		return nil
	}
	switch {
	case len(conds) == 0:
		return ""
	case is(batch.ConditionFailed, metav1.ConditionTrue) != nil:
		return batch.JobFailed
	case is(batch.ConditionCompleted, metav1.ConditionTrue) != nil:
		return batch.JobSucceeded
	case is(batch.ConditionRunning, metav1.ConditionTrue) != nil:
		return batch.JobRunning
	case is(batch.ConditionPaused, metav1.ConditionTrue) != nil:
		// A Kubeflow job is Paused from the round its pods are asked to go (render's pause).
		return batch.JobPaused
	}
	if c := is(batch.ConditionRunning, metav1.ConditionFalse); c != nil && c.Reason == batch.ReasonResuming {
		return batch.JobResuming
	}
	return batch.JobPending
}

// KubeflowOutcomeReasons are the Kubeflow condition types written with Kubeflow's reason (the kind
// and the type, PyTorchJobFailed) when True, each with render's reason its message leaves out.
// Failed has none: every failure names its cause.
var KubeflowOutcomeReasons = map[kubeflowv1.JobConditionType]string{
	kubeflowv1.JobRunning:    batch.ReasonPodsRunning,
	kubeflowv1.JobRestarting: batch.ReasonRestarting,
	kubeflowv1.JobSucceeded:  batch.ReasonSucceeded,
	kubeflowv1.JobFailed:     "-",
}

// kubeflowKinds are the kinds whose conditions carry Kubeflow's reasons.
var kubeflowKinds = []string{"PyTorchJob", "TFJob"}

// KubeflowOutcomeMessage is the message of a True condition of type typ written with Kubeflow's
// reason: render's message led by render's reason unless the type says it, or Kubeflow's
// running message (KubeflowRunningMessage) for a running job's empty one.
func KubeflowOutcomeMessage(j *Job, typ kubeflowv1.JobConditionType, reason, message string) string {
	switch {
	case reason != KubeflowOutcomeReasons[typ]:
		return reason + ": " + message
	case message == "" && typ == kubeflowv1.JobRunning:
		return KubeflowRunningMessage(j)
	}
	return message
}

// KubeflowRunningMessage is the Running condition's message as v1.8.1 words it: "PyTorchJob j is
// running." for a PyTorchJob with a Master, else the job named with its namespace ("TFJob ns/j is
// running.", a PyTorchJob of Workers too), as its two controllers write it.
func KubeflowRunningMessage(j *Job) string {
	name := j.Namespace + "/" + j.Name
	if j.Kind == "PyTorchJob" && slices.ContainsFunc(j.Replicas, func(r ReplicaType) bool { return r.Type == "master" }) {
		name = j.Name
	}
	return j.Kind + " " + name + " is running."
}

// fromKubeflowOutcome reads render's reason and message back from a True condition written by
// KubeflowOutcomeMessage; any other condition is returned as it is.
func fromKubeflowOutcome(typ kubeflowv1.JobConditionType, reason, message string) (string, string) {
	def := KubeflowOutcomeReasons[typ]
	if def == "" || !slices.ContainsFunc(kubeflowKinds, func(k string) bool { return reason == k+string(typ) }) {
		return reason, message
	}
	if lead, rest, ok := strings.Cut(message, ": "); ok && isReasonWord(lead) {
		return lead, rest
	}
	if typ == kubeflowv1.JobRunning && strings.HasSuffix(message, " is running.") {
		message = ""
	}
	return def, message
}

// isReasonWord reports whether s reads as a condition reason: a capitalised word of letters.
func isReasonWord(s string) bool {
	if s == "" || s[0] < 'A' || s[0] > 'Z' {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return true
}
