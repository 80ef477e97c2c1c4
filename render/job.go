// Package render decides everything a training job creates.
//
// Render turns one job, the objects it owns as observed, the counters its status holds and the
// current time into the complete desired state: pods, the headless Service, the PodGroup, the
// TensorBoard Deployment and Service, plus the decisions the observations imply (pods to delete and
// why, restarts and backoff, the job's outcome, the next time something is due) and warnings for
// events. It never talks to a cluster, reads no clock and uses no randomness: the same input gives
// the same output.
//
// Every API kind is first converted into Job, the one model the rest of the package reads, so that
// the T9k kinds and the Kubeflow kinds share one core; kubeflow.go holds where they differ.
package render

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
	"github.com/trainyard/trainyard/apis/kueue"
)

// Framework is the distributed-training contract a job's pods follow.
type Framework string

const (
	PyTorch    Framework = "PyTorch"
	TensorFlow Framework = "TensorFlow"
)

// DefaultClusterDomain is the cluster's DNS domain when Input.ClusterDomain is empty, as the
// kubelet's --cluster-domain defaults it.
const DefaultClusterDomain = "cluster.local"

// Defaults that the API leaves to the controller.
const (
	DefaultBackoffLimit  int32 = 3
	DefaultPyTorchPort   int32 = 29500
	DefaultTFPort        int32 = 2222
	DefaultRdzvBackend         = "c10d"
	TensorBoardPort      int32 = 6006
	GPUResource                = corev1.ResourceName("nvidia.com/gpu")
	PyTorchContainerName       = "pytorch"
	TFContainerName            = "tensorflow"
)

// Job is a training job as render sees it, whatever API kind it came from.
type Job struct {
	APIVersion string
	Kind       string
	Name       string
	Namespace  string
	UID        types.UID
	// Created is the job's creationTimestamp (which of two same-named jobs keeps the name).
	Created metav1.Time

	Framework Framework
	// Replicas are the replica types in spec order, with counts already resolved (elastic split).
	Replicas []ReplicaType

	Torchrun *batch.TorchrunConfig
	Elastic  *Elastic
	// TorchrunUnset: spec.torchrunConfig has settings but says nothing of enabled, so torchrun is
	// off (the API's default) and the settings do nothing: render warns.
	TorchrunUnset bool

	BackoffLimit          int32
	ActiveDeadlineSeconds *int64
	CleanUpPolicy         batch.CleanUpPolicy
	// RestartScope is the scope the user chose (runPolicy.restartScope; the Kubeflow kinds'
	// annotation, as written); empty means what can recover (restartScopeOf).
	RestartScope batch.RestartScope

	Debug       bool
	DebugSpecs  map[string]batch.ReplicaDebugSet
	Pause       bool
	ResumeSpecs map[string]batch.ResumeSpec

	Scheduler   *batch.SchedulePolicy
	TensorBoard *batch.TensorBoardSpec

	// Kubeflow is set for the kubeflow.org kinds: what their contract adds (kubeflow.go).
	Kubeflow *Kubeflow
	// Queue is set for a T9k job labelled kueue.x-k8s.io/queue-name: it runs only once Kueue
	// admits its Workload (queue.go).
	Queue *Queue
	// Dispatched is set for a T9k job whose spec.managedBy is kueue.x-k8s.io/multikueue: Kueue's
	// MultiKueue runs a copy of it in a worker cluster and copies that copy's status back, so
	// here it has its Workload and nothing else (multikueue.go).
	Dispatched bool

	// Status is what the job's status already holds: the counters and the phase render builds on.
	Status batch.TrainingJobStatus
}

// ReplicaType is one entry of spec.replicaSpecs.
type ReplicaType struct {
	Type          string
	Replicas      int32
	ScalingWeight int32
	RestartPolicy batch.RestartPolicy
	Template      *corev1.PodTemplateSpec
}

// Elastic is a PyTorch job's resolved elastic configuration.
type Elastic struct {
	Min, Max, Expected int32
}

// PodCount is the number of pods the job wants now: the sum of its replica types' counts.
func (j *Job) PodCount() int32 {
	var n int32
	for _, t := range j.Replicas {
		n += t.Replicas
	}
	return n
}

// Resumed reports whether the job has been paused before: its pods then start with the
// resumeSpecs. The Paused condition stays in the status (False) after a resume.
func (j *Job) Resumed() bool {
	return meta.FindStatusCondition(j.Status.Conditions, batch.ConditionPaused) != nil
}

