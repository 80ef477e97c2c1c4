package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// RestartPolicy says when the controller deletes a terminated pod and creates it again.
// +kubebuilder:validation:Enum=Always;OnFailure;Never;ExitCode
type RestartPolicy string

const (
	// RestartPolicyAlways restarts a pod on any termination while the job is not finished.
	RestartPolicyAlways RestartPolicy = "Always"
	// RestartPolicyOnFailure restarts a pod on a non-zero exit or a disruption.
	RestartPolicyOnFailure RestartPolicy = "OnFailure"
	// RestartPolicyNever never restarts a pod.
	RestartPolicyNever RestartPolicy = "Never"
	// RestartPolicyExitCode restarts a pod on a retryable exit code (130, 137, 138, 143) or a
	// disruption; any other non-zero exit is permanent.
	RestartPolicyExitCode RestartPolicy = "ExitCode"
)

// RestartScope says what is restarted when one replica must be.
// +kubebuilder:validation:Enum=Gang;Replica
type RestartScope string

const (
	// RestartScopeGang restarts every pod of the job: all are deleted, then all are created again
	// once the old ones are gone. For processes that cannot rejoin a group already formed (static
	// torch.distributed, TensorFlow's collective strategies).
	RestartScopeGang RestartScope = "Gang"
	// RestartScopeReplica restarts the one replica that ended. For processes that rejoin by
	// themselves (torchrun's agents re-rendezvous; TensorFlow workers beside parameter servers).
	RestartScopeReplica RestartScope = "Replica"
)

// CleanUpPolicy says which pods are deleted once the job has finished.
// The lower-case spellings of an older T9k release are accepted as aliases.
// +kubebuilder:validation:Enum=All;Unfinished;None;all;unfinished;none
type CleanUpPolicy string

const (
	CleanUpPolicyAll        CleanUpPolicy = "All"
	CleanUpPolicyUnfinished CleanUpPolicy = "Unfinished"
	CleanUpPolicyNone       CleanUpPolicy = "None"
)

// ManagedByTrainyard is the spec.managedBy value of a job Trainyard runs, as is one with no
// managedBy.
const ManagedByTrainyard = "batch.tensorstack.dev/trainyard"

// ReplicaTemplate is the part of a replica spec that every framework shares.
type ReplicaTemplate struct {
	// replicas is the number of pods created from the template.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100000
	Replicas *int32 `json:"replicas,omitempty"`

	// template describes the pods of this replica type, as a Deployment's template does (kubectl
	// explain pod.spec describes its fields); it lists at least one container. Its
	// restartPolicy is always replaced with Never: the controller, not the kubelet, restarts
	// replicas (see restartPolicy).
	// +required
	// +kubebuilder:validation:XValidation:rule="has(self.spec) && has(self.spec.containers) && size(self.spec.containers) > 0",message="template.spec.containers is empty: a replica's pods need at least one container, the training container",fieldPath=".spec.containers",reason=FieldValueRequired
	Template corev1.PodTemplateSpec `json:"template"`

	// restartPolicy says when a terminated replica is created again: Always, OnFailure, Never
	// (default) or ExitCode.
	// +optional
	// +kubebuilder:default=Never
	RestartPolicy RestartPolicy `json:"restartPolicy,omitempty"`
}

