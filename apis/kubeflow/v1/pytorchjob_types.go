package v1

import (
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DefaultNprocPerNode is the processes per pod when neither nprocPerNode nor
// elasticPolicy.nProcPerNode is set: torchrun decides (auto), as Kubeflow defaults it. Render
// applies it; the schema sets no default, which would clash with elasticPolicy.nProcPerNode.
const DefaultNprocPerNode = "auto"

// PyTorchJob runs distributed PyTorch training as Kubeflow's training operator does: a Master and
// Workers, each pod told its rank and the master's address, optionally elastic through torchrun.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.pytorchReplicaSpecs.Worker.replicas,statuspath=.status.replicaStatuses.Worker.active,selectorpath=.status.replicaStatuses.Worker.selector
// +kubebuilder:resource:categories=trainyard
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.conditions[-1:].type`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Waiting")].reason`
// +kubebuilder:printcolumn:name="Message",type=string,priority=1,JSONPath=`.status.conditions[?(@.type=="Waiting")].message`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name must be a DNS-1035 label (lower-case letters, digits and '-', starting with a letter): it names the job's Services and starts every pod's name",fieldPath=".metadata.name"
// +kubebuilder:validation:XValidation:rule="self.spec.pytorchReplicaSpecs.all(t, size(self.metadata.name) + size(t) + 2 + size(string([1, has(self.spec.pytorchReplicaSpecs[t].replicas) ? self.spec.pytorchReplicaSpecs[t].replicas : 1, t == 'Worker' && has(self.spec.elasticPolicy) && has(self.spec.elasticPolicy.maxReplicas) ? self.spec.elasticPolicy.maxReplicas : 1].max() - 1)) <= 63)",message="metadata.name is too long: pods and their Services are named <job>-<type>-<index> (e.g. <job>-worker-0), at most 63 characters counting the last index (elasticPolicy.maxReplicas for Workers); shorten the job name",fieldPath=".metadata.name"
type PyTorchJob struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired state of the job.
	// +required
	Spec PyTorchJobSpec `json:"spec"`

	// status is the observed state of the job, written by Trainyard.
	// +optional
	Status JobStatus `json:"status,omitempty"`
}