// Finished reports whether the job's status already holds a terminal phase. Terminal phases are
// sticky: a finished job never creates pods again.
func (j *Job) Finished() bool {
	return j.Status.Phase == batch.JobSucceeded || j.Status.Phase == batch.JobFailed
}

// Input is everything render needs. None of it is fetched by render.
type Input struct {
	Job Job
	// Pods are the pods the job owns, as observed. Render only reads them (they may be the
	// cache's own objects).
	Pods []*corev1.Pod
	// NameTakenBy names ("PyTorchJob mnist") a job of another kind in the namespace with this
	// job's name, created before it: the four kinds name their pods, Services and PodGroups alike
	// (<name>-<type>-<index>, <name>), so this job must create nothing while that one exists.
	NameTakenBy string
	// InstalledCRDs names the CustomResourceDefinitions in the cluster that render cares about
	// (the PodGroup kinds), e.g. "podgroups.scheduling.volcano.sh".
	InstalledCRDs map[string]bool
	// Now is the current time.
	Now time.Time
	// ClusterDomain is the cluster's DNS domain (the kubelet's --cluster-domain); empty means
	// DefaultClusterDomain. torchrun's rendezvous endpoint is a fully qualified name in it.
	ClusterDomain string
	// Kueue is what the controller observed of a queued job (Job.Queue set) in Kueue: its Workload,
	// the flavours of its admission, its priority.
	Kueue *KueueObservation
	// OnlyPodsToCreate makes Output.Pods hold only the pods listed in Decisions.Create, rather than
	// every desired pod: all a controller needs that creates pods once and never patches them.
	// The decisions are the same either way.
	OnlyPodsToCreate bool
	// MaxPodsToCreate, with OnlyPodsToCreate, bounds Output.Pods to the first this many pods of
	// Decisions.Create (zero: no bound). A controller that creates a 5,000-pod job a slice per
	// round then never holds all its pods in memory at once. The decisions are the same either way.
	MaxPodsToCreate int
	// MaxUnscheduledPods, above zero, bounds how far a job's pod creation runs ahead of the
	// scheduler: a missing pod is created only while fewer than this many of the job's pods wait
	// for it (unscheduled); the rest are held (Decisions.HeldForScheduler) and created as earlier
	// ones are bound. A gang-scheduled job is never held: its scheduler needs every pod. The
	// kube-scheduler binds through its API client at a bounded rate (50 a second by default) and
	// in the order it placed the pods, so pods created faster than that queue in it, and a later
	// job's pods wait behind them whatever their priority (docs/design.md, "Pod creation paced to
	// the scheduler").
	MaxUnscheduledPods int
	// SchedulerRoom, when set with MaxUnscheduledPods, is what the operator's bound on pods waiting
	// for the scheduler, for all jobs together, leaves beside the other jobs' waiting pods. A job
	// with more pods missing than MaxUnscheduledPods (a big job) keeps at most that many of its
	// pods waiting, and at least one, whose binding brings its next round; a job whose missing pods
	// fit in MaxUnscheduledPods creates them all (a small job, a few replacements): its pods are
	// few, and holding them back would only delay them (docs/design.md, "Pod creation paced to the
	// scheduler").
	SchedulerRoom *int
	// DeletedPods are pods of the job whose deletion someone else started (an eviction, a
	// preemption, kubectl delete): the controller saw their deletionTimestamp appear, or their
	// removal, without having asked for it. Each is as last observed and may still be in Pods
	// (being deleted). Render restarts them as disruptions.
	DeletedPods []corev1.Pod
	// Nodes are the nodes the job's pods are bound to, by name, as their Ready condition says,
	// and those the templates name in spec.nodeName (Missing when the cluster has no such node);
	// nil when no node is observed (a pod's node is then never taken for lost).
	Nodes map[string]NodeState
	// NodeLostAfter is how long a node may be NotReady or unreachable before its pods are taken
	// for lost and force-deleted; zero means DefaultNodeLostAfter.
	NodeLostAfter time.Duration
}