// RunPolicy holds the policies that govern a job's life.
type RunPolicy struct {
	// activeDeadlineSeconds is how long the job may run, counted from status.startTime, before it
	// fails with reason DeadlineExceeded.
	// +optional
	// +kubebuilder:validation:Minimum=1
	ActiveDeadlineSeconds *int64 `json:"activeDeadlineSeconds,omitempty"`

	// backoffLimit is how many restarts decided by an exit code the job may make before it fails
	// with reason BackoffLimitExceeded. Defaults to 3. Restarts after a disruption (eviction,
	// preemption, node loss, a pod deleted by someone else) do not count.
	// +optional
	// +kubebuilder:validation:Minimum=0
	BackoffLimit *int32 `json:"backoffLimit,omitempty"`

	// restartScope says what is restarted when a replica must be: Gang (every pod of the job) or
	// Replica (the one that ended). By default, what can recover: Gang for PyTorch without
	// torchrun or without torchrunConfig.maxRestarts, for TensorFlow without parameter servers and
	// for a failed parameter server or chief; Replica for torchrun with maxRestarts (its agents
	// restart their workers and re-rendezvous) and for TensorFlow workers and evaluators beside
	// parameter servers.
	// +optional
	RestartScope RestartScope `json:"restartScope,omitempty"`

	// cleanUpPolicy says which pods are deleted once the job has finished: All, Unfinished
	// (default: the pods still running, so no GPU stays held) or None.
	// +optional
	CleanUpPolicy CleanUpPolicy `json:"cleanUpPolicy,omitempty"`
}

// RunMode chooses between the immediate (default), debug and pause modes.
type RunMode struct {
	// debug creates the pods but runs a debug command instead of training.
	// +optional
	Debug *DebugMode `json:"debug,omitempty"`

	// pause deletes the job's pods and keeps the job; turning it off resumes the job.
	// When both debug and pause are enabled, pause wins.
	// +optional
	Pause *PauseMode `json:"pause,omitempty"`
}

// DebugMode describes the debug run mode.
// +kubebuilder:validation:XValidation:rule="!has(self.enabled) || !has(self.enable) || self.enabled == self.enable",message="enable is an alias of enabled and disagrees with it: set only enabled",fieldPath=".enable"
type DebugMode struct {
	// enabled turns debug mode on.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`

	// enable is the older spelling of enabled, accepted as an alias.
	// +optional
	Enable *bool `json:"enable,omitempty"`

	// replicaSpecs says how each replica type starts in debug mode.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	ReplicaSpecs []ReplicaDebugSet `json:"replicaSpecs,omitempty"`
}

// ReplicaDebugSet says how one replica type starts in debug mode.
type ReplicaDebugSet struct {
	// type is the replica type this entry applies to.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Type string `json:"type"`

	// skipInitContainer drops the template's init containers.
	// +optional
	SkipInitContainer bool `json:"skipInitContainer,omitempty"`

	// command replaces the training container's command; the template's args are dropped.
	// Defaults to ["sleep", "inf"].
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=4096
	Command []string `json:"command,omitempty"`
}

// PauseMode describes the pause run mode.
// +kubebuilder:validation:XValidation:rule="!has(self.enabled) || !has(self.enable) || self.enabled == self.enable",message="enable is an alias of enabled and disagrees with it: set only enabled",fieldPath=".enable"
type PauseMode struct {
	// enabled pauses the job: its pods are deleted, the job stays.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`

	// enable is the older spelling of enabled, accepted as an alias.
	// +optional
	Enable *bool `json:"enable,omitempty"`

	// resumeSpecs says how each replica type starts again when the job resumes. Immutable.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	ResumeSpecs []ResumeSpec `json:"resumeSpecs,omitempty"`
}

// ResumeSpec says how one replica type starts again after a pause.
type ResumeSpec struct {
	// type is the replica type this entry applies to.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Type string `json:"type"`

	// skipInitContainer drops the template's init containers on resume.
	// +optional
	SkipInitContainer bool `json:"skipInitContainer,omitempty"`

	// command replaces the training container's command on resume; defaults to the template's.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=4096
	Command []string `json:"command,omitempty"`

	// args replaces the training container's args on resume; defaults to the template's.
	// +optional
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MaxLength=4096
	Args []string `json:"args,omitempty"`
}