// PyTorchJobSpec is the desired state of a PyTorchJob.
//
// +kubebuilder:validation:XValidation:rule="!has(self.activeDeadlineSeconds) || !has(self.runPolicy) || !has(self.runPolicy.activeDeadlineSeconds) || self.activeDeadlineSeconds == self.runPolicy.activeDeadlineSeconds",message="spec.activeDeadlineSeconds and spec.runPolicy.activeDeadlineSeconds differ: set only one",fieldPath=".activeDeadlineSeconds"
// +kubebuilder:validation:XValidation:rule="!has(self.backoffLimit) || !has(self.runPolicy) || !has(self.runPolicy.backoffLimit) || self.backoffLimit == self.runPolicy.backoffLimit",message="spec.backoffLimit and spec.runPolicy.backoffLimit differ: set only one",fieldPath=".backoffLimit"
// +kubebuilder:validation:XValidation:rule="!has(self.cleanPodPolicy) || !has(self.runPolicy) || !has(self.runPolicy.cleanPodPolicy) || self.cleanPodPolicy == self.runPolicy.cleanPodPolicy",message="spec.cleanPodPolicy and spec.runPolicy.cleanPodPolicy differ: set only one",fieldPath=".cleanPodPolicy"
// +kubebuilder:validation:XValidation:rule="!has(self.ttlSecondsAfterFinished) || !has(self.runPolicy) || !has(self.runPolicy.ttlSecondsAfterFinished) || self.ttlSecondsAfterFinished == self.runPolicy.ttlSecondsAfterFinished",message="spec.ttlSecondsAfterFinished and spec.runPolicy.ttlSecondsAfterFinished differ: set only one",fieldPath=".ttlSecondsAfterFinished"
// +kubebuilder:validation:XValidation:rule="has(self.runPolicy) && has(self.runPolicy.managedBy) ? has(oldSelf.runPolicy) && has(oldSelf.runPolicy.managedBy) && oldSelf.runPolicy.managedBy == self.runPolicy.managedBy : !(has(oldSelf.runPolicy) && has(oldSelf.runPolicy.managedBy))",message="spec.runPolicy.managedBy is immutable: create a new job to hand it to another controller",fieldPath=".runPolicy.managedBy"
// +kubebuilder:validation:XValidation:rule="!has(self.nprocPerNode) || !has(self.elasticPolicy) || !has(self.elasticPolicy.nProcPerNode) || self.nprocPerNode == string(self.elasticPolicy.nProcPerNode)",message="spec.nprocPerNode and spec.elasticPolicy.nProcPerNode differ: set only nprocPerNode (elasticPolicy.nProcPerNode is deprecated)",fieldPath=".nprocPerNode"
// +kubebuilder:validation:XValidation:rule="!has(self.elasticPolicy) || !has(self.elasticPolicy.minReplicas) || !('Worker' in self.pytorchReplicaSpecs) || !has(self.pytorchReplicaSpecs['Worker'].replicas) || self.pytorchReplicaSpecs['Worker'].replicas >= self.elasticPolicy.minReplicas",message="spec.pytorchReplicaSpecs.Worker.replicas is below spec.elasticPolicy.minReplicas: set the Worker replicas between elasticPolicy.minReplicas and maxReplicas",fieldPath=".pytorchReplicaSpecs['Worker'].replicas"
// +kubebuilder:validation:XValidation:rule="!has(self.elasticPolicy) || !has(self.elasticPolicy.maxReplicas) || !('Worker' in self.pytorchReplicaSpecs) || !has(self.pytorchReplicaSpecs['Worker'].replicas) || self.pytorchReplicaSpecs['Worker'].replicas <= self.elasticPolicy.maxReplicas",message="spec.pytorchReplicaSpecs.Worker.replicas is above spec.elasticPolicy.maxReplicas: set the Worker replicas between elasticPolicy.minReplicas and maxReplicas",fieldPath=".pytorchReplicaSpecs['Worker'].replicas"
// +kubebuilder:validation:XValidation:rule="!('Master' in self.pytorchReplicaSpecs) || !has(self.pytorchReplicaSpecs['Master'].replicas) || self.pytorchReplicaSpecs['Master'].replicas <= 1",message="spec.pytorchReplicaSpecs.Master.replicas must be 0 or 1: a job has one master; put further replicas under Worker",fieldPath=".pytorchReplicaSpecs['Master'].replicas"
type PyTorchJobSpec struct {
	// runPolicy holds the restart, deadline, clean-up, scheduling and suspend policies. Its first
	// four fields may instead be written directly under spec (the older layout).
	// +optional
	RunPolicy *RunPolicy `json:"runPolicy,omitempty"`

	// activeDeadlineSeconds is the older spelling of runPolicy.activeDeadlineSeconds: how long the
	// job may run, counted from status.startTime. Setting both to different values is refused.
	// +optional
	// +kubebuilder:validation:Minimum=1
	ActiveDeadlineSeconds *int64 `json:"activeDeadlineSeconds,omitempty"`

	// backoffLimit is the older spelling of runPolicy.backoffLimit: how many replica restarts the
	// job may make before it fails. Setting both to different values is refused.
	// +optional
	// +kubebuilder:validation:Minimum=0
	BackoffLimit *int32 `json:"backoffLimit,omitempty"`

	// cleanPodPolicy is the older spelling of runPolicy.cleanPodPolicy: which pods are deleted once
	// the job has finished. Setting both to different values is refused.
	// +optional
	CleanPodPolicy *CleanPodPolicy `json:"cleanPodPolicy,omitempty"`

	// ttlSecondsAfterFinished is the older spelling of runPolicy.ttlSecondsAfterFinished: how long
	// a finished job is kept. Setting both to different values is refused.
	// +optional
	// +kubebuilder:validation:Minimum=0
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty"`

	// elasticPolicy lets the number of Workers change while the job runs; the training container
	// is then launched through torchrun with a rendezvous.
	// +optional
	ElasticPolicy *ElasticPolicy `json:"elasticPolicy,omitempty"`

	// nprocPerNode is the number of training processes per pod (torchrun's --nproc-per-node):
	// auto, cpu, gpu or a positive integer. Defaults to elasticPolicy.nProcPerNode when that is
	// set, else to auto.
	// +optional
	// +kubebuilder:validation:MaxLength=8
	// +kubebuilder:validation:XValidation:rule="self.matches('^(auto|cpu|gpu|[1-9][0-9]*)$')",message="spec.nprocPerNode must be auto, cpu, gpu or a positive integer (the training processes per pod)"
	NprocPerNode *string `json:"nprocPerNode,omitempty"`

	// pytorchReplicaSpecs maps each replica type, Master or Worker (spelled so), to its pods. The
	// Master has at most one replica and is rank 0; without a Master, Worker 0 is.
	// +required
	// +kubebuilder:validation:MinProperties=1
	// +kubebuilder:validation:MaxProperties=2
	// +kubebuilder:validation:XValidation:rule="self.all(t, t == 'Master' || t == 'Worker')",messageExpression="'spec.pytorchReplicaSpecs has an unknown replica type ' + self.filter(t, t != 'Master' && t != 'Worker')[0] + ': the keys must be Master or Worker, spelled so'"
	PyTorchReplicaSpecs map[ReplicaType]*ReplicaSpec `json:"pytorchReplicaSpecs"`
}

