package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Replica types a PyTorchTrainingJob documents. Others are accepted (any DNS label).
const (
	PyTorchReplicaMaster = "master"
	PyTorchReplicaWorker = "worker"
)

// PyTorchTrainingJob runs distributed PyTorch training: one pod per replica, the environment
// torch.distributed expects, optionally launched by torchrun and scaled elastically.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.elastic.expectedReplicas,statuspath=.status.aggregate.running,selectorpath=.status.selector
// +kubebuilder:resource:shortName=ptj,categories=trainyard
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Running",type=integer,JSONPath=`.status.aggregate.running`
// +kubebuilder:printcolumn:name="Desired",type=integer,JSONPath=`.status.desiredReplicas`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Waiting")].reason`
// +kubebuilder:printcolumn:name="Message",type=string,priority=1,JSONPath=`.status.conditions[?(@.type=="Waiting")].message`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name must be a DNS-1035 label (lower-case letters, digits and '-', starting with a letter): it names the job's Service and starts every pod's hostname",fieldPath=".metadata.name"
// +kubebuilder:validation:XValidation:rule="self.spec.replicaSpecs.all(r, size(self.metadata.name) + size(r.type) + size(string((has(self.spec.elastic) && has(self.spec.elastic.maxReplicas) && self.spec.elastic.maxReplicas > r.replicas ? self.spec.elastic.maxReplicas : r.replicas) - 1)) + 2 <= 63)",message="metadata.name is too long: pods are named <job>-<type>-<index> and that name is their hostname, at most 63 characters; shorten the job name or the replica type",fieldPath=".metadata.name"
// +kubebuilder:validation:XValidation:rule="!has(self.spec.tensorboardSpec) || size(self.metadata.name) <= 51",message="metadata.name is too long for a job with a TensorBoard: <job>-tensorboard may have at most 63 characters",fieldPath=".metadata.name"
type PyTorchTrainingJob struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec PyTorchTrainingJobSpec `json:"spec"`
	// +optional
	Status TrainingJobStatus `json:"status,omitempty"`
}