// SchedulePolicy chooses a gang scheduler for the job's pods. With none, the cluster's default
// scheduler (or the template's schedulerName) places pods one by one.
// +kubebuilder:validation:XValidation:rule="[has(self.t9kScheduler), has(self.volcano), has(self.coscheduling), has(self.kubernetes)].filter(x, x).size() <= 1",message="choose at most one of t9kScheduler, volcano, coscheduling and kubernetes"
type SchedulePolicy struct {
	// t9kScheduler hands the pods to the T9k scheduler through a scheduler.tensorstack.dev PodGroup.
	// +optional
	T9kScheduler *T9kScheduler `json:"t9kScheduler,omitempty"`

	// volcano hands the pods to Volcano through a scheduling.volcano.sh PodGroup.
	// +optional
	Volcano *VolcanoScheduler `json:"volcano,omitempty"`

	// coscheduling hands the pods to the scheduler-plugins coscheduling plugin through a
	// scheduling.x-k8s.io PodGroup.
	// +optional
	Coscheduling *CoschedulingScheduler `json:"coscheduling,omitempty"`

	// kubernetes hands the pods to the kube-scheduler's own gang scheduling through a
	// scheduling.k8s.io Workload and PodGroup, at the newest version the cluster serves: v1beta1
	// (Kubernetes 1.37, with the GenericWorkload feature gate and the API enabled), v1alpha3, or
	// v1alpha2 (1.36, with the GenericWorkload and GangScheduling gates). The pods keep the
	// template's schedulerName, as the gang plugin is part of the kube-scheduler's default profile.
	// +optional
	Kubernetes *KubernetesScheduler `json:"kubernetes,omitempty"`
}

// KubernetesScheduler describes the Workload and PodGroup created for the kube-scheduler's gang
// scheduling.
type KubernetesScheduler struct {
	// topologyKey is a node label, such as a rack's, whose value every pod of the job must share:
	// the gang is placed within one topology domain. Needs the TopologyAwareWorkloadScheduling
	// feature gate.
	// +optional
	// +kubebuilder:validation:MaxLength=317
	// +kubebuilder:validation:XValidation:rule="self.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$')",message="must be a node label key, such as topology.kubernetes.io/zone: an optional DNS-subdomain prefix and '/', then letters, digits, '-', '_' and '.'"
	TopologyKey string `json:"topologyKey,omitempty"`
}

// T9kScheduler describes the PodGroup created for the T9k scheduler.
type T9kScheduler struct {
	// queue is the T9k scheduler queue the PodGroup joins.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Queue string `json:"queue"`

	// priority of the PodGroup, 0 to 100.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	Priority *int32 `json:"priority,omitempty"`
}

// VolcanoScheduler describes the PodGroup created for Volcano.
type VolcanoScheduler struct {
	// queue is the Volcano queue the PodGroup joins.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Queue string `json:"queue,omitempty"`

	// priorityClassName is the PodGroup's priority class.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	PriorityClassName string `json:"priorityClassName,omitempty"`
}

// CoschedulingScheduler describes the PodGroup created for the coscheduling plugin.
type CoschedulingScheduler struct {
	// scheduleTimeoutSeconds is how long the plugin waits for the whole gang.
	// +optional
	// +kubebuilder:validation:Minimum=1
	ScheduleTimeoutSeconds *int32 `json:"scheduleTimeoutSeconds,omitempty"`
}

// TensorBoardSpec describes the TensorBoard that shows the job's training logs.
// +kubebuilder:validation:XValidation:rule="has(self.logDir) || (has(self.trainingLogFilesets) && size(self.trainingLogFilesets) > 0)",message="set logDir or trainingLogFilesets: TensorBoard needs logs to show"
type TensorBoardSpec struct {
	// image is the TensorBoard container image.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Image string `json:"image"`

	// logDir names the volumes that hold the logs.
	// +optional
	LogDir *LogDir `json:"logDir,omitempty"`

	// trainingLogFilesets are the logs' locations as t9k://pvc/<pvc>/<path> URIs.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	TrainingLogFilesets []FilesetURI `json:"trainingLogFilesets,omitempty"`

	// resources of the TensorBoard container.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`
}

