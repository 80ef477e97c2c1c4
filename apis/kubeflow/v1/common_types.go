package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ReplicaType is a key of a job's replica map, spelled as Kubeflow spells it (Master, Worker, ...).
// Which keys a kind accepts is checked by its CRD; pods carry the type in lower case.
type ReplicaType string

const (
	// ReplicaTypeMaster is the PyTorch master (rank 0) or, for TensorFlow, the older name of the chief.
	ReplicaTypeMaster ReplicaType = "Master"
	// ReplicaTypeWorker is a PyTorch or TensorFlow worker.
	ReplicaTypeWorker ReplicaType = "Worker"
	// ReplicaTypeChief is the TensorFlow chief, the worker that also checkpoints and decides success.
	ReplicaTypeChief ReplicaType = "Chief"
	// ReplicaTypePS is a TensorFlow parameter server.
	ReplicaTypePS ReplicaType = "PS"
	// ReplicaTypeEvaluator is the TensorFlow evaluator, which runs beside the training cluster.
	ReplicaTypeEvaluator ReplicaType = "Evaluator"
)

// RestartPolicy says when the controller deletes a terminated replica's pod and creates it again.
// +kubebuilder:validation:Enum=Always;OnFailure;Never;ExitCode
type RestartPolicy string

const (
	// RestartPolicyAlways restarts a replica on any termination while the job is not finished.
	RestartPolicyAlways RestartPolicy = "Always"
	// RestartPolicyOnFailure restarts a replica on a non-zero exit or a disruption.
	RestartPolicyOnFailure RestartPolicy = "OnFailure"
	// RestartPolicyNever never restarts a replica.
	RestartPolicyNever RestartPolicy = "Never"
	// RestartPolicyExitCode restarts a replica on a retryable exit code or a disruption; any other
	// non-zero exit is permanent.
	RestartPolicyExitCode RestartPolicy = "ExitCode"
)

// Restart policies a replica gets when its restartPolicy is unset, as Kubeflow defaults them.
// The schema sets no default because the two kinds share ReplicaSpec; render applies these.
const (
	PyTorchDefaultRestartPolicy = RestartPolicyOnFailure
	TFDefaultRestartPolicy      = RestartPolicyNever
)

// CleanPodPolicy says which pods are deleted once the job has finished.
// +kubebuilder:validation:Enum=All;Running;None
type CleanPodPolicy string

const (
	// CleanPodPolicyAll deletes every pod of the job.
	CleanPodPolicyAll CleanPodPolicy = "All"
	// CleanPodPolicyRunning deletes the pods still running (or pending), so they hold no resources.
	CleanPodPolicyRunning CleanPodPolicy = "Running"
	// CleanPodPolicyNone keeps every pod.
	CleanPodPolicyNone CleanPodPolicy = "None"
)

// DefaultCleanPodPolicy applies when neither spec.cleanPodPolicy nor spec.runPolicy.cleanPodPolicy
// is set: Running, as the kubeflow.org/v1 API reference documents it, so no GPU stays held once
// the outcome is known. (Later Kubeflow releases default to None.)
const DefaultCleanPodPolicy = CleanPodPolicyRunning

// ManagedByTrainingOperator is the runPolicy.managedBy value Kubeflow manifests use for the
// training operator itself. Trainyard stands in for it: jobs with managedBy unset or set to this
// value are Trainyard's; jobs managed by anything else (e.g. MultiKueue) are left alone.
const ManagedByTrainingOperator = "kubeflow.org/training-operator"

// ReplicaSpec describes the pods of one replica type.
type ReplicaSpec struct {
	// replicas is the number of pods of this type. Defaults to 1.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100000
	Replicas *int32 `json:"replicas,omitempty"`

	// template describes the pods of this type, as a Deployment's template does (kubectl explain
	// pod.spec describes its fields); it lists at least one container. Its restartPolicy is
	// always replaced with Never: the controller, not the kubelet, restarts replicas (see
	// restartPolicy).
	// +required
	// +kubebuilder:validation:XValidation:rule="has(self.spec) && has(self.spec.containers) && size(self.spec.containers) > 0",message="template.spec.containers is empty: a replica's pods need at least one container, the training container",fieldPath=".spec.containers",reason=FieldValueRequired
	Template corev1.PodTemplateSpec `json:"template"`

	// restartPolicy says when a terminated replica is created again: Always, OnFailure, Never or
	// ExitCode. Unset, a PyTorchJob replica uses OnFailure and a TFJob replica Never, as in Kubeflow.
	// +optional
	RestartPolicy RestartPolicy `json:"restartPolicy,omitempty"`
}