// PyTorchTrainingJobSpec is the desired state of a PyTorchTrainingJob.
//
// +kubebuilder:validation:XValidation:rule="!(has(self.elastic) && ((has(self.elastic.enabled) && self.elastic.enabled) || (has(self.elastic.enable) && self.elastic.enable))) || (has(self.torchrunConfig) && ((has(self.torchrunConfig.enabled) && self.torchrunConfig.enabled) || (has(self.torchrunConfig.enable) && self.torchrunConfig.enable)))",message="elastic.enabled requires torchrunConfig.enabled: elastic training is launched by torchrun",fieldPath=".torchrunConfig.enabled",reason=FieldValueRequired
// +kubebuilder:validation:XValidation:rule="(has(self.elastic) && has(self.elastic.minReplicas) ? self.elastic.minReplicas : -1) == (has(oldSelf.elastic) && has(oldSelf.elastic.minReplicas) ? oldSelf.elastic.minReplicas : -1)",message="elastic.minReplicas is immutable",fieldPath=".elastic.minReplicas"
// +kubebuilder:validation:XValidation:rule="(has(self.elastic) && has(self.elastic.maxReplicas) ? self.elastic.maxReplicas : -1) == (has(oldSelf.elastic) && has(oldSelf.elastic.maxReplicas) ? oldSelf.elastic.maxReplicas : -1)",message="elastic.maxReplicas is immutable",fieldPath=".elastic.maxReplicas"
// +kubebuilder:validation:XValidation:rule="(has(self.runMode) && has(self.runMode.pause) && has(self.runMode.pause.resumeSpecs) ? self.runMode.pause.resumeSpecs : []) == (has(oldSelf.runMode) && has(oldSelf.runMode.pause) && has(oldSelf.runMode.pause.resumeSpecs) ? oldSelf.runMode.pause.resumeSpecs : [])",message="runMode.pause.resumeSpecs is immutable",fieldPath=".runMode.pause.resumeSpecs"
// +kubebuilder:validation:XValidation:rule="!has(self.runMode) || !has(self.runMode.debug) || !has(self.runMode.debug.replicaSpecs) || self.runMode.debug.replicaSpecs.all(d, self.replicaSpecs.exists(r, r.type == d.type))",message="runMode.debug.replicaSpecs[].type must name a type listed in replicaSpecs",fieldPath=".runMode.debug.replicaSpecs"
// +kubebuilder:validation:XValidation:rule="!has(self.runMode) || !has(self.runMode.pause) || !has(self.runMode.pause.resumeSpecs) || self.runMode.pause.resumeSpecs.all(d, self.replicaSpecs.exists(r, r.type == d.type))",message="runMode.pause.resumeSpecs[].type must name a type listed in replicaSpecs",fieldPath=".runMode.pause.resumeSpecs"
// +kubebuilder:validation:XValidation:rule="has(self.managedBy) ? has(oldSelf.managedBy) && oldSelf.managedBy == self.managedBy : !has(oldSelf.managedBy)",message="spec.managedBy is immutable: create a new job to hand it to another controller",fieldPath=".managedBy"
type PyTorchTrainingJobSpec struct {
	// replicaSpecs lists the replica types of the job, each with its pod template. The master is
	// replica 0 of type master if there is one, else replica 0 of the first entry.
	// +required
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	ReplicaSpecs []PyTorchReplicaSpec `json:"replicaSpecs"`

	// elastic lets the number of replicas change while the job runs (requires torchrun).
	// +optional
	Elastic *ElasticConfig `json:"elastic,omitempty"`

	// torchrunConfig launches the training container through torchrun.
	// +optional
	TorchrunConfig *TorchrunConfig `json:"torchrunConfig,omitempty"`

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

// PyTorchReplicaSpec describes one replica type of a PyTorchTrainingJob.
// +kubebuilder:validation:XValidation:rule="self.type != 'master' || !has(self.replicas) || self.replicas <= 1",message="the master replica type has at most 1 replica",fieldPath=".replicas"
// +kubebuilder:validation:XValidation:rule="self.type != 'master' || !has(self.scalingWeight) || self.scalingWeight == 0",message="the master replica type has at most 1 replica, so elastic scaling cannot give it a share; set its scalingWeight to 0",fieldPath=".scalingWeight"
type PyTorchReplicaSpec struct {
	// type of the replica: master, worker, or another DNS label.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=40
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",messageExpression="self.lowerAscii().matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$') ? 'replica types are written in lower case: ' + self.lowerAscii() + ', not ' + self : 'must be a DNS label (lower-case letters, digits and hyphens, such as master or worker): it is part of every pod name, <job>-<type>-<index>'"
	Type string `json:"type"`

	// scalingWeight is this type's share of elastic.expectedReplicas. With weight 0 (the
	// default) the type keeps its replicas count.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	ScalingWeight *int32 `json:"scalingWeight,omitempty"`

	ReplicaTemplate `json:",inline"`
}

// ElasticConfig lets the number of replicas change while the job runs.
// +kubebuilder:validation:XValidation:rule="!has(self.enabled) || !has(self.enable) || self.enabled == self.enable",message="enable is an alias of enabled and disagrees with it: set only enabled",fieldPath=".enable"
// +kubebuilder:validation:XValidation:rule="!((has(self.enabled) && self.enabled) || (has(self.enable) && self.enable)) || has(self.minReplicas)",message="minReplicas is required when elastic is enabled: the fewest workers training may go on with",fieldPath=".minReplicas",reason=FieldValueRequired
// +kubebuilder:validation:XValidation:rule="!((has(self.enabled) && self.enabled) || (has(self.enable) && self.enable)) || has(self.maxReplicas)",message="maxReplicas is required when elastic is enabled: the most workers the job may grow to",fieldPath=".maxReplicas",reason=FieldValueRequired
// +kubebuilder:validation:XValidation:rule="!has(self.minReplicas) || !has(self.maxReplicas) || self.minReplicas <= self.maxReplicas",message="minReplicas must be less than or equal to maxReplicas",fieldPath=".minReplicas"
// +kubebuilder:validation:XValidation:rule="!has(self.expectedReplicas) || !has(self.minReplicas) || self.minReplicas <= self.expectedReplicas",message="expectedReplicas must be at least minReplicas",fieldPath=".expectedReplicas"
// +kubebuilder:validation:XValidation:rule="!has(self.expectedReplicas) || !has(self.maxReplicas) || self.expectedReplicas <= self.maxReplicas",message="expectedReplicas must be at most maxReplicas",fieldPath=".expectedReplicas"
type ElasticConfig struct {
	// enabled turns elastic training on.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`

	// enable is the older spelling of enabled, accepted as an alias.
	// +optional
	Enable *bool `json:"enable,omitempty"`

	// minReplicas is the fewest replicas the job runs with. Immutable.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100000
	MinReplicas *int32 `json:"minReplicas,omitempty"`

	// maxReplicas is the most replicas the job runs with. Immutable.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100000
	MaxReplicas *int32 `json:"maxReplicas,omitempty"`

	// expectedReplicas is the number of replicas wanted now, split across the replica types by
	// scalingWeight; defaults to maxReplicas. It is the scale subresource's spec.replicas, so
	// `kubectl scale` and autoscalers change it.
	// +optional
	// +kubebuilder:validation:Minimum=0
	ExpectedReplicas *int32 `json:"expectedReplicas,omitempty"`
}

// TorchrunConfig launches the training container through torchrun.
// +kubebuilder:validation:XValidation:rule="!has(self.enabled) || !has(self.enable) || self.enabled == self.enable",message="enable is an alias of enabled and disagrees with it: set only enabled",fieldPath=".enable"
type TorchrunConfig struct {
	// enabled turns torchrun on: the training container runs
	// `torchrun <flags> <extraOptions> <args>`.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`

	// enable is the older spelling of enabled, accepted as an alias.
	// +optional
	Enable *bool `json:"enable,omitempty"`

	// maxRestarts is torchrun's --max-restarts: how often each pod's agent restarts its workers
	// before it gives up. Above 0, a failed replica is restarted alone and the others' agents take
	// the new one in; unset or 0, the whole gang is restarted.
	// +optional
	// +kubebuilder:validation:Minimum=0
	MaxRestarts *int32 `json:"maxRestarts,omitempty"`

	// procPerNode is torchrun's --nproc-per-node: a number, or gpu for the training container's
	// nvidia.com/gpu limit, or cpu or auto (resolved by torchrun). Defaults to 1.
	// +optional
	// +kubebuilder:validation:MaxLength=16
	// +kubebuilder:validation:XValidation:rule="self.matches('^([1-9][0-9]*|gpu|cpu|auto)$')",message="must be auto, cpu, gpu or a positive integer (the training processes per pod)"
	ProcPerNode string `json:"procPerNode,omitempty"`

	// rdzvBackend is torchrun's --rdzv-backend. Defaults to c10d.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	RdzvBackend string `json:"rdzvBackend,omitempty"`

	// extraOptions are further torchrun flags, placed before the script.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=1024
	ExtraOptions []string `json:"extraOptions,omitempty"`
}

// PyTorchTrainingJobList is a list of PyTorchTrainingJobs.
//
// +kubebuilder:object:root=true
type PyTorchTrainingJobList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PyTorchTrainingJob `json:"items"`
}

func init() {
	SchemeBuilder.Register(&PyTorchTrainingJob{}, &PyTorchTrainingJobList{})
}