// FilesetURI locates training logs. Only the t9k://pvc/<pvc>/<path> form is supported; the
// claim is one of the job's namespace, and the path stays within it.
// +kubebuilder:validation:MaxLength=1024
// +kubebuilder:validation:XValidation:rule="self.matches('^t9k://pvc/[a-z0-9]([-a-z0-9.]*[a-z0-9])?(/.*)?$')",messageExpression="self.contains('://') && !self.startsWith('t9k://') ? 'unsupported URI scheme \"' + self.split('://')[0] + '\": only t9k://pvc/<pvc>/<path> is supported' : 'must have the form t9k://pvc/<pvc>/<path>'"
// +kubebuilder:validation:XValidation:rule="!self.matches('(^|/)[.][.](/|$)')",message="must not contain '..': the path names a folder within the PVC (t9k://pvc/<pvc>/<path>), never one outside it"
type FilesetURI string

// LogDir names the persistent volume claims that hold the logs.
type LogDir struct {
	// pvc lists the claims and the folders within them.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	PVC []PVCLogDir `json:"pvc,omitempty"`
}

// PVCLogDir is one claim and the folders within it that hold logs.
// +kubebuilder:validation:XValidation:rule="!has(self.subPath) || self.subPath.all(p, !p.matches('(^|/)[.][.](/|$)'))",message="subPath must not contain '..': each entry names a folder within the PVC, never one outside it",fieldPath=".subPath"
type PVCLogDir struct {
	// name of a PersistentVolumeClaim in the job's namespace.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",message="must be the name of a PersistentVolumeClaim in the job's namespace (lower-case letters, digits, '-' and '.'); a claim of another namespace cannot be mounted"
	Name string `json:"name"`

	// subPath lists folders within the claim; empty means its root.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=1024
	SubPath []string `json:"subPath,omitempty"`
}

// JobPhase is a one-word summary of where a job is in its life.
// +kubebuilder:validation:Enum=Pending;Running;Paused;Resuming;Succeeded;Failed;Unknown
type JobPhase string

const (
	JobPending   JobPhase = "Pending"
	JobRunning   JobPhase = "Running"
	JobPaused    JobPhase = "Paused"
	JobResuming  JobPhase = "Resuming"
	JobSucceeded JobPhase = "Succeeded"
	JobFailed    JobPhase = "Failed"
	JobUnknown   JobPhase = "Unknown"
)

// Condition types of a job's status.
const (
	// ConditionInitialized is True once the job's objects have been created.
	ConditionInitialized = "Initialized"
	// ConditionRunning is True while the job's replicas run.
	ConditionRunning = "Running"
	// ConditionReplicaFailure is True when a replica failed, was restarted, or could not be created.
	ConditionReplicaFailure = "ReplicaFailure"
	// ConditionCompleted is True once the job succeeded.
	ConditionCompleted = "Completed"
	// ConditionFailed is True once the job failed.
	ConditionFailed = "Failed"
	// ConditionPaused is True while the job is paused.
	ConditionPaused = "Paused"
	// ConditionWaiting is True while the job is not (fully) running for a cause the operator can
	// name: its reason is the cause (one of the Waiting reasons below, or the kubelet's own
	// reason for a container that cannot start), its message a summary with counts and the
	// scheduler's or kubelet's words. The condition is removed when no cause is left.
	ConditionWaiting = "Waiting"
)