// FromPyTorchTrainingJob converts a PyTorchTrainingJob into the render model.
func FromPyTorchTrainingJob(in *batch.PyTorchTrainingJob) Job {
	j := commonJob(in.ObjectMeta, "PyTorchTrainingJob", PyTorch, in.Spec.RunMode, in.Spec.RunPolicy, in.Spec.Scheduler, in.Spec.TensorboardSpec, in.Status)
	for i := range in.Spec.ReplicaSpecs {
		r := &in.Spec.ReplicaSpecs[i]
		j.Replicas = append(j.Replicas, replicaType(r.Type, &r.ReplicaTemplate, deref(r.ScalingWeight, 0)))
	}
	if t := in.Spec.TorchrunConfig; t != nil && enabled(t.Enabled, t.Enable) {
		j.Torchrun = t
	} else if t != nil && t.Enabled == nil && t.Enable == nil {
		j.TorchrunUnset = t.ProcPerNode != "" || t.MaxRestarts != nil || t.RdzvBackend != "" || len(t.ExtraOptions) > 0
	}
	if e := in.Spec.Elastic; e != nil && enabled(e.Enabled, e.Enable) && j.Torchrun != nil {
		j.Elastic = resolveElastic(e)
		j.Replicas = splitElastic(j.Replicas, j.Elastic.Expected)
	}
	j.Dispatched = deref(in.Spec.ManagedBy, "") == kueue.ManagedByMultiKueue
	return j
}

// FromTensorFlowTrainingJob converts a TensorFlowTrainingJob into the render model.
func FromTensorFlowTrainingJob(in *batch.TensorFlowTrainingJob) Job {
	j := commonJob(in.ObjectMeta, "TensorFlowTrainingJob", TensorFlow, in.Spec.RunMode, in.Spec.RunPolicy, in.Spec.Scheduler, in.Spec.TensorboardSpec, in.Status)
	for i := range in.Spec.ReplicaSpecs {
		r := &in.Spec.ReplicaSpecs[i]
		j.Replicas = append(j.Replicas, replicaType(string(r.Type), &r.ReplicaTemplate, 0))
	}
	j.Dispatched = deref(in.Spec.ManagedBy, "") == kueue.ManagedByMultiKueue
	return j
}

func commonJob(m metav1.ObjectMeta, kind string, fw Framework, mode *batch.RunMode, policy *batch.RunPolicy,
	sched *batch.SchedulePolicy, tb *batch.TensorBoardSpec, status batch.TrainingJobStatus) Job {
	j := Job{
		APIVersion:    batch.GroupVersion.String(),
		Kind:          kind,
		Name:          m.Name,
		Namespace:     m.Namespace,
		UID:           m.UID,
		Created:       m.CreationTimestamp,
		Framework:     fw,
		BackoffLimit:  DefaultBackoffLimit,
		CleanUpPolicy: batch.CleanUpPolicyUnfinished,
		Scheduler:     sched,
		TensorBoard:   tb,
		Queue:         queueOf(m),
		Status:        status,
	}
	if policy != nil {
		j.BackoffLimit = deref(policy.BackoffLimit, DefaultBackoffLimit)
		j.ActiveDeadlineSeconds = policy.ActiveDeadlineSeconds
		j.RestartScope = policy.RestartScope
		if policy.CleanUpPolicy != "" {
			j.CleanUpPolicy = normalizeCleanUp(policy.CleanUpPolicy)
		}
	}
	if mode != nil {
		if d := mode.Debug; d != nil && enabled(d.Enabled, d.Enable) {
			j.Debug = true
			j.DebugSpecs = map[string]batch.ReplicaDebugSet{}
			for _, s := range d.ReplicaSpecs {
				j.DebugSpecs[s.Type] = s
			}
		}
		if p := mode.Pause; p != nil {
			j.Pause = enabled(p.Enabled, p.Enable)
			j.ResumeSpecs = map[string]batch.ResumeSpec{}
			for _, s := range p.ResumeSpecs {
				j.ResumeSpecs[s.Type] = s
			}
		}
	}
	return j
}

func replicaType(typ string, t *batch.ReplicaTemplate, weight int32) ReplicaType {
	policy := t.RestartPolicy
	if policy == "" {
		policy = batch.RestartPolicyNever
	}
	return ReplicaType{
		Type:          typ,
		Replicas:      deref(t.Replicas, 1),
		ScalingWeight: weight,
		RestartPolicy: policy,
		Template:      &t.Template,
	}
}

// enabled reads a flag that has two spellings; admission refuses them set differently.
func enabled(canonical, alias *bool) bool {
	if canonical != nil {
		return *canonical
	}
	return alias != nil && *alias
}

func normalizeCleanUp(p batch.CleanUpPolicy) batch.CleanUpPolicy {
	switch p {
	case "all":
		return batch.CleanUpPolicyAll
	case "unfinished":
		return batch.CleanUpPolicyUnfinished
	case "none":
		return batch.CleanUpPolicyNone
	}
	return p
}

func deref[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}
