// Package kueue declares the parts of Kueue's API (kueue.x-k8s.io/v1beta2, the version Kueue
// v0.19 stores) that Trainyard reads and writes to run the T9k kinds under Kueue: the Workload a
// queued job is represented by, the ResourceFlavor its admission names, and the label and
// condition names of Kueue's job protocol (its jobframework). Kueue's module is not imported: it
// pins older k8s.io and controller-runtime versions than Trainyard's. The objects travel as
// unstructured.Unstructured; these types are what render reads from them and writes into them,
// with Kueue's JSON names, so fields they leave out survive every write.
package kueue

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the Kueue API version Trainyard speaks.
var GroupVersion = schema.GroupVersion{Group: "kueue.x-k8s.io", Version: "v1beta2"}

// Kinds and the CRD whose presence says Kueue is installed.
const (
	KindWorkload              = "Workload"
	KindResourceFlavor        = "ResourceFlavor"
	KindWorkloadPriorityClass = "WorkloadPriorityClass"
	// WorkloadCRD is the name of the Workload CRD.
	WorkloadCRD = "workloads.kueue.x-k8s.io"
)

// Labels of Kueue's job protocol.
const (
	// LabelQueueName names the LocalQueue of a job. Set by the user on the job; read by Trainyard,
	// which queues a T9k job that carries it, and by Kueue's webhooks for the kinds it integrates.
	LabelQueueName = "kueue.x-k8s.io/queue-name"
	// LabelPriorityClass names the WorkloadPriorityClass of a job. Set by the user on the job;
	// Trainyard resolves it into the Workload's priority.
	LabelPriorityClass = "kueue.x-k8s.io/priority-class"
	// LabelMaxExecTime is the most seconds a job may run admitted, over all its admissions (a
	// positive integer). Set by the user on the job; Trainyard copies it into its Workload's
	// spec.maximumExecutionTimeSeconds, and Kueue deactivates the Workload once it is used up.
	LabelMaxExecTime = "kueue.x-k8s.io/max-exec-time-seconds"
	// LabelJobUID is the UID of the job that owns a Workload. Set by Trainyard on the Workloads it
	// creates, as Kueue's jobframework does.
	LabelJobUID = "kueue.x-k8s.io/job-uid"
	// LabelPodSet names the podSet a pod was admitted under. Set by Trainyard on the pods of an
	// admitted job, as Kueue's jobframework does.
	LabelPodSet = "kueue.x-k8s.io/podset"
	// LabelPrebuiltWorkload names the Workload a job is to run under, made before the job. Set by
	// Kueue's MultiKueue on the copy of a job it creates in a worker cluster (or by a user); read
	// by Trainyard, which then adopts that Workload rather than make one. Kueue also accepts it as
	// an annotation (AnnotationPrebuiltWorkload).
	LabelPrebuiltWorkload = "kueue.x-k8s.io/prebuilt-workload-name"
	// AnnotationPrebuiltWorkload is LabelPrebuiltWorkload as an annotation (for a name longer than
	// a label value may be).
	AnnotationPrebuiltWorkload = "kueue.x-k8s.io/prebuilt-workload-name"
	// AnnotationElasticJob, "true" on a job, asks Kueue to let the job grow and shrink while
	// admitted, through workload slices (Kueue's ElasticJobsViaWorkloadSlices feature, on by
	// default from Kueue v0.18). Set by the user on the job; Trainyard puts it on the job's
	// Workloads too, where Kueue reads it.
	AnnotationElasticJob = "kueue.x-k8s.io/elastic-job"
	// AnnotationWorkloadSliceName names the first Workload of an elastic job's chain of slices. Set
	// by Trainyard on every slice of the chain, as Kueue's jobframework does.
	AnnotationWorkloadSliceName = "kueue.x-k8s.io/workload-slice-name"
	// AnnotationWorkloadSliceReplacementFor is "<namespace>/<name>" of the admitted Workload a new
	// slice replaces. Set by Trainyard on the slice that asks for an admitted elastic job's new
	// size; Kueue's scheduler then charges only what the slice adds, and once it admits the slice
	// it marks the replaced Workload Finished (FinishedWorkloadSliceReplaced).
	AnnotationWorkloadSliceReplacementFor = "kueue.x-k8s.io/workload-slice-replacement-for"
	// AnnotationPodSetRequiredTopology, AnnotationPodSetPreferredTopology and
	// AnnotationPodSetUnconstrainedTopology, on a replica type's pod template, ask Kueue's Topology
	// Aware Scheduling to place the replica type's pods within one domain of a topology level (a
	// node label such as a rack's), within one if it can, or anywhere on the flavour's topology
	// ("true"). AnnotationPodSetSliceRequiredTopology with AnnotationPodSetSliceSize asks for
	// slices of that many pods each within one domain. Set by the user; Trainyard puts them in the
	// Workload's topologyRequest, as Kueue's jobframework does for the kinds it integrates.
	AnnotationPodSetRequiredTopology      = "kueue.x-k8s.io/podset-required-topology"
	AnnotationPodSetPreferredTopology     = "kueue.x-k8s.io/podset-preferred-topology"
	AnnotationPodSetUnconstrainedTopology = "kueue.x-k8s.io/podset-unconstrained-topology"
	AnnotationPodSetSliceRequiredTopology = "kueue.x-k8s.io/podset-slice-required-topology"
	AnnotationPodSetSliceSize             = "kueue.x-k8s.io/podset-slice-size"
	// AnnotationPodSetGroupName, beside a required or preferred topology, groups two replica types
	// (one of a single pod, say a master, and its workers) that Kueue places together, in one
	// domain. Set by the user; Trainyard puts it in the Workload's topologyRequest.
	AnnotationPodSetGroupName = "kueue.x-k8s.io/podset-group-name"
	// AnnotationWorkload names the Workload a pod was admitted under. Set by Trainyard on the pods
	// of a podSet Kueue placed by topology, where Kueue's topology ungater looks for them.
	AnnotationWorkload = "kueue.x-k8s.io/workload"
	// PodConditionTerminatedByKueue is the condition Kueue's topology node controller sets, with
	// phase Failed, on a pod it placed by topology on a node that can no longer run it (tainted or
	// not ready) and that the scheduler could not bind there; Kueue then places the pod set anew.
	// Read by Trainyard as a disruption, not the replica's failure.
	PodConditionTerminatedByKueue = "TerminatedByKueue"
	// TopologySchedulingGate holds a pod Kueue placed by topology until Kueue's topology ungater has
	// given it the node selector of its domain. Set by Trainyard on such pods, removed by Kueue.
	TopologySchedulingGate = "kueue.x-k8s.io/topology"
	// LabelMultiKueueOrigin names the manager cluster that dispatched a job or Workload. Set by
	// Kueue's MultiKueue on what it creates in a worker cluster.
	LabelMultiKueueOrigin = "kueue.x-k8s.io/multikueue-origin"
)