// Reasons of the Waiting condition, beside InvalidSpec, PodGroupCRDMissing, CreateFailed and
// Restarting above, and the kubelet's reasons (ErrImagePull, ImagePullBackOff,
// CreateContainerConfigError, ...), which are passed on as they are.
const (
	// ReasonQueued: a queue (Kueue) has not admitted the job yet.
	ReasonQueued = "Queued"
	// ReasonGangWaiting: the gang scheduler holds the job's pods until all of them fit.
	ReasonGangWaiting = "GangWaiting"
	// ReasonUnschedulable: the scheduler finds no node for some pods.
	ReasonUnschedulable = "Unschedulable"
	// ReasonSchedulingGated: some pods are held by scheduling gates, which the scheduler waits to
	// see removed: Kueue's kueue.x-k8s.io/topology on a job Kueue places by topology, until Kueue
	// gives each pod its node.
	ReasonSchedulingGated = "SchedulingGated"
	// ReasonPVCNotFound: some pods mount a PersistentVolumeClaim that does not exist.
	ReasonPVCNotFound = "PVCNotFound"
	// ReasonNodeLost: some pods were lost with their node and are being replaced.
	ReasonNodeLost = "NodeLost"
	// ReasonPodsPaced: some pods are not created yet; they follow as the scheduler binds the pods
	// created before them, the job's own or other jobs' (the operator's
	// --max-unscheduled-pods-per-job and --max-unscheduled-pods).
	ReasonPodsPaced = "PodsPaced"
)

// Condition reasons, set by the controller.
const (
	ReasonCreated              = "Created"
	ReasonPodsRunning          = "PodsRunning"
	ReasonPodsPending          = "PodsPending"
	ReasonSucceeded            = "Succeeded"
	ReasonFailed               = "ReplicaFailed"
	ReasonBackoffLimitExceeded = "BackoffLimitExceeded"
	ReasonDeadlineExceeded     = "DeadlineExceeded"
	ReasonRestarting           = "Restarting"
	ReasonPaused               = "Paused"
	ReasonPausing              = "Pausing"
	ReasonResuming             = "Resuming"
	ReasonDebugging            = "Debugging"
	ReasonPodGroupCRDMissing   = "PodGroupCRDMissing"
	ReasonCreateFailed         = "CreateFailed"
)

// TrainingJobStatus is the observed state of a training job.
type TrainingJobStatus struct {
	// phase is a one-word summary: Pending, Running, Paused, Resuming, Succeeded, Failed or Unknown.
	// +optional
	Phase JobPhase `json:"phase,omitempty"`

	// conditions are the latest observations of the job's state.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// tasks reports each replica type and its pods.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	Tasks []TaskStatus `json:"tasks,omitempty"`

	// aggregate counts the job's replicas by state; the counts add up to desiredReplicas.
	// +optional
	Aggregate Aggregate `json:"aggregate,omitempty"`

	// desiredReplicas is the number of pods the job wants now.
	// +optional
	DesiredReplicas int32 `json:"desiredReplicas,omitempty"`

	// backoffCount is the number of restarts decided by an exit code so far, the count
	// runPolicy.backoffLimit bounds. A gang restart counts once.
	// +optional
	BackoffCount int32 `json:"backoffCount,omitempty"`

	// disruptionCount is the number of restarts after a disruption so far: a pod evicted,
	// preempted, lost with its node or deleted by someone else. They do not count toward
	// runPolicy.backoffLimit. A gang restart counts once.
	// +optional
	DisruptionCount int32 `json:"disruptionCount,omitempty"`

	// gangRestarts is the number of times every pod of the job was restarted together. Each pod
	// carries the value it was created under (annotation batch.tensorstack.dev/gang-restarts);
	// pods of an earlier gang are deleted, and the new gang is created once they are all gone.
	// +optional
	GangRestarts int32 `json:"gangRestarts,omitempty"`

	// lastScaleDownTime is when the operator last deleted a running replica because the job was
	// scaled down (an elastic job's expectedReplicas lowered). A replica that fails by itself
	// within a short window after it (render.ScaleDownWindow) fails on the peer taken away, not
	// by a fault of its own: it restarts as a disruption, counted in disruptionCount, not in
	// backoffCount.
	// +optional
	LastScaleDownTime *metav1.Time `json:"lastScaleDownTime,omitempty"`

	// tensorboard reports the job's TensorBoard, if it has one.
	// +optional
	Tensorboard *DependentStatus `json:"tensorboard,omitempty"`

	// startTime is when the job's pods were first created (reset on resume).
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`

	// completionTime is when the job succeeded or failed.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`

	// observedGeneration is the generation of the spec this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// selector selects the job's pods, for the scale subresource and autoscalers.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Selector string `json:"selector,omitempty"`
}