// RunPolicy holds the policies that govern a job's life. Each of its first four fields has a twin
// directly under spec (the older layout); see EffectiveRunPolicy.
type RunPolicy struct {
	// cleanPodPolicy says which pods are deleted once the job has finished: All, Running or None.
	// Defaults to Running.
	// +optional
	CleanPodPolicy *CleanPodPolicy `json:"cleanPodPolicy,omitempty"`

	// ttlSecondsAfterFinished is how long a finished job is kept before it is deleted, with its
	// pods. Unset, the job is kept until a user deletes it.
	// +optional
	// +kubebuilder:validation:Minimum=0
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty"`

	// activeDeadlineSeconds is how long the job may run, counted from status.startTime, before it
	// fails with reason DeadlineExceeded.
	// +optional
	// +kubebuilder:validation:Minimum=1
	ActiveDeadlineSeconds *int64 `json:"activeDeadlineSeconds,omitempty"`

	// backoffLimit is how many replica restarts the job may make before it fails with reason
	// BackoffLimitExceeded.
	// +optional
	// +kubebuilder:validation:Minimum=0
	BackoffLimit *int32 `json:"backoffLimit,omitempty"`

	// schedulingPolicy describes the gang (PodGroup) the job's pods are scheduled as, when a gang
	// scheduler is in use.
	// +optional
	SchedulingPolicy *SchedulingPolicy `json:"schedulingPolicy,omitempty"`

	// suspend, when true, deletes the job's pods and keeps the job; setting it back to false
	// resumes the job with new pods. Trainyard's pause mode.
	// +optional
	Suspend *bool `json:"suspend,omitempty"`

	// managedBy names the controller that runs the job. Unset or kubeflow.org/training-operator
	// (the value Kubeflow's manifests carry), Trainyard runs it; any other value hands the job to
	// that controller and Trainyard leaves it alone. Immutable.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	ManagedBy *string `json:"managedBy,omitempty"`
}

// SchedulingPolicy describes the PodGroup a job's pods are gang-scheduled as.
type SchedulingPolicy struct {
	// minAvailable is the number of pods that must be schedulable together before any starts.
	// Defaults to the job's pod count.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100000
	MinAvailable *int32 `json:"minAvailable,omitempty"`

	// queue is the scheduler queue the PodGroup joins.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Queue string `json:"queue,omitempty"`

	// minResources are the resources the whole gang needs before any pod starts. Defaults to the
	// sum of the pods' requests.
	// +optional
	// +kubebuilder:validation:MaxProperties=32
	MinResources *corev1.ResourceList `json:"minResources,omitempty"`

	// priorityClass is the PriorityClass of the PodGroup.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	PriorityClass string `json:"priorityClass,omitempty"`

	// scheduleTimeoutSeconds is how long the scheduler waits for the whole gang to fit.
	// +optional
	// +kubebuilder:validation:Minimum=1
	ScheduleTimeoutSeconds *int32 `json:"scheduleTimeoutSeconds,omitempty"`
}

// JobConditionType is the type of a job condition. The condition set and its meaning are Kubeflow's.
type JobConditionType string

const (
	// JobCreated is True once the job has been accepted and its objects are being created.
	JobCreated JobConditionType = "Created"
	// JobRunning is True while the job's replicas run.
	JobRunning JobConditionType = "Running"
	// JobRestarting is True while a failed replica is being created again.
	JobRestarting JobConditionType = "Restarting"
	// JobSucceeded is True once the job succeeded.
	JobSucceeded JobConditionType = "Succeeded"
	// JobSuspended is True while runPolicy.suspend holds the job without pods.
	JobSuspended JobConditionType = "Suspended"
	// JobFailed is True once the job failed.
	JobFailed JobConditionType = "Failed"
	// JobWaiting is Trainyard's own: True while the job is not (fully) running for a cause it can
	// name (the reason). Kubeflow's tools ignore a type they do not know; it is never the last
	// condition, so the State column (the last condition's type) stays Kubeflow's.
	JobWaiting JobConditionType = "Waiting"
)