// ManagedByMultiKueue is the spec.managedBy value of a job that Kueue's MultiKueue dispatches to a
// worker cluster (Kueue's MultiKueueControllerName).
const ManagedByMultiKueue = "kueue.x-k8s.io/multikueue"

// Workload condition types (Kueue's WorkloadQuotaReserved and so on).
const (
	WorkloadQuotaReserved = "QuotaReserved"
	WorkloadAdmitted      = "Admitted"
	WorkloadEvicted       = "Evicted"
	WorkloadRequeued      = "Requeued"
	WorkloadFinished      = "Finished"
	WorkloadPodsReady     = "PodsReady"
	// WorkloadDeactivationTarget is set True by Kueue on a Workload it is about to deactivate,
	// its reason the cause (MaximumExecutionTimeExceeded, RequeuingLimitExceeded); Kueue then sets
	// spec.active false, and removes the condition when it evicts the Workload (Evicted reason
	// Deactivated<Cause>).
	WorkloadDeactivationTarget = "DeactivationTarget"
)

// Workload condition reasons that Trainyard writes.
const (
	// Finished reasons.
	FinishedSucceeded     = "Succeeded"
	FinishedFailed        = "Failed"
	FinishedFailedToStart = "FailedToStart"
	// FinishedOutOfSync: a prebuilt Workload does not match its job (Kueue's
	// WorkloadFinishedReasonOutOfSync); MultiKueue then dispatches the job again.
	FinishedOutOfSync = "OutOfSync"
	// FinishedWorkloadSliceReplaced: Kueue admitted the slice that replaces the Workload (written
	// by Kueue's scheduler, not by Trainyard).
	FinishedWorkloadSliceReplaced = "WorkloadSliceReplaced"
	// QuotaReserved=False once an evicted Workload's admission is released.
	QuotaReservedPending = "Pending"
	// PodsReady reasons.
	PodsReadyStarted         = "Started"
	PodsReadyRecovered       = "Recovered"
	PodsReadyWaitForStart    = "WaitForStart"
	PodsReadyWaitForRecovery = "WaitForRecovery"
	// Evicted reasons after which the Workload is queued again at once (Requeued=True).
	EvictedByPreemption   = "Preempted"
	EvictedByNodeFailures = "NodeFailures"
	// EvictedByDeactivation is the eviction of an inactive Workload; Kueue's own deactivations
	// (the re-queuing limit exceeded, say) append their cause: DeactivatedDueTo<Cause>.
	EvictedByDeactivation = "Deactivated"
	// DeactivatedForMaxExecTime is the cause of Kueue's deactivation of a Workload admitted for its
	// spec.maximumExecutionTimeSeconds (the DeactivationTarget condition's reason).
	DeactivatedForMaxExecTime = "MaximumExecutionTimeExceeded"
)