// TaskStatus reports one replica type.
type TaskStatus struct {
	// type is the replica type.
	// +required
	// +kubebuilder:validation:MaxLength=63
	Type string `json:"type"`

	// restartCount is the number of times pods of this type were created again: each replica
	// restarted alone counts one, a gang restart one for every type.
	// +optional
	RestartCount int32 `json:"restartCount,omitempty"`

	// replicaStatus reports each pod of this type; for a job so big that the list would take its
	// object past the API server's size limit, the pods that are not Running or Succeeded first,
	// then the rest by index, as many as fit (replicaStatusOmitted counts the others).
	// +optional
	// +kubebuilder:validation:MaxItems=100000
	ReplicaStatus []ReplicaStatus `json:"replicaStatus,omitempty"`

	// replicaStatusOmitted is the number of this type's pods left out of replicaStatus to keep
	// the job's object under the API server's size limit (etcd's 1.5 MiB request limit). The
	// aggregate counts every pod.
	// +optional
	ReplicaStatusOmitted int32 `json:"replicaStatusOmitted,omitempty"`
}

// ReplicaStatus reports one pod.
type ReplicaStatus struct {
	// name of the pod.
	// +required
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// uid of the pod.
	// +optional
	UID types.UID `json:"uid,omitempty"`

	// phase of the pod: Pending, Running, Succeeded, Failed or Unknown.
	// +optional
	Phase corev1.PodPhase `json:"phase,omitempty"`

	// containers reports the pod's containers.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	Containers []ContainerStatus `json:"containers,omitempty"`
}

// ContainerStatus reports one container of a pod.
type ContainerStatus struct {
	// name of the container.
	// +required
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`

	// state of the container: waiting, running or terminated.
	// +optional
	// +kubebuilder:validation:MaxLength=32
	State string `json:"state,omitempty"`

	// exitCode of the container, once terminated.
	// +optional
	ExitCode *int32 `json:"exitCode,omitempty"`
}

// Aggregate counts a job's replicas by state.
type Aggregate struct {
	// creating counts replicas that are wanted but have no pod yet.
	Creating int32 `json:"creating"`
	// pending counts pods not yet running.
	Pending int32 `json:"pending"`
	// running counts running pods.
	Running int32 `json:"running"`
	// succeeded counts pods that exited 0.
	Succeeded int32 `json:"succeeded"`
	// failed counts pods that exited non-zero.
	Failed int32 `json:"failed"`
	// unknown counts pods whose state is unknown (their node is lost).
	Unknown int32 `json:"unknown"`
	// deleted counts pods being deleted or removed by the clean-up policy.
	Deleted int32 `json:"deleted"`
}

// DependentStatus reports an object the job depends on, such as its TensorBoard.
type DependentStatus struct {
	// name of the dependent within the job, e.g. tensorboard.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name,omitempty"`

	// dependent refers to the Kubernetes object.
	// +optional
	Dependent *corev1.ObjectReference `json:"dependent,omitempty"`

	// ready is true when the dependent works.
	// +optional
	Ready bool `json:"ready"`

	// reason is a CamelCase word for the dependent's state.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	Reason string `json:"reason,omitempty"`

	// action is what the controller last did to the dependent.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	Action string `json:"action,omitempty"`

	// note gives more detail.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Note string `json:"note,omitempty"`

	// type is Normal or Warning.
	// +optional
	// +kubebuilder:validation:Enum=Normal;Warning
	Type string `json:"type,omitempty"`
}
