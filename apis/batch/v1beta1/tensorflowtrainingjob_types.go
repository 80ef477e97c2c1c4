package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TensorFlowReplicaType is a TensorFlow task type.
// +kubebuilder:validation:Enum=chief;worker;ps;evaluator
type TensorFlowReplicaType string

const (
	TensorFlowReplicaChief     TensorFlowReplicaType = "chief"
	TensorFlowReplicaWorker    TensorFlowReplicaType = "worker"
	TensorFlowReplicaPS        TensorFlowReplicaType = "ps"
	TensorFlowReplicaEvaluator TensorFlowReplicaType = "evaluator"
)

// TensorFlowTrainingJob runs distributed TensorFlow training: one pod per task, each with the
// TF_CONFIG that describes the whole cluster.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=tfj,categories=trainyard
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Running",type=integer,JSONPath=`.status.aggregate.running`
// +kubebuilder:printcolumn:name="Desired",type=integer,JSONPath=`.status.desiredReplicas`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Waiting")].reason`
// +kubebuilder:printcolumn:name="Message",type=string,priority=1,JSONPath=`.status.conditions[?(@.type=="Waiting")].message`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name must be a DNS-1035 label (lower-case letters, digits and '-', starting with a letter): it names the job's Service and starts every pod's hostname",fieldPath=".metadata.name"
// +kubebuilder:validation:XValidation:rule="self.spec.replicaSpecs.all(r, size(self.metadata.name) + size(r.type) + size(string(r.replicas - 1)) + 2 <= 63)",message="metadata.name is too long: pods are named <job>-<type>-<index> and that name is their hostname, at most 63 characters; shorten the job name",fieldPath=".metadata.name"
// +kubebuilder:validation:XValidation:rule="!has(self.spec.tensorboardSpec) || size(self.metadata.name) <= 51",message="metadata.name is too long for a job with a TensorBoard: <job>-tensorboard may have at most 63 characters",fieldPath=".metadata.name"
type TensorFlowTrainingJob struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec TensorFlowTrainingJobSpec `json:"spec"`
	// +optional
	Status TrainingJobStatus `json:"status,omitempty"`
}

// TensorFlowTrainingJobSpec is the desired state of a TensorFlowTrainingJob.
//
// +kubebuilder:validation:XValidation:rule="(has(self.runMode) && has(self.runMode.pause) && has(self.runMode.pause.resumeSpecs) ? self.runMode.pause.resumeSpecs : []) == (has(oldSelf.runMode) && has(oldSelf.runMode.pause) && has(oldSelf.runMode.pause.resumeSpecs) ? oldSelf.runMode.pause.resumeSpecs : [])",message="runMode.pause.resumeSpecs is immutable",fieldPath=".runMode.pause.resumeSpecs"
// +kubebuilder:validation:XValidation:rule="!has(self.runMode) || !has(self.runMode.debug) || !has(self.runMode.debug.replicaSpecs) || self.runMode.debug.replicaSpecs.all(d, self.replicaSpecs.exists(r, r.type == d.type))",message="runMode.debug.replicaSpecs[].type must name a type listed in replicaSpecs",fieldPath=".runMode.debug.replicaSpecs"
// +kubebuilder:validation:XValidation:rule="!has(self.runMode) || !has(self.runMode.pause) || !has(self.runMode.pause.resumeSpecs) || self.runMode.pause.resumeSpecs.all(d, self.replicaSpecs.exists(r, r.type == d.type))",message="runMode.pause.resumeSpecs[].type must name a type listed in replicaSpecs",fieldPath=".runMode.pause.resumeSpecs"
// +kubebuilder:validation:XValidation:rule="has(self.managedBy) ? has(oldSelf.managedBy) && oldSelf.managedBy == self.managedBy : !has(oldSelf.managedBy)",message="spec.managedBy is immutable: create a new job to hand it to another controller",fieldPath=".managedBy"
type TensorFlowTrainingJobSpec struct {
	// replicaSpecs lists the task types of the job (chief, worker, ps, evaluator), each with its
	// pod template. Success is decided by the chief, else by worker 0.
	// +required
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=4
	ReplicaSpecs []TensorFlowReplicaSpec `json:"replicaSpecs"`

	// runMode chooses the immediate (default), debug or pause mode.
	// +optional
	RunMode *RunMode `json:"runMode,omitempty"`

	// runPolicy holds restart, deadline and clean-up policies.
	// +optional
	RunPolicy *RunPolicy `json:"runPolicy,omitempty"`

	// tensorboardSpec, when set, runs a TensorBoard over the job's logs.
	// +optional
	TensorboardSpec *TensorBoardSpec `json:"tensorboardSpec,omitempty"`

	// scheduler chooses a gang scheduler; by default pods go to the cluster's default scheduler.
	// +optional
	Scheduler *SchedulePolicy `json:"scheduler,omitempty"`

	// managedBy names the controller that runs the job. Unset or batch.tensorstack.dev/trainyard,
	// Trainyard runs it. kueue.x-k8s.io/multikueue hands it to Kueue's
	// MultiKueue, which runs a copy in a worker cluster and copies its status back; Trainyard then
	// keeps only the job's Workload here. Any other value hands the job to that controller and
	// Trainyard leaves it alone. Immutable.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	ManagedBy *string `json:"managedBy,omitempty"`
}

// TensorFlowReplicaSpec describes one task type of a TensorFlowTrainingJob.
// +kubebuilder:validation:XValidation:rule="self.type != 'chief' || !has(self.replicas) || self.replicas <= 1",message="the chief replica type has at most 1 replica",fieldPath=".replicas"
type TensorFlowReplicaSpec struct {
	// type of the task: chief, worker, ps or evaluator.
	// +required
	Type TensorFlowReplicaType `json:"type"`

	ReplicaTemplate `json:",inline"`
}

// TensorFlowTrainingJobList is a list of TensorFlowTrainingJobs.
//
// +kubebuilder:object:root=true
type TensorFlowTrainingJobList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []TensorFlowTrainingJob `json:"items"`
}

func init() {
	SchemeBuilder.Register(&TensorFlowTrainingJob{}, &TensorFlowTrainingJobList{})
}