// PriorityClassRef groups and kinds.
const (
	PriorityClassGroupKueue = "kueue.x-k8s.io"
	PriorityClassGroupPod   = "scheduling.k8s.io"
	PriorityClassKindPod    = "PriorityClass"
)

// Workload is what Trainyard reads and writes of a Kueue Workload.
type Workload struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              WorkloadSpec   `json:"spec"`
	Status            WorkloadStatus `json:"status,omitempty"`
}

// WorkloadSpec is the queue, the priority and the pod sets a Workload asks quota for.
type WorkloadSpec struct {
	PodSets          []PodSet          `json:"podSets"`
	QueueName        string            `json:"queueName,omitempty"`
	PriorityClassRef *PriorityClassRef `json:"priorityClassRef,omitempty"`
	Priority         *int32            `json:"priority,omitempty"`
	// Active false asks Kueue to evict the Workload and keep it out of the queue.
	Active *bool `json:"active,omitempty"`
	// MaximumExecutionTimeSeconds, when set, is how long the Workload may stay admitted, summed
	// over its admissions: Kueue deactivates it once that is used up.
	MaximumExecutionTimeSeconds *int32 `json:"maximumExecutionTimeSeconds,omitempty"`
}

// PodSet is a group of identical pods: one per replica type.
type PodSet struct {
	Name            string                 `json:"name"`
	Template        corev1.PodTemplateSpec `json:"template"`
	Count           int32                  `json:"count"`
	MinCount        *int32                 `json:"minCount,omitempty"`
	TopologyRequest *TopologyRequest       `json:"topologyRequest,omitempty"`
}

// TopologyRequest is how a podSet's pods are to be placed by Kueue's Topology Aware Scheduling:
// at most one of Required, Preferred and Unconstrained, and PodIndexLabel, the pod label that
// holds each pod's index (Kueue places pods of neighbouring indexes in neighbouring domains).
type TopologyRequest struct {
	Required                    *string `json:"required,omitempty"`
	Preferred                   *string `json:"preferred,omitempty"`
	Unconstrained               *bool   `json:"unconstrained,omitempty"`
	PodIndexLabel               *string `json:"podIndexLabel,omitempty"`
	PodSetSliceRequiredTopology *string `json:"podSetSliceRequiredTopology,omitempty"`
	PodSetSliceSize             *int32  `json:"podSetSliceSize,omitempty"`
	PodSetGroupName             *string `json:"podSetGroupName,omitempty"`
}

// PriorityClassRef names the priority class a Workload's priority comes from.
type PriorityClassRef struct {
	Group string `json:"group"`
	Kind  string `json:"kind"`
	Name  string `json:"name"`
}

// WorkloadStatus is what Kueue decided about a Workload.
type WorkloadStatus struct {
	Conditions      []metav1.Condition    `json:"conditions,omitempty"`
	Admission       *Admission            `json:"admission,omitempty"`
	AdmissionChecks []AdmissionCheckState `json:"admissionChecks,omitempty"`
	// UnhealthyNodes are nodes of a topology assignment that failed (tainted, not ready, gone)
	// while Kueue's scheduler looks for others in their place.
	UnhealthyNodes []UnhealthyNode `json:"unhealthyNodes,omitempty"`
	// AccumulatedPastExecutionTimeSeconds is the time the Workload was admitted before its last
	// eviction, summed; the current admission's time is counted from its Admitted condition.
	AccumulatedPastExecutionTimeSeconds *int32 `json:"accumulatedPastExecutionTimeSeconds,omitempty"`
}

// UnhealthyNode names a failed node of a Workload's topology assignment.
type UnhealthyNode struct {
	Name string `json:"name"`
}

// Admission is the ClusterQueue and flavours a Workload was given quota in.
type Admission struct {
	ClusterQueue      string             `json:"clusterQueue"`
	PodSetAssignments []PodSetAssignment `json:"podSetAssignments"`
}

// PodSetAssignment is the flavour of each resource of one pod set, and how many pods were admitted.
type PodSetAssignment struct {
	Name    string            `json:"name"`
	Flavors map[string]string `json:"flavors,omitempty"`
	Count   *int32            `json:"count,omitempty"`
	// TopologyAssignment, when set, says Kueue placed the podSet by topology: its pods wait behind
	// TopologySchedulingGate until Kueue gives each the node selector of its domain.
	TopologyAssignment *TopologyAssignment `json:"topologyAssignment,omitempty"`
}