// ElasticPolicy lets the number of Workers of a PyTorchJob change while it runs, between
// minReplicas and maxReplicas, through torchrun's rendezvous. When only one bound is set, the
// other takes its value; when neither is, both are the Worker replicas (as in Kubeflow).
//
// +kubebuilder:validation:XValidation:rule="!has(self.minReplicas) || !has(self.maxReplicas) || self.minReplicas <= self.maxReplicas",message="spec.elasticPolicy.minReplicas must be at most spec.elasticPolicy.maxReplicas",fieldPath=".minReplicas"
type ElasticPolicy struct {
	// minReplicas is the fewest Workers the job runs with (torchrun's --nnodes lower bound).
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100000
	MinReplicas *int32 `json:"minReplicas,omitempty"`

	// maxReplicas is the most Workers the job runs with (torchrun's --nnodes upper bound).
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100000
	MaxReplicas *int32 `json:"maxReplicas,omitempty"`

	// rdzvBackend is torchrun's --rdzv-backend, e.g. c10d (the default), etcd or etcd-v2.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	RDZVBackend *string `json:"rdzvBackend,omitempty"`

	// rdzvPort is the port of the rendezvous endpoint. Defaults to the training container's port.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	RDZVPort *int32 `json:"rdzvPort,omitempty"`

	// rdzvHost is the host of the rendezvous endpoint. Defaults to the job's rank-0 pod.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	RDZVHost *string `json:"rdzvHost,omitempty"`

	// rdzvId is torchrun's --rdzv-id. Defaults to the job's UID.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	RDZVID *string `json:"rdzvId,omitempty"`

	// rdzvConf are further rendezvous settings, passed as torchrun's --rdzv-conf key=value pairs.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	RDZVConf []RDZVConf `json:"rdzvConf,omitempty"`

	// standalone runs torchrun with --standalone: a rendezvous local to each pod.
	// +optional
	Standalone *bool `json:"standalone,omitempty"`

	// nProcPerNode is the training processes per pod. Deprecated: use spec.nprocPerNode; setting
	// both to different values is refused.
	// +optional
	// +kubebuilder:validation:Minimum=1
	NProcPerNode *int32 `json:"nProcPerNode,omitempty"`

	// maxRestarts is torchrun's --max-restarts: how often torchrun restarts the workers of a pod
	// before it gives up. Above 0, a failed replica is restarted alone and the others' agents take
	// the new one in; unset or 0, the whole gang is restarted.
	// +optional
	// +kubebuilder:validation:Minimum=0
	MaxRestarts *int32 `json:"maxRestarts,omitempty"`

	// metrics are the metrics a HorizontalPodAutoscaler scales the Workers on, between
	// minReplicas and maxReplicas, through the job's scale subresource.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	Metrics []autoscalingv2.MetricSpec `json:"metrics,omitempty"`
}

// RDZVConf is one rendezvous setting, key=value.
type RDZVConf struct {
	// key of the setting, e.g. timeout.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Key string `json:"key"`

	// value of the setting.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Value string `json:"value,omitempty"`
}

// PyTorchJobList is a list of PyTorchJobs.
//
// +kubebuilder:object:root=true
type PyTorchJobList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PyTorchJob `json:"items"`
}

func init() {
	SchemeBuilder.Register(&PyTorchJob{}, &PyTorchJobList{})
}
