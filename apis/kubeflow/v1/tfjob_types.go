package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SuccessPolicy says which replicas decide that a TFJob succeeded.
// +kubebuilder:validation:Enum="";AllWorkers
type SuccessPolicy string

const (
	// SuccessPolicyDefault: the job succeeds when the chief (Chief, else Master) succeeds, or,
	// without one, when Worker 0 succeeds.
	SuccessPolicyDefault SuccessPolicy = ""
	// SuccessPolicyAllWorkers: the job succeeds when every Worker has succeeded.
	SuccessPolicyAllWorkers SuccessPolicy = "AllWorkers"
)

// TFJob runs distributed TensorFlow training as Kubeflow's training operator does: one pod per
// task, each with the TF_CONFIG that describes the whole cluster.
//
// The CRD serves it as kubeflow.org/v1 (stored) and kubeflow.org/v1beta2 (deprecated, same schema).
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories=trainyard
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.conditions[-1:].type`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Waiting")].reason`
// +kubebuilder:printcolumn:name="Message",type=string,priority=1,JSONPath=`.status.conditions[?(@.type=="Waiting")].message`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name must be a DNS-1035 label (lower-case letters, digits and '-', starting with a letter): it names the job's Services and starts every pod's name",fieldPath=".metadata.name"
// +kubebuilder:validation:XValidation:rule="self.spec.tfReplicaSpecs.all(t, size(self.metadata.name) + size(t) + 2 + size(string([1, has(self.spec.tfReplicaSpecs[t].replicas) ? self.spec.tfReplicaSpecs[t].replicas : 1].max() - 1)) <= 63)",message="metadata.name is too long: pods and their Services are named <job>-<type>-<index> (e.g. <job>-worker-0), at most 63 characters counting the last index; shorten the job name",fieldPath=".metadata.name"
type TFJob struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired state of the job.
	// +required
	Spec TFJobSpec `json:"spec"`

	// status is the observed state of the job, written by Trainyard.
	// +optional
	Status JobStatus `json:"status,omitempty"`
}

// TFJobSpec is the desired state of a TFJob.
//
// +kubebuilder:validation:XValidation:rule="!has(self.activeDeadlineSeconds) || !has(self.runPolicy) || !has(self.runPolicy.activeDeadlineSeconds) || self.activeDeadlineSeconds == self.runPolicy.activeDeadlineSeconds",message="spec.activeDeadlineSeconds and spec.runPolicy.activeDeadlineSeconds differ: set only one",fieldPath=".activeDeadlineSeconds"
// +kubebuilder:validation:XValidation:rule="!has(self.backoffLimit) || !has(self.runPolicy) || !has(self.runPolicy.backoffLimit) || self.backoffLimit == self.runPolicy.backoffLimit",message="spec.backoffLimit and spec.runPolicy.backoffLimit differ: set only one",fieldPath=".backoffLimit"
// +kubebuilder:validation:XValidation:rule="!has(self.cleanPodPolicy) || !has(self.runPolicy) || !has(self.runPolicy.cleanPodPolicy) || self.cleanPodPolicy == self.runPolicy.cleanPodPolicy",message="spec.cleanPodPolicy and spec.runPolicy.cleanPodPolicy differ: set only one",fieldPath=".cleanPodPolicy"
// +kubebuilder:validation:XValidation:rule="!has(self.ttlSecondsAfterFinished) || !has(self.runPolicy) || !has(self.runPolicy.ttlSecondsAfterFinished) || self.ttlSecondsAfterFinished == self.runPolicy.ttlSecondsAfterFinished",message="spec.ttlSecondsAfterFinished and spec.runPolicy.ttlSecondsAfterFinished differ: set only one",fieldPath=".ttlSecondsAfterFinished"
// +kubebuilder:validation:XValidation:rule="has(self.runPolicy) && has(self.runPolicy.managedBy) ? has(oldSelf.runPolicy) && has(oldSelf.runPolicy.managedBy) && oldSelf.runPolicy.managedBy == self.runPolicy.managedBy : !(has(oldSelf.runPolicy) && has(oldSelf.runPolicy.managedBy))",message="spec.runPolicy.managedBy is immutable: create a new job to hand it to another controller",fieldPath=".runPolicy.managedBy"
// +kubebuilder:validation:XValidation:rule="!('Chief' in self.tfReplicaSpecs) || !has(self.tfReplicaSpecs['Chief'].replicas) || self.tfReplicaSpecs['Chief'].replicas <= 1",message="spec.tfReplicaSpecs.Chief.replicas must be 0 or 1: a job has one chief; put further replicas under Worker",fieldPath=".tfReplicaSpecs['Chief'].replicas"
// +kubebuilder:validation:XValidation:rule="!('Master' in self.tfReplicaSpecs) || !has(self.tfReplicaSpecs['Master'].replicas) || self.tfReplicaSpecs['Master'].replicas <= 1",message="spec.tfReplicaSpecs.Master.replicas must be 0 or 1: Master is the older name of the one chief; put further replicas under Worker",fieldPath=".tfReplicaSpecs['Master'].replicas"
type TFJobSpec struct {
	// runPolicy holds the restart, deadline, clean-up, scheduling and suspend policies. Its first
	// four fields may instead be written directly under spec (the older layout, and v1beta2's).
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

	// successPolicy says which replicas decide success: "" (the default: the chief, else Worker 0)
	// or AllWorkers.
	// +optional
	SuccessPolicy *SuccessPolicy `json:"successPolicy,omitempty"`

	// enableDynamicWorker lets Workers be added or removed while the job runs: each Worker's
	// TF_CONFIG then lists only itself among the Workers (a sparse cluster spec), and a Worker
	// that fails for good leaves the job running.
	// +optional
	EnableDynamicWorker bool `json:"enableDynamicWorker,omitempty"`

	// tfReplicaSpecs maps each replica type, Chief, Master, PS, Worker or Evaluator (spelled so),
	// to its pods. Chief and Master are two names of the one chief: set at most one of them, with
	// at most one replica.
	// +required
	// +kubebuilder:validation:MinProperties=1
	// +kubebuilder:validation:MaxProperties=5
	// +kubebuilder:validation:XValidation:rule="self.all(t, t in ['Chief', 'Master', 'PS', 'Worker', 'Evaluator'])",messageExpression="'spec.tfReplicaSpecs has an unknown replica type ' + self.filter(t, !(t in ['Chief', 'Master', 'PS', 'Worker', 'Evaluator']))[0] + ': the keys must be Chief, Master, PS, Worker or Evaluator, spelled so'"
	// +kubebuilder:validation:XValidation:rule="!('Chief' in self && 'Master' in self)",message="spec.tfReplicaSpecs sets both Chief and Master: they name the same role, the one chief; keep only Chief"
	TFReplicaSpecs map[ReplicaType]*ReplicaSpec `json:"tfReplicaSpecs"`
}

// TFJobList is a list of TFJobs.
//
// +kubebuilder:object:root=true
type TFJobList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []TFJob `json:"items"`
}

func init() {
	SchemeBuilder.Register(&TFJob{}, &TFJobList{})
}