// TopologyAssignment is where Kueue placed a podSet: the levels of its Topology (node label keys,
// highest first) and the domains, in slices of Kueue's compact form (Domains reads them).
type TopologyAssignment struct {
	Levels []string                  `json:"levels,omitempty"`
	Slices []TopologyAssignmentSlice `json:"slices,omitempty"`
}

// TopologyAssignmentSlice is DomainCount domains: a value for each level (the same for all, or
// one each) and a pod count (the same for all, or one each).
type TopologyAssignmentSlice struct {
	DomainCount    int32                          `json:"domainCount,omitempty"`
	ValuesPerLevel []TopologyAssignmentSliceLevel `json:"valuesPerLevel,omitempty"`
	PodCounts      TopologyAssignmentPodCounts    `json:"podCounts,omitempty"`
}

// TopologyAssignmentSliceLevel is one level's values in a slice: Universal for every domain, or
// each domain's Prefix+root+Suffix.
type TopologyAssignmentSliceLevel struct {
	Universal  *string                   `json:"universal,omitempty"`
	Individual *TopologyIndividualValues `json:"individual,omitempty"`
}

// TopologyIndividualValues is a value for each domain of a slice: Prefix+root+Suffix.
type TopologyIndividualValues struct {
	Prefix *string  `json:"prefix,omitempty"`
	Suffix *string  `json:"suffix,omitempty"`
	Roots  []string `json:"roots,omitempty"`
}

// TopologyAssignmentPodCounts is how many pods a slice's domains get: Universal each, or one
// count each.
type TopologyAssignmentPodCounts struct {
	Universal  *int32  `json:"universal,omitempty"`
	Individual []int32 `json:"individual,omitempty"`
}

// TopologyDomain is one domain of an assignment: its value at each level, and its pods.
type TopologyDomain struct {
	Values []string
	Count  int32
}

// Domains lists the assignment's domains in Kueue's order. A slice that does not hold what its
// domainCount says (Kueue's schema refuses it) ends the list.
func (a *TopologyAssignment) Domains() []TopologyDomain {
	var out []TopologyDomain
	for _, s := range a.Slices {
		if len(s.ValuesPerLevel) != len(a.Levels) {
			return out
		}
		for i := range int(s.DomainCount) {
			d := TopologyDomain{Count: -1}
			switch {
			case s.PodCounts.Universal != nil:
				d.Count = *s.PodCounts.Universal
			case i < len(s.PodCounts.Individual):
				d.Count = s.PodCounts.Individual[i]
			}
			for _, l := range s.ValuesPerLevel {
				switch in := l.Individual; {
				case l.Universal != nil:
					d.Values = append(d.Values, *l.Universal)
				case in != nil && i < len(in.Roots):
					d.Values = append(d.Values, deref(in.Prefix)+in.Roots[i]+deref(in.Suffix))
				}
			}
			if d.Count < 0 || len(d.Values) != len(a.Levels) {
				return out
			}
			out = append(out, d)
		}
	}
	return out
}

// ExecutionTime is how long the Workload has been admitted at now, as Kueue counts it against its
// spec.maximumExecutionTimeSeconds: the time of its earlier admissions, and the current one's since
// its Admitted condition last turned True.
func (w *Workload) ExecutionTime(now time.Time) time.Duration {
	var used time.Duration
	if p := w.Status.AccumulatedPastExecutionTimeSeconds; p != nil {
		used = time.Duration(*p) * time.Second
	}
	if c := meta.FindStatusCondition(w.Status.Conditions, WorkloadAdmitted); c != nil && c.Status == metav1.ConditionTrue && now.After(c.LastTransitionTime.Time) {
		used += now.Sub(c.LastTransitionTime.Time)
	}
	return used
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// AdmissionCheckState is an admission check's verdict, with the changes it asks of the pods.
type AdmissionCheckState struct {
	Name          string         `json:"name"`
	State         string         `json:"state"`
	PodSetUpdates []PodSetUpdate `json:"podSetUpdates,omitempty"`
}

// PodSetUpdate is what an admission check adds to the pods of one pod set.
type PodSetUpdate struct {
	Name         string              `json:"name"`
	Labels       map[string]string   `json:"labels,omitempty"`
	Annotations  map[string]string   `json:"annotations,omitempty"`
	NodeSelector map[string]string   `json:"nodeSelector,omitempty"`
	Tolerations  []corev1.Toleration `json:"tolerations,omitempty"`
}

// ResourceFlavor is what Trainyard reads of a Kueue ResourceFlavor: the node labels and
// tolerations an admitted pod set's pods get.
type ResourceFlavor struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              ResourceFlavorSpec `json:"spec,omitempty"`
}

// ResourceFlavorSpec is the nodes a flavour stands for.
type ResourceFlavorSpec struct {
	NodeLabels  map[string]string   `json:"nodeLabels,omitempty"`
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`
}