// What happened, as the reasons and messages of Kubeflow's conditions say it: a reason is the
// kind followed by one of these (PyTorchJobSuspended), a message "<kind> <name> is <it, in lower
// case>." (TFJob dist is resumed.). The status package words Created True, Suspended and, while
// suspended, Running this way, as Kubeflow's operator does.
const (
	ReasonCreated   = "Created"
	ReasonSuspended = "Suspended"
	ReasonResumed   = "Resumed"
)

// JobStatus is the observed state of a kubeflow.org job, in Kubeflow's layout.
type JobStatus struct {
	// conditions are the latest observations of the job's state. The last entry is the job's
	// current state (the State column of kubectl get).
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	Conditions []JobCondition `json:"conditions,omitempty"`

	// replicaStatuses counts the pods of each replica type by state.
	// +optional
	// +kubebuilder:validation:MaxProperties=5
	ReplicaStatuses map[ReplicaType]*ReplicaStatus `json:"replicaStatuses,omitempty"`

	// startTime is when the job's pods were first created (reset on resume).
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`

	// completionTime is when the job succeeded or failed.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`

	// lastReconcileTime is when the controller last worked on the job.
	// +optional
	LastReconcileTime *metav1.Time `json:"lastReconcileTime,omitempty"`

	// backoffCount is the number of restarts decided by an exit code so far, the count
	// runPolicy.backoffLimit bounds (a gang restart counts once). A Trainyard extension, absent
	// from Kubeflow's status.
	// +optional
	BackoffCount int32 `json:"backoffCount,omitempty"`

	// disruptionCount is the number of restarts after a disruption (a pod evicted, preempted, lost
	// with its node or deleted by someone else), which backoffLimit does not bound. A Trainyard
	// extension, absent from Kubeflow's status.
	// +optional
	DisruptionCount int32 `json:"disruptionCount,omitempty"`

	// gangRestarts is the number of times every pod of the job was restarted together. A
	// Trainyard extension, absent from Kubeflow's status.
	// +optional
	GangRestarts int32 `json:"gangRestarts,omitempty"`

	// lastScaleDownTime is when the operator last deleted a running replica because the job was
	// scaled down; a replica failing soon after restarts as a disruption, not counted toward
	// backoffLimit. A Trainyard extension, absent from Kubeflow's status.
	// +optional
	LastScaleDownTime *metav1.Time `json:"lastScaleDownTime,omitempty"`

	// observedGeneration is the generation of the spec this status describes. A Trainyard
	// extension, absent from Kubeflow's status.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// JobCondition is one observation of a job's state.
type JobCondition struct {
	// type of the condition: Created, Running, Restarting, Succeeded, Suspended or Failed.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	Type JobConditionType `json:"type"`

	// status of the condition: True, False or Unknown.
	// +required
	// +kubebuilder:validation:Enum=True;False;Unknown
	Status corev1.ConditionStatus `json:"status"`

	// reason is a CamelCase word for the condition's last transition.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Reason string `json:"reason,omitempty"`

	// message explains the last transition for people.
	// +optional
	// +kubebuilder:validation:MaxLength=32768
	Message string `json:"message,omitempty"`

	// lastUpdateTime is when the condition was last written.
	// +optional
	LastUpdateTime metav1.Time `json:"lastUpdateTime,omitempty"`

	// lastTransitionTime is when the condition's status last changed.
	// +optional
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`
}

// ReplicaStatus counts the pods of one replica type by state.
type ReplicaStatus struct {
	// active counts the pods pending or running.
	// +optional
	Active int32 `json:"active,omitempty"`

	// succeeded counts the pods that exited 0.
	// +optional
	Succeeded int32 `json:"succeeded,omitempty"`

	// failed counts the pods that failed.
	// +optional
	Failed int32 `json:"failed,omitempty"`

	// restarts counts the times pods of this type were created again. A Trainyard extension,
	// absent from Kubeflow's status.
	// +optional
	Restarts int32 `json:"restarts,omitempty"`

	// labelSelector selects the pods of this type. Kept for clients of older Kubeflow releases;
	// selector carries the same in the form the scale subresource reads.
	// +optional
	LabelSelector *metav1.LabelSelector `json:"labelSelector,omitempty"`

	// selector selects the pods of this type, in the string form of a label selector
	// (e.g. training.kubeflow.org/job-name=j,training.kubeflow.org/replica-type=worker). The
	// PyTorchJob scale subresource reads it for the Worker type, so an HPA finds the pods.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Selector string `json:"selector,omitempty"`
}
