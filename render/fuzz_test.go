package render

import (
	"bytes"
	"encoding/binary"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
	kubeflowv1 "github.com/trainyard/trainyard/apis/kubeflow/v1"
)

// The fuzz targets build jobs of every kind from a few fuzzed numbers and strings, with the pods
// such a job could own as observed, and check what must hold for every input render accepts
// (checkRender). Render may refuse an input with an error; it must never panic.
//
// A job is fuzzed as a fuzzJob: every choice is a small number read from the fuzzer's bytes, so
// the fuzzer spends its time in render's decisions (restarts, pauses, elastic splits, gangs,
// clean-up) rather than in YAML syntax. FuzzReadJob covers the YAML path.
//
// `make test-fuzz` runs each target for 10 s; FUZZTIME=10m make test-fuzz for longer.

// fuzzBase is the time fuzzed jobs start at; the fuzzed now is an offset from it.
var fuzzBase = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// fuzzSeed is one seed of a job target: readable here, encoded to the targets' arguments.
type fuzzSeed struct {
	name, custom string
	job          fuzzJob
	pods         []fuzzPod
	deadline     int64
	elapsedMilli int64
}

func (s fuzzSeed) add(f *testing.F) {
	f.Add(s.name, s.custom, s.job.encode(), encodePods(s.pods), s.deadline, s.elapsedMilli)
}

// fuzzJob is the shape of a fuzzed job. The targets decode it from bytes; seeds encode it.
type fuzzJob struct {
	Mode    uint32 // mode* bits
	Sched   uint8  // 0 none, 1 T9k scheduler, 2 Volcano, 3 coscheduling
	CleanUp uint8  // index into cleanUpPolicies (T9k) or cleanPodPolicies (Kubeflow)
	Procs   uint8  // index into procPerNodes (T9k) or nprocPerNodes (Kubeflow)
	// ElasticMin, ElasticMax and ElasticExpected are counts; 0 leaves the field unset.
	ElasticMin, ElasticMax, ElasticExpected int8
	Phase                                   uint8 // index into fuzzPhases: the stored status
	BackoffLimit, BackoffCount              int8
	CRDs                                    uint8 // bits: PodGroup CRDs installed (T9k, Volcano, coscheduling)
	Extra                                   uint8 // extra* bits, the Kubeflow kinds' own fields
	// DeadlineExp scales the fuzzed deadline by 10^(DeadlineExp % 19). Note: Go's fuzzer changes
	// an int64 argument by small steps only; a byte reaches every magnitude in one mutation.
	DeadlineExp uint8
	Types       []fuzzType
}

// fuzzType is one replica type of a fuzzed job.
type fuzzType struct {
	Kind     uint8 // index into the kind's type names; past the end, the fuzzed custom type
	Replicas int8
	Restart  uint8 // index into restartPolicies
	Weight   uint8 // scalingWeight (T9k PyTorch)
	Template uint8 // tmpl* bits
}

// Bits of fuzzJob.Mode.
const (
	modeDebug = 1 << iota
	modeDebugAlias
	modeDebugSpecs
	modePause
	modePauseAlias
	modeResumeSpecs
	modeResumed // the status holds a Paused condition: the job was paused before
	modeTorchrun
	modeTorchrunAlias
	modeTorchrunExtras
	modeElastic
	modeElasticAlias
	modeTensorBoard
	modeTensorBoardOddPaths
	modeDeadline
	modeStartTime
	modeCompletionTime
	modeBackoffLimit
	modeScopeGang     // runPolicy.restartScope Gang (the annotation on the Kubeflow kinds)
	modeScopeReplica  // Replica; with modeScopeGang, a value no schema allows
	modeGangRestarted // the status says gangRestarts 1 to 3 (from BackoffCount)
)

// Bits of fuzzJob.Extra, for the Kubeflow kinds.
const (
	extraMinAvailable = 1 << iota
	extraMinResources
	extraElasticPolicy
	extraMetrics
	extraRendezvous
	extraNprocInElasticPolicy
	extraAllWorkers
	extraTTL
)

// Bits of fuzzType.Template.
const (
	tmplOtherContainerName = 1 << iota // the training container is the first, whatever its name
	tmplSidecarFirst
	tmplInitContainer
	tmplEnvCollision // the user sets variables the contract sets
	tmplRestartPolicy
	tmplSchedulerName
	tmplGPUAndPort
	tmplNoContainers
)

var (
	fuzzPhases = []batch.JobPhase{"", batch.JobPending, batch.JobRunning, batch.JobPaused, batch.JobResuming,
		batch.JobSucceeded, batch.JobFailed, batch.JobUnknown}
	restartPolicies = []batch.RestartPolicy{"", batch.RestartPolicyNever, batch.RestartPolicyOnFailure,
		batch.RestartPolicyAlways, batch.RestartPolicyExitCode, "Sometimes"}
	cleanUpPolicies  = []batch.CleanUpPolicy{"", "All", "Unfinished", "None", "all", "unfinished", "none", "Bogus"}
	cleanPodPolicies = []kubeflowv1.CleanPodPolicy{"", "All", "Running", "None", "bogus"}
	procPerNodes     = []string{"", "gpu", "cpu", "auto", "1", "4", "0", "-3", "99999999999"}
	nprocPerNodes    = []string{"", "auto", "cpu", "gpu", "2", "0", "x"}
	exitCodes        = []int32{0, 1, 2, 126, 127, 130, 137, 138, 143, 255, -1}
	// Replica type names per kind; an index past the end picks the fuzzed custom type.
	// (tensorFlowTypes: the package's, the schema's enum.)
	pyTorchTypes   = []string{"master", "worker", "launcher"}
	pyTorchJobKeys = []kubeflowv1.ReplicaType{kubeflowv1.ReplicaTypeMaster, kubeflowv1.ReplicaTypeWorker}
	tfJobKeys      = []kubeflowv1.ReplicaType{kubeflowv1.ReplicaTypeChief, kubeflowv1.ReplicaTypeMaster,
		kubeflowv1.ReplicaTypePS, kubeflowv1.ReplicaTypeWorker, kubeflowv1.ReplicaTypeEvaluator}
)

// fuzzMaxTypes bounds the replica types of a fuzzed job (the T9k kinds allow 16; six reach
// every rule at a fraction of the cost).
const fuzzMaxTypes = 6

// fuzzBytes hands out bytes; once they run out, every byte is 0.
type fuzzBytes []byte

func (b *fuzzBytes) next() byte {
	if len(*b) == 0 {
		return 0
	}
	v := (*b)[0]
	*b = (*b)[1:]
	return v
}

func (b *fuzzBytes) left() int { return len(*b) }

func decodeJob(data []byte) fuzzJob {
	b := fuzzBytes(data)
	var mode [4]byte
	for i := range mode {
		mode[i] = b.next()
	}
	s := fuzzJob{
		Mode: binary.LittleEndian.Uint32(mode[:]), Sched: b.next(), CleanUp: b.next(), Procs: b.next(),
		ElasticMin: int8(b.next()), ElasticMax: int8(b.next()), ElasticExpected: int8(b.next()),
		Phase: b.next(), BackoffLimit: int8(b.next()), BackoffCount: int8(b.next()), CRDs: b.next(), Extra: b.next(),
		DeadlineExp: b.next(),
	}
	n := int(b.next()) % (fuzzMaxTypes + 1)
	for range n {
		s.Types = append(s.Types, fuzzType{Kind: b.next(), Replicas: int8(b.next()), Restart: b.next(), Weight: b.next(), Template: b.next()})
	}
	return s
}

func (s fuzzJob) encode() []byte {
	out := binary.LittleEndian.AppendUint32(nil, s.Mode)
	out = append(out, s.Sched, s.CleanUp, s.Procs, byte(s.ElasticMin), byte(s.ElasticMax), byte(s.ElasticExpected),
		s.Phase, byte(s.BackoffLimit), byte(s.BackoffCount), s.CRDs, s.Extra, s.DeadlineExp, byte(len(s.Types)))
	for _, t := range s.Types {
		out = append(out, t.Kind, byte(t.Replicas), t.Restart, t.Weight, t.Template)
	}
	return out
}

// count maps a fuzzed byte to a count: 0 to 12 (two-digit indices, few pods), or negative, which
// admission refuses and render must refuse too.
func count(v int8) int32 {
	if v < 0 {
		return int32(v)
	}
	return int32(v % 13)
}

func pick[T any](list []T, i uint8) T { return list[int(i)%len(list)] }

func (s fuzzJob) has(bit uint32) bool { return s.Mode&bit != 0 }

// fuzzPod is one observed pod. Its name follows its labels, as render names pods; a pod without
// usable labels gets a name of its own.
type fuzzPod struct {
	Type  uint8 // index into the job's types; one past: an unknown type; further: no labels
	Index uint8 // the replica-index label: 0 to 15, or from 0xf0 a malformed label
	Phase uint8 // index into podPhases
	Exit  uint8 // 0: no terminated state, else index-1 into exitCodes
	Flags uint8 // pod* bits
	More  uint8 // more* bits: who deleted it, its node, its gang
}

// Bits of fuzzPod.Flags.
const (
	podDeleting = 1 << iota
	podEvicted
	podTaintManager // a DisruptionTarget condition: its node is gone
	podPreempted
	podNodeLostReason
	podDebugMode
	podImmediateMode
	podOtherContainer // the status reports a container other than the training one
)

// Bits of fuzzPod.More.
const (
	moreDeletedByOther = 1 << iota // in Input.DeletedPods, and still observed
	moreGone                       // in Input.DeletedPods only: someone else deleted it and it is gone
	moreNodeLost                   // on a node NotReady for an hour
	moreNodeNotReady               // on a node NotReady for 10 s
	moreNodeReady                  // on a Ready node
	moreGang1                      // created under gangRestarts 1
	moreGang3                      // created under gangRestarts 3 (with moreGang1: a malformed annotation)
)

var (
	podPhases            = []corev1.PodPhase{corev1.PodPending, corev1.PodRunning, corev1.PodSucceeded, corev1.PodFailed, corev1.PodUnknown, ""}
	malformedIndexLabels = []string{"-1", "x", "", "4294967296", "+1", "01"}
)

func encodePods(pods []fuzzPod) []byte {
	var out []byte
	for _, p := range pods {
		out = append(out, p.Type, p.Index, p.Phase, p.Exit, p.Flags, p.More)
	}
	return out
}

// observedPods decodes the observed pods of job from data: at most 24, with distinct names, and
// those someone else deleted (some still observed, some gone).
func observedPods(job *Job, data []byte) (pods []*corev1.Pod, deleted []corev1.Pod) {
	b := fuzzBytes(data)
	names := map[string]bool{}
	for i := 0; b.left() > 0 && i < 24; i++ {
		p := fuzzPod{Type: b.next(), Index: b.next(), Phase: b.next(), Exit: b.next(), Flags: b.next(), More: b.next()}
		pod := fuzzedPod(job, p, i)
		if p.More&(moreDeletedByOther|moreGone) != 0 {
			deleted = append(deleted, pod)
		}
		if names[pod.Name] || p.More&moreGone != 0 {
			continue // a namespace holds one pod of a name
		}
		names[pod.Name] = true
		pods = append(pods, pod.DeepCopy())
	}
	return pods, deleted
}

// fuzzNodes are the nodes fuzzed pods are bound to: one Ready, one NotReady within the bound, one
// NotReady beyond it.
func fuzzNodes(now time.Time) map[string]NodeState {
	return map[string]NodeState{
		"ready":     {Ready: corev1.ConditionTrue, Since: fuzzBase.Add(-time.Hour)},
		"not-ready": {Ready: corev1.ConditionFalse, Since: now.Add(-10 * time.Second)},
		"lost":      {Ready: corev1.ConditionUnknown, Since: now.Add(-time.Hour)},
	}
}

func fuzzedPod(job *Job, p fuzzPod, n int) corev1.Pod {
	container := PyTorchContainerName
	if job.Framework == TensorFlow {
		container = TFContainerName
	}
	pod := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: job.Namespace, UID: types.UID("uid-" + strconv.Itoa(n)),
			Labels:            map[string]string{batch.LabelOwnerKind: job.Kind, batch.LabelOwnerName: job.Name},
			Annotations:       map[string]string{},
			CreationTimestamp: metav1.NewTime(fuzzBase.Add(time.Duration(p.Index) * time.Second)),
		},
		Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: container}}},
		Status: corev1.PodStatus{Phase: pick(podPhases, p.Phase)},
	}
	typ, index := "", strconv.Itoa(int(p.Index%16))
	if p.Index >= 0xf0 {
		index = pick(malformedIndexLabels, p.Index)
	}
	switch k := int(p.Type) % (len(job.Replicas) + 2); {
	case k < len(job.Replicas):
		typ = job.Replicas[k].Type
	case k == len(job.Replicas):
		typ = "ghost"
	}
	if typ != "" {
		pod.Labels[batch.LabelReplicaType] = typ
		pod.Labels[batch.LabelReplicaIndex] = index
		pod.Name = job.Name + "-" + typ + "-" + index
	} else {
		pod.Name = job.Name + "-stray-" + strconv.Itoa(n)
	}
	if p.Exit > 0 {
		name := container
		if p.Flags&podOtherContainer != 0 {
			name = "sidecar"
		}
		pod.Status.ContainerStatuses = []corev1.ContainerStatus{{
			Name: name, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: pick(exitCodes, p.Exit-1)}},
		}}
	}
	if p.Flags&podDeleting != 0 {
		pod.DeletionTimestamp = &metav1.Time{Time: fuzzBase.Add(time.Minute)}
	}
	if p.Flags&podEvicted != 0 {
		pod.Status.Reason = podReasonEvicted
	}
	if p.Flags&podNodeLostReason != 0 {
		pod.Status.Reason = podReasonNodeLost
	}
	for bit, reason := range map[uint8]string{podTaintManager: "DeletionByTaintManager", podPreempted: "PreemptionByScheduler"} {
		if p.Flags&bit != 0 {
			pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{
				Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: reason})
		}
	}
	switch {
	case p.More&moreNodeLost != 0:
		pod.Spec.NodeName = "lost"
	case p.More&moreNodeNotReady != 0:
		pod.Spec.NodeName = "not-ready"
	case p.More&moreNodeReady != 0:
		pod.Spec.NodeName = "ready"
	}
	switch p.More & (moreGang1 | moreGang3) {
	case moreGang1:
		pod.Annotations[batch.AnnotationGangRestarts] = "1"
	case moreGang3:
		pod.Annotations[batch.AnnotationGangRestarts] = "3"
	case moreGang1 | moreGang3:
		pod.Annotations[batch.AnnotationGangRestarts] = "-x"
	}
	if p.Flags&podDebugMode != 0 {
		pod.Annotations[batch.AnnotationRunMode] = "Debug"
	} else if p.Flags&podImmediateMode != 0 {
		pod.Annotations[batch.AnnotationRunMode] = "Immediate"
	}
	return pod
}

// template is a replica type's pod template with the features its bits ask for.
func (s fuzzJob) template(fw Framework, t fuzzType) corev1.PodTemplateSpec {
	name := PyTorchContainerName
	if fw == TensorFlow {
		name = TFContainerName
	}
	if t.Template&tmplOtherContainerName != 0 {
		name = "main"
	}
	train := corev1.Container{Name: name, Image: "example/train:1", Command: []string{"python", "train.py"}}
	if t.Template&tmplEnvCollision != 0 {
		for _, n := range []string{EnvMasterAddr, EnvRank, EnvWorldSize, EnvTFConfig, EnvPETNNodes, EnvPETNodeRank, "NCCL_DEBUG"} {
			train.Env = append(train.Env, corev1.EnvVar{Name: n, Value: "user"})
		}
	}
	if t.Template&tmplGPUAndPort != 0 {
		train.Args, train.Command = []string{"train.py"}, nil
		train.Resources.Limits = corev1.ResourceList{GPUResource: resource.MustParse("4"), corev1.ResourceCPU: resource.MustParse("8")}
		train.Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("16Gi")}
		train.Ports = []corev1.ContainerPort{{Name: name, ContainerPort: 23456}, {Name: "metrics", ContainerPort: 9090}}
	}
	spec := corev1.PodSpec{Containers: []corev1.Container{train}}
	if t.Template&tmplSidecarFirst != 0 {
		spec.Containers = append([]corev1.Container{{Name: "sidecar", Image: "example/shipper:1"}}, spec.Containers...)
	}
	if t.Template&tmplInitContainer != 0 {
		spec.InitContainers = []corev1.Container{{Name: "init", Image: "busybox",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("16")}}}}
	}
	if t.Template&tmplRestartPolicy != 0 {
		spec.RestartPolicy = corev1.RestartPolicyOnFailure
	}
	if t.Template&tmplSchedulerName != 0 {
		spec.SchedulerName = "custom-scheduler"
	}
	if t.Template&tmplNoContainers != 0 {
		spec.Containers = nil
	}
	return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"team": "vision"}}, Spec: spec}
}

func (s fuzzJob) meta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: "team-a", UID: "5b0e1a7c-0000-4000-8000-00000000f022"}
}

// kubeflowMeta is meta with the Kubeflow kinds' restart-scope annotation, when one is chosen.
func (s fuzzJob) kubeflowMeta(name string) metav1.ObjectMeta {
	m := s.meta(name)
	if scope := s.restartScope(); scope != "" {
		m.Annotations = map[string]string{batch.AnnotationRestartScope: string(scope)}
	}
	return m
}

// status is the stored status of a T9k job.
func (s fuzzJob) status() batch.TrainingJobStatus {
	st := batch.TrainingJobStatus{Phase: pick(fuzzPhases, s.Phase), BackoffCount: int32(s.BackoffCount), GangRestarts: s.gangRestarts()}
	if s.has(modeStartTime) {
		st.StartTime = &metav1.Time{Time: fuzzBase}
	}
	if s.has(modeCompletionTime) {
		st.CompletionTime = &metav1.Time{Time: fuzzBase.Add(time.Hour)}
	}
	if s.has(modeResumed) {
		st.Conditions = append(st.Conditions, metav1.Condition{Type: batch.ConditionPaused, Status: metav1.ConditionFalse, Reason: batch.ReasonResuming})
	}
	switch st.Phase {
	case batch.JobSucceeded:
		st.Conditions = append(st.Conditions, metav1.Condition{Type: batch.ConditionCompleted, Status: metav1.ConditionTrue, Reason: batch.ReasonSucceeded})
	case batch.JobFailed:
		st.Conditions = append(st.Conditions, metav1.Condition{Type: batch.ConditionFailed, Status: metav1.ConditionTrue, Reason: batch.ReasonBackoffLimitExceeded})
	}
	return st
}

func (s fuzzJob) runMode() *batch.RunMode {
	m := &batch.RunMode{}
	first := ""
	if len(s.Types) > 0 {
		first = "worker"
	}
	if s.has(modeDebug) || s.has(modeDebugSpecs) {
		m.Debug = &batch.DebugMode{}
		if s.has(modeDebugAlias) {
			m.Debug.Enable = ptr(s.has(modeDebug))
		} else {
			m.Debug.Enabled = ptr(s.has(modeDebug))
		}
		if s.has(modeDebugSpecs) {
			m.Debug.ReplicaSpecs = []batch.ReplicaDebugSet{{Type: first, SkipInitContainer: true, Command: []string{"sleep", "3600"}}}
		}
	}
	if s.has(modePause) || s.has(modeResumeSpecs) {
		m.Pause = &batch.PauseMode{}
		if s.has(modePauseAlias) {
			m.Pause.Enable = ptr(s.has(modePause))
		} else {
			m.Pause.Enabled = ptr(s.has(modePause))
		}
		if s.has(modeResumeSpecs) {
			m.Pause.ResumeSpecs = []batch.ResumeSpec{{Type: first, SkipInitContainer: true, Command: []string{"python"}, Args: []string{"resume.py"}}}
		}
	}
	return m
}

// gangRestarts is the stored status.gangRestarts.
func (s fuzzJob) gangRestarts() int32 {
	if !s.has(modeGangRestarted) {
		return 0
	}
	return 1 + int32(uint8(s.BackoffCount)%3)
}

// restartScope is the chosen restart scope, possibly one no schema allows.
func (s fuzzJob) restartScope() batch.RestartScope {
	switch {
	case s.has(modeScopeGang) && s.has(modeScopeReplica):
		return "Sometimes"
	case s.has(modeScopeGang):
		return batch.RestartScopeGang
	case s.has(modeScopeReplica):
		return batch.RestartScopeReplica
	}
	return ""
}

func (s fuzzJob) runPolicy(deadline int64) *batch.RunPolicy {
	p := &batch.RunPolicy{CleanUpPolicy: pick(cleanUpPolicies, s.CleanUp), RestartScope: s.restartScope()}
	if s.has(modeDeadline) {
		p.ActiveDeadlineSeconds = &deadline
	}
	if s.has(modeBackoffLimit) {
		p.BackoffLimit = ptr(int32(s.BackoffLimit))
	}
	return p
}

func (s fuzzJob) scheduler() *batch.SchedulePolicy {
	switch s.Sched % 4 {
	case 1:
		return &batch.SchedulePolicy{T9kScheduler: &batch.T9kScheduler{Queue: "default", Priority: ptr(int32(50))}}
	case 2:
		return &batch.SchedulePolicy{Volcano: &batch.VolcanoScheduler{Queue: "research", PriorityClassName: "high"}}
	case 3:
		return &batch.SchedulePolicy{Coscheduling: &batch.CoschedulingScheduler{ScheduleTimeoutSeconds: ptr(int32(60))}}
	}
	return nil
}

func (s fuzzJob) tensorBoard() *batch.TensorBoardSpec {
	if !s.has(modeTensorBoard) {
		return nil
	}
	tb := &batch.TensorBoardSpec{
		Image:               "tensorflow/tensorflow:2.16.1",
		LogDir:              &batch.LogDir{PVC: []batch.PVCLogDir{{Name: "logs", SubPath: []string{"run1", "/run2/"}}, {Name: "scratch"}}},
		TrainingLogFilesets: []batch.FilesetURI{"t9k://pvc/logs/run1", "t9k://pvc/other"},
	}
	if s.has(modeTensorBoardOddPaths) {
		tb.LogDir = nil
		tb.TrainingLogFilesets = []batch.FilesetURI{"t9k://pvc/", "t9k://pvc/logs/../../etc", "t9k://pvc/other-ns/pvc", "s3://bucket/x"}
	}
	return tb
}

// flagPair sets a flag through its canonical spelling (enabled) or its alias (enable).
func flagPair(on, alias bool) (enabled, enable *bool) {
	if alias {
		return nil, ptr(on)
	}
	return ptr(on), nil
}

func (s fuzzJob) pyTorchTrainingJob(name, custom string, deadline int64) *batch.PyTorchTrainingJob {
	j := &batch.PyTorchTrainingJob{
		ObjectMeta: s.meta(name),
		Spec: batch.PyTorchTrainingJobSpec{
			RunMode: s.runMode(), RunPolicy: s.runPolicy(deadline), Scheduler: s.scheduler(), TensorboardSpec: s.tensorBoard(),
		},
		Status: s.status(),
	}
	for _, t := range s.Types {
		typ := custom
		if int(t.Kind) < len(pyTorchTypes) {
			typ = pyTorchTypes[t.Kind]
		}
		j.Spec.ReplicaSpecs = append(j.Spec.ReplicaSpecs, batch.PyTorchReplicaSpec{
			Type: typ, ScalingWeight: ptr(int32(t.Weight % 4)),
			ReplicaTemplate: batch.ReplicaTemplate{Replicas: ptr(count(t.Replicas)), Template: s.template(PyTorch, t), RestartPolicy: pick(restartPolicies, t.Restart)},
		})
	}
	if s.has(modeTorchrun) || s.has(modeTorchrunExtras) {
		tr := &batch.TorchrunConfig{ProcPerNode: pick(procPerNodes, s.Procs)}
		tr.Enabled, tr.Enable = flagPair(s.has(modeTorchrun), s.has(modeTorchrunAlias))
		if s.has(modeTorchrunExtras) {
			tr.RdzvBackend, tr.MaxRestarts, tr.ExtraOptions = "etcd-v2", ptr(int32(3)), []string{"--monitor-interval=5"}
		}
		j.Spec.TorchrunConfig = tr
	}
	if s.has(modeElastic) || s.ElasticMin != 0 || s.ElasticMax != 0 {
		e := &batch.ElasticConfig{}
		e.Enabled, e.Enable = flagPair(s.has(modeElastic), s.has(modeElasticAlias))
		e.MinReplicas, e.MaxReplicas, e.ExpectedReplicas = optCount(s.ElasticMin), optCount(s.ElasticMax), optCount(s.ElasticExpected)
		j.Spec.Elastic = e
	}
	return j
}

// optCount is a fuzzed count for an optional field: 0 leaves it unset.
func optCount(v int8) *int32 {
	if v == 0 {
		return nil
	}
	return ptr(count(v))
}

func (s fuzzJob) tensorFlowTrainingJob(name, custom string, deadline int64) *batch.TensorFlowTrainingJob {
	j := &batch.TensorFlowTrainingJob{
		ObjectMeta: s.meta(name),
		Spec: batch.TensorFlowTrainingJobSpec{
			RunMode: s.runMode(), RunPolicy: s.runPolicy(deadline), Scheduler: s.scheduler(), TensorboardSpec: s.tensorBoard(),
		},
		Status: s.status(),
	}
	for _, t := range s.Types {
		typ := custom
		if int(t.Kind) < len(tensorFlowTypes) {
			typ = tensorFlowTypes[t.Kind]
		}
		j.Spec.ReplicaSpecs = append(j.Spec.ReplicaSpecs, batch.TensorFlowReplicaSpec{
			Type:            batch.TensorFlowReplicaType(typ),
			ReplicaTemplate: batch.ReplicaTemplate{Replicas: ptr(count(t.Replicas)), Template: s.template(TensorFlow, t), RestartPolicy: pick(restartPolicies, t.Restart)},
		})
	}
	return j
}

// kubeflowSpecs are the replica specs of a Kubeflow job; a type listed twice keeps the last.
// The scheduler choice puts a gang scheduler's name in the first template, as Kubeflow users do.
func (s fuzzJob) kubeflowSpecs(fw Framework, keys []kubeflowv1.ReplicaType, custom string) map[kubeflowv1.ReplicaType]*kubeflowv1.ReplicaSpec {
	specs := map[kubeflowv1.ReplicaType]*kubeflowv1.ReplicaSpec{}
	for i, t := range s.Types {
		key := kubeflowv1.ReplicaType(custom)
		if int(t.Kind) < len(keys) {
			key = keys[t.Kind]
		}
		tmpl := s.template(fw, t)
		if i == 0 {
			switch s.Sched % 4 {
			case 2:
				tmpl.Spec.SchedulerName = batch.VolcanoSchedulerName
			case 3:
				tmpl.Spec.SchedulerName = batch.CoschedulingSchedulerName
			}
		}
		specs[key] = &kubeflowv1.ReplicaSpec{
			Replicas: ptr(count(t.Replicas)), Template: tmpl, RestartPolicy: kubeflowv1.RestartPolicy(pick(restartPolicies, t.Restart)),
		}
	}
	return specs
}

func (s fuzzJob) kubeflowRunPolicy(deadline int64) *kubeflowv1.RunPolicy {
	p := &kubeflowv1.RunPolicy{Suspend: ptr(s.has(modePause))}
	if c := pick(cleanPodPolicies, s.CleanUp); c != "" {
		p.CleanPodPolicy = &c
	}
	if s.has(modeDeadline) {
		p.ActiveDeadlineSeconds = &deadline
	}
	if s.has(modeBackoffLimit) {
		p.BackoffLimit = ptr(int32(s.BackoffLimit))
	}
	if s.Extra&extraTTL != 0 {
		p.TTLSecondsAfterFinished = ptr(int32(deadline))
	}
	sp := &kubeflowv1.SchedulingPolicy{Queue: "research", PriorityClass: "high", ScheduleTimeoutSeconds: ptr(int32(120))}
	if s.Extra&extraMinAvailable != 0 {
		sp.MinAvailable = optCount(s.ElasticExpected)
	}
	if s.Extra&extraMinResources != 0 {
		sp.MinResources = &corev1.ResourceList{GPUResource: resource.MustParse("8"), corev1.ResourceCPU: resource.MustParse("500m")}
	}
	p.SchedulingPolicy = sp
	return p
}

// kubeflowStatus is a Kubeflow status whose conditions read back as the chosen phase.
func (s fuzzJob) kubeflowStatus() kubeflowv1.JobStatus {
	st := kubeflowv1.JobStatus{BackoffCount: int32(s.BackoffCount), GangRestarts: s.gangRestarts()}
	if s.has(modeStartTime) {
		st.StartTime = &metav1.Time{Time: fuzzBase}
	}
	if s.has(modeCompletionTime) {
		st.CompletionTime = &metav1.Time{Time: fuzzBase.Add(time.Hour)}
	}
	cond := func(t kubeflowv1.JobConditionType, status corev1.ConditionStatus, reason string) {
		st.Conditions = append(st.Conditions, kubeflowv1.JobCondition{Type: t, Status: status, Reason: reason})
	}
	if s.has(modeResumed) {
		cond(kubeflowv1.JobSuspended, corev1.ConditionFalse, batch.ReasonResuming)
	}
	switch pick(fuzzPhases, s.Phase) {
	case batch.JobPending:
		cond(kubeflowv1.JobCreated, corev1.ConditionTrue, batch.ReasonCreated)
	case batch.JobRunning:
		cond(kubeflowv1.JobCreated, corev1.ConditionTrue, batch.ReasonCreated)
		cond(kubeflowv1.JobRunning, corev1.ConditionTrue, batch.ReasonPodsRunning)
	case batch.JobPaused:
		st.Conditions = nil // one condition of a type: Suspended is True now
		cond(kubeflowv1.JobSuspended, corev1.ConditionTrue, batch.ReasonPaused)
	case batch.JobResuming:
		cond(kubeflowv1.JobRunning, corev1.ConditionFalse, batch.ReasonResuming)
	case batch.JobSucceeded:
		cond(kubeflowv1.JobSucceeded, corev1.ConditionTrue, batch.ReasonSucceeded)
	case batch.JobFailed:
		cond(kubeflowv1.JobFailed, corev1.ConditionTrue, batch.ReasonFailed)
	case batch.JobUnknown:
		cond(kubeflowv1.JobRestarting, corev1.ConditionTrue, batch.ReasonRestarting)
	}
	return st
}

func (s fuzzJob) pyTorchJob(name, custom string, deadline int64) *kubeflowv1.PyTorchJob {
	j := &kubeflowv1.PyTorchJob{
		ObjectMeta: s.kubeflowMeta(name),
		Spec: kubeflowv1.PyTorchJobSpec{
			RunPolicy: s.kubeflowRunPolicy(deadline), PyTorchReplicaSpecs: s.kubeflowSpecs(PyTorch, pyTorchJobKeys, custom),
		},
		Status: s.kubeflowStatus(),
	}
	if n := pick(nprocPerNodes, s.Procs); n != "" && s.Extra&extraNprocInElasticPolicy == 0 {
		j.Spec.NprocPerNode = &n
	}
	if s.Extra&extraElasticPolicy != 0 {
		e := &kubeflowv1.ElasticPolicy{MinReplicas: optCount(s.ElasticMin), MaxReplicas: optCount(s.ElasticMax)}
		if s.Extra&extraNprocInElasticPolicy != 0 {
			e.NProcPerNode = ptr(int32(s.Procs % 5))
		}
		if s.Extra&extraRendezvous != 0 {
			e.RDZVBackend, e.RDZVHost, e.RDZVPort, e.RDZVID = ptr("etcd"), ptr("etcd.team-a.svc"), ptr(int32(2379)), ptr("run-1")
			e.RDZVConf, e.MaxRestarts, e.Standalone = []kubeflowv1.RDZVConf{{Key: "timeout", Value: "900"}}, ptr(int32(2)), ptr(true)
		}
		if s.Extra&extraMetrics != 0 {
			e.Metrics = []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
				Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr(int32(80))}}}}
		}
		j.Spec.ElasticPolicy = e
	}
	return j
}

func (s fuzzJob) tfJob(name, custom string, deadline int64) *kubeflowv1.TFJob {
	j := &kubeflowv1.TFJob{
		ObjectMeta: s.kubeflowMeta(name),
		Spec: kubeflowv1.TFJobSpec{
			RunPolicy: s.kubeflowRunPolicy(deadline), TFReplicaSpecs: s.kubeflowSpecs(TensorFlow, tfJobKeys, custom),
		},
		Status: s.kubeflowStatus(),
	}
	if s.Extra&extraAllWorkers != 0 {
		j.Spec.SuccessPolicy = ptr(kubeflowv1.SuccessPolicyAllWorkers)
	}
	return j
}

// fuzzInput completes a converted job into render's input.
func fuzzInput(job Job, s fuzzJob, pods []byte, elapsedMilli int64) Input {
	crds := map[string]bool{}
	for i, crd := range PodGroupCRDs() {
		if s.CRDs&(1<<i) != 0 {
			crds[crd] = true
		}
	}
	// Up to about 300 years either way, so that computing now cannot overflow.
	elapsed := time.Duration(elapsedMilli%(1e13)) * time.Millisecond
	now := fuzzBase.Add(elapsed)
	observed, deleted := observedPods(&job, pods)
	return Input{Job: job, Pods: observed, DeletedPods: deleted, InstalledCRDs: crds, Now: now, Nodes: fuzzNodes(now)}
}

// jobSeeds are shapes of the golden cases, for the job targets. Type kinds index the kind's
// type names (pyTorchTypes, tensorFlowTypes, pyTorchJobKeys, tfJobKeys), so one shape seeds
// every target.
var jobSeeds = []fuzzSeed{
	{ // pytorch-master-and-workers
		name: "mnist", job: fuzzJob{Types: []fuzzType{{Kind: 0, Replicas: 1}, {Kind: 1, Replicas: 3, Template: tmplGPUAndPort}}},
	},
	{ // exitcode-worker-exit-137-is-restarted
		name: "ec", deadline: 3600, elapsedMilli: 60_000,
		job: fuzzJob{Mode: modeStartTime | modeBackoffLimit, Phase: 2, BackoffLimit: 3,
			Types: []fuzzType{{Kind: 0, Replicas: 1, Restart: 4}, {Kind: 1, Replicas: 2, Restart: 4}}},
		pods: []fuzzPod{{Type: 0, Phase: 1}, {Type: 1, Index: 0, Phase: 3, Exit: 8}, {Type: 1, Index: 1, Phase: 1}},
	},
	{ // master-succeeded-deletes-unfinished-workers
		name: "done", elapsedMilli: 7_200_000,
		job:  fuzzJob{Mode: modeStartTime, Phase: 2, Types: []fuzzType{{Kind: 0, Replicas: 1}, {Kind: 1, Replicas: 2}}},
		pods: []fuzzPod{{Type: 0, Phase: 2, Exit: 1}, {Type: 1, Index: 0, Phase: 1}, {Type: 1, Index: 1, Phase: 0}},
	},
	{ // elastic-weights-split-by-largest-remainder
		name: "elastic",
		job: fuzzJob{Mode: modeTorchrun | modeElastic, Procs: 5, ElasticMin: 2, ElasticMax: 8, ElasticExpected: 5,
			Types: []fuzzType{{Kind: 0, Replicas: 1}, {Kind: 1, Replicas: 2, Weight: 2}, {Kind: 2, Replicas: 1, Weight: 1}}},
	},
	{ // debug-mode-runs-sleep-inf-and-ignores-exits
		name: "dbg", job: fuzzJob{Mode: modeDebug | modeDebugSpecs | modeStartTime, Phase: 2,
			Types: []fuzzType{{Kind: 1, Replicas: 2, Template: tmplInitContainer}}},
		pods: []fuzzPod{{Type: 0, Index: 0, Phase: 3, Exit: 2, Flags: podDebugMode}},
	},
	{ // pause-deletes-running-pods
		name: "paused", job: fuzzJob{Mode: modePause | modeResumeSpecs | modeStartTime, Phase: 2,
			Types: []fuzzType{{Kind: 0, Replicas: 1}, {Kind: 1, Replicas: 2}}},
		pods: []fuzzPod{{Type: 0, Phase: 1}, {Type: 1, Index: 1, Phase: 1, Flags: podDeleting}},
	},
	{ // resume-applies-resume-specs-and-resets-start-time
		name: "resumed", job: fuzzJob{Mode: modeResumeSpecs | modeResumed | modeStartTime, Phase: 3,
			Types: []fuzzType{{Kind: 1, Replicas: 3, Template: tmplInitContainer}}},
	},
	{ // t9k-scheduler-podgroup-with-roles-queue-priority
		name: "gang", job: fuzzJob{Sched: 1, CRDs: 7, Types: []fuzzType{{Kind: 0, Replicas: 1, Template: tmplGPUAndPort | tmplSchedulerName}, {Kind: 1, Replicas: 4, Template: tmplGPUAndPort}}},
	},
	{ // podgroup-crd-missing-blocks-pods
		name: "blocked", job: fuzzJob{Sched: 2, Types: []fuzzType{{Kind: 1, Replicas: 2}}},
	},
	{ // tensorboard-over-pvc-subpaths-and-filesets
		name: "tb", job: fuzzJob{Mode: modeTensorBoard, Types: []fuzzType{{Kind: 1, Replicas: 1}}},
	},
	{ // user-rank-and-master-addr-are-overridden-with-warning, template-restart-policy-on-failure-replaced-with-warning
		name: "env", job: fuzzJob{Types: []fuzzType{{Kind: 0, Replicas: 1, Template: tmplEnvCollision | tmplRestartPolicy | tmplSidecarFirst}, {Kind: 1, Replicas: 1, Template: tmplEnvCollision | tmplOtherContainerName}}},
	},
	{ // worker-on-lost-node-is-force-deleted
		name: "rs", job: fuzzJob{Mode: modeStartTime, Phase: 2, Types: []fuzzType{{Kind: 0, Replicas: 1}, {Kind: 1, Replicas: 1, Restart: 2}}},
		pods: []fuzzPod{{Type: 0, Phase: 1}, {Type: 1, Phase: 1, Flags: podDeleting | podTaintManager}},
	},
	{ // pod-deleted-by-someone-else-restarts-the-gang-as-a-disruption, and a gone one
		name: "dl", job: fuzzJob{Mode: modeStartTime, Phase: 2, Types: []fuzzType{{Kind: 0, Replicas: 1, Restart: 2}, {Kind: 1, Replicas: 2, Restart: 2}}},
		pods: []fuzzPod{{Type: 0, Phase: 1, More: moreNodeReady}, {Type: 1, Index: 0, Phase: 1, Flags: podDeleting, More: moreDeletedByOther},
			{Type: 1, Index: 1, Phase: 1, Flags: podDeleting | podPreempted, More: moreGone}},
	},
	{ // gang-restart-deletes-survivors-of-an-earlier-gang, pod-terminating-on-a-lost-node-is-force-deleted
		name: "gr", job: fuzzJob{Mode: modeStartTime | modeGangRestarted, Phase: 2, Types: []fuzzType{{Kind: 0, Replicas: 1, Restart: 2}, {Kind: 1, Replicas: 2, Restart: 2}}},
		pods: []fuzzPod{{Type: 0, Phase: 1, More: moreGang1}, {Type: 1, Index: 0, Phase: 1, More: moreNodeLost},
			{Type: 1, Index: 1, Phase: 1, Flags: podDeleting, More: moreNodeNotReady}},
	},
	{ // torchrun-worker-exit-1-restarts-that-worker-alone, with restartScope Gang chosen
		name: "scope", job: fuzzJob{Mode: modeStartTime | modeTorchrun | modeScopeGang, Phase: 2,
			Types: []fuzzType{{Kind: 0, Replicas: 1, Restart: 2}, {Kind: 1, Replicas: 2, Restart: 2}}},
		pods: []fuzzPod{{Type: 0, Phase: 1}, {Type: 1, Index: 0, Phase: 1}, {Type: 1, Index: 1, Phase: 3, Exit: 2}},
	},
	{ // active-deadline-passed-fails-job
		name: "late", deadline: 600, elapsedMilli: 601_000,
		job:  fuzzJob{Mode: modeDeadline | modeStartTime, Phase: 2, Types: []fuzzType{{Kind: 1, Replicas: 2}}},
		pods: []fuzzPod{{Type: 0, Index: 0, Phase: 1}, {Type: 0, Index: 1, Phase: 1}},
	},
	{ // succeeded-job-recreates-no-missing-pod, cleanup-none-keeps-every-pod
		name: "over", job: fuzzJob{Mode: modeStartTime | modeCompletionTime, Phase: 5, CleanUp: 3,
			Types: []fuzzType{{Kind: 0, Replicas: 1}, {Kind: 1, Replicas: 3}}},
		pods: []fuzzPod{{Type: 0, Phase: 2, Exit: 1}, {Type: 1, Index: 2, Phase: 1}, {Type: 2, Index: 0, Phase: 1}, {Type: 1, Index: 9, Phase: 1}},
	},
	{ // rejects-name-too-long-for-pod-hostname
		name: "a-job-name-that-is-far-too-long-for-the-pods-it-would-create-x", job: fuzzJob{Types: []fuzzType{{Kind: 1, Replicas: 12}}},
	},
	{ // a custom replica type, observed pods with malformed labels and of no type
		name: "odd", custom: "evaluator-x", job: fuzzJob{Types: []fuzzType{{Kind: 9, Replicas: 2}}},
		pods: []fuzzPod{{Type: 0, Index: 0xf1, Phase: 1}, {Type: 2, Phase: 3, Exit: 3}, {Type: 1, Index: 3, Phase: 1, Flags: podEvicted}},
	},
	{ // kubeflow-pytorchjob-elastic-metrics-make-an-hpa, kubeflow-ttl-after-finished-waits
		name: "kf", deadline: 600, job: fuzzJob{Procs: 4, ElasticMin: 1, ElasticMax: 4, Sched: 2, CRDs: 2,
			Extra: extraElasticPolicy | extraMetrics | extraRendezvous | extraMinAvailable | extraTTL,
			Types: []fuzzType{{Kind: 1, Replicas: 2, Restart: 2}}},
	},
	{ // kubeflow-tfjob-allworkers-succeeds-when-every-worker-has
		name: "allw", job: fuzzJob{Mode: modeStartTime, Phase: 2, Extra: extraAllWorkers,
			Types: []fuzzType{{Kind: 3, Replicas: 2}, {Kind: 2, Replicas: 1}}},
		pods: []fuzzPod{{Type: 0, Index: 0, Phase: 2, Exit: 1}, {Type: 0, Index: 1, Phase: 2, Exit: 1}, {Type: 1, Phase: 1}},
	},
}

// fuzzJobTarget runs a job target: build converts the fuzzed shape into the render model.
func fuzzJobTarget(f *testing.F, build func(s fuzzJob, name, custom string, deadline int64) Job) {
	for _, s := range jobSeeds {
		s.add(f)
	}
	f.Fuzz(func(t *testing.T, name, custom string, spec, pods []byte, deadline, elapsedMilli int64) {
		s := decodeJob(spec)
		for range s.DeadlineExp % 19 {
			deadline *= 10 // may wrap: render must cope with any int64 it is given
		}
		job := build(s, name, custom, deadline)
		checkRender(t, fuzzInput(job, s, pods, elapsedMilli))
	})
}

func FuzzRenderPyTorchTrainingJob(f *testing.F) {
	fuzzJobTarget(f, func(s fuzzJob, name, custom string, deadline int64) Job {
		return FromPyTorchTrainingJob(s.pyTorchTrainingJob(name, custom, deadline))
	})
}

func FuzzRenderTensorFlowTrainingJob(f *testing.F) {
	fuzzJobTarget(f, func(s fuzzJob, name, custom string, deadline int64) Job {
		return FromTensorFlowTrainingJob(s.tensorFlowTrainingJob(name, custom, deadline))
	})
}

func FuzzRenderPyTorchJob(f *testing.F) {
	fuzzJobTarget(f, func(s fuzzJob, name, custom string, deadline int64) Job {
		return FromPyTorchJob(s.pyTorchJob(name, custom, deadline))
	})
}

func FuzzRenderTFJob(f *testing.F) {
	fuzzJobTarget(f, func(s fuzzJob, name, custom string, deadline int64) Job {
		return FromTFJob(s.tfJob(name, custom, deadline))
	})
}

// FuzzReadJob feeds raw bytes to ReadJob and ReadObserved, seeded with every golden case. Errors
// are fine; a job they read must render as checkRender says.
func FuzzReadJob(f *testing.F) {
	jobs, err := filepath.Glob("testdata/*/job.yaml")
	if err != nil || len(jobs) == 0 {
		f.Fatalf("no golden cases to seed from: %v", err)
	}
	for _, file := range jobs {
		job, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		observed, _ := os.ReadFile(filepath.Join(filepath.Dir(file), "observed.yaml"))
		f.Add(job, observed)
	}
	f.Fuzz(func(t *testing.T, data, observed []byte) {
		job, err := ReadJob(data)
		if err != nil {
			return
		}
		o, err := ReadObservations(observed)
		if err != nil {
			return
		}
		// Note: a job of many pods renders in time linear in its size (the benchmarks measure
		// it); the fuzzer's time is better spent on shapes than on a million-pod render.
		if n := job.PodCount(); n > 256 || (job.Elastic != nil && job.Elastic.Max > 256) {
			return
		}
		checkRender(t, Input{Job: job, Pods: o.Pods, DeletedPods: o.DeletedPods, InstalledCRDs: o.InstalledCRDs, Nodes: o.Nodes, Now: fuzzBase})
	})
}

// checkRender renders in and checks what must hold whenever render accepts a job: the same input
// gives byte-identical output; every rendered name is a valid DNS label; no pod name appears
// twice; Decisions.Create names only pods that are wanted and not observed; a finished, paused
// or blocked job wants no pod; a deadline not yet passed fails nothing; OnlyPodsToCreate decides
// the same.
func checkRender(t *testing.T, in Input) {
	t.Helper()
	observed := make([]*corev1.Pod, len(in.Pods))
	for i, p := range in.Pods {
		observed[i] = p.DeepCopy()
	}
	out, err := Render(in)
	// The controller hands render the cache's own pods: render must leave them as they were.
	for i, p := range in.Pods {
		if !apiequality.Semantic.DeepEqual(observed[i], p) {
			t.Fatalf("render changed the observed pod %s", p.Name)
		}
	}
	if err != nil {
		if err.Error() == "" {
			t.Fatal("render refused the job with an empty error")
		}
		return
	}
	doc, err := Print(out)
	if err != nil {
		t.Fatalf("printing the output: %v", err)
	}
	again, err := Render(in)
	if err != nil {
		t.Fatalf("the second render refused what the first accepted: %v", err)
	}
	if doc2, err := Print(again); err != nil || !bytes.Equal(doc, doc2) {
		t.Fatalf("rendering twice gave different output (%v):\n%s", err, cmp.Diff(string(doc), string(doc2)))
	}
	checkNames(t, out)
	checkWantedPods(t, in, out)
	checkDeadline(t, in, out)
	checkRestarts(t, in, out)
	checkOnlyPodsToCreate(t, in, out)
}

// checkRestarts: counters never go back; only a pod whose node has been NotReady for the bound
// is force-deleted; no pod is created while a pod of an earlier gang is observed or a gang
// restart is decided; a gang restart counts once.
func checkRestarts(t *testing.T, in Input, out *Output) {
	t.Helper()
	d, st := &out.Decisions, &in.Job.Status
	if d.BackoffCount < st.BackoffCount || d.DisruptionCount < st.DisruptionCount || d.GangRestarts < st.GangRestarts {
		t.Errorf("a counter went back: backoffCount %d -> %d, disruptionCount %d -> %d, gangRestarts %d -> %d",
			st.BackoffCount, d.BackoffCount, st.DisruptionCount, d.DisruptionCount, st.GangRestarts, d.GangRestarts)
	}
	if d.GangRestart && (d.GangRestarts != st.GangRestarts+1 || (d.BackoffCount-st.BackoffCount)+(d.DisruptionCount-st.DisruptionCount) != 1) {
		t.Errorf("a gang restart counted gangRestarts +%d, backoffCount +%d, disruptionCount +%d; want +1 and one restart",
			d.GangRestarts-st.GangRestarts, d.BackoffCount-st.BackoffCount, d.DisruptionCount-st.DisruptionCount)
	}
	nodes := map[string]string{}
	// A gang restart holds the new gang while a pod of the old one is left; with none left (all
	// gone already) nothing would wake the job again, so it creates the new gang at once.
	older := d.GangRestart && len(in.Pods) > 0
	for _, p := range in.Pods {
		nodes[p.Name] = p.Spec.NodeName
		if gangRestartsOf(p) < st.GangRestarts {
			older = true
		}
	}
	for _, del := range d.Delete {
		n, ok := in.Nodes[nodes[del.Name]]
		lost := ok && n.Ready != corev1.ConditionTrue && !in.Now.Before(n.Since.Add(DefaultNodeLostAfter))
		if del.Force && !lost {
			t.Errorf("%s is force-deleted, but its node %q is not lost (%+v)", del.Name, nodes[del.Name], n)
		}
	}
	if older && len(d.Create) > 0 && !in.Job.Finished() {
		t.Errorf("pods %v are created while a pod of an earlier gang is observed (or the gang restarts)", d.Create)
	}
}

// checkNames: pods, their hostnames and subdomains, PodGroups, Deployments and HPAs need DNS-1123
// labels; Services need DNS-1035 labels (they start with a letter).
func checkNames(t *testing.T, out *Output) {
	t.Helper()
	check := func(what, name string, valid func(string) []string) {
		if msgs := valid(name); len(msgs) > 0 {
			t.Errorf("%s %q is not a valid name: %v", what, name, msgs)
		}
	}
	if out.PodGroup != nil {
		check("PodGroup", out.PodGroup.GetName(), validation.IsDNS1123Label)
	}
	if out.Service != nil {
		check("Service", out.Service.Name, validation.IsDNS1035Label)
	}
	services := map[string]bool{}
	for _, s := range out.ReplicaServices.All() {
		check("replica Service", s.Name, validation.IsDNS1035Label)
		if services[s.Name] {
			t.Errorf("replica Service %q is rendered twice", s.Name)
		}
		services[s.Name] = true
	}
	if out.Autoscaler != nil {
		check("HorizontalPodAutoscaler", out.Autoscaler.Name, validation.IsDNS1123Label)
	}
	if tb := out.TensorBoard; tb != nil {
		check("TensorBoard Deployment", tb.Deployment.Name, validation.IsDNS1123Label)
		check("TensorBoard Service", tb.Service.Name, validation.IsDNS1035Label)
	}
	pods := map[string]bool{}
	for _, p := range out.Pods {
		check("pod", p.Name, validation.IsDNS1123Label)
		if p.Spec.Hostname != "" {
			check("pod hostname", p.Spec.Hostname, validation.IsDNS1123Label)
		}
		if p.Spec.Subdomain != "" {
			check("pod subdomain", p.Spec.Subdomain, validation.IsDNS1123Label)
		}
		if pods[p.Name] {
			t.Errorf("pod %q is rendered twice", p.Name)
		}
		pods[p.Name] = true
	}
}

// checkWantedPods: Decisions.Create names each wanted pod once, never one that exists; a job that
// is finished (stored, or in this round), paused or blocked wants no pod.
func checkWantedPods(t *testing.T, in Input, out *Output) {
	t.Helper()
	d := &out.Decisions
	wanted, observed, created := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, p := range out.Pods {
		wanted[p.Name] = true
	}
	for _, p := range in.Pods {
		observed[p.Name] = true
	}
	for _, name := range d.Create {
		switch {
		case !wanted[name]:
			t.Errorf("Decisions.Create names %s, which is not among the rendered pods", name)
		case observed[name]:
			t.Errorf("Decisions.Create names %s, which exists", name)
		case created[name]:
			t.Errorf("Decisions.Create names %s twice", name)
		}
		created[name] = true
	}
	why := ""
	switch {
	case in.Job.Finished():
		why = "its status is " + string(in.Job.Status.Phase)
	case d.Phase == batch.JobSucceeded || d.Phase == batch.JobFailed:
		why = "it has just " + string(d.Phase)
	case in.Job.Pause:
		why = "it is paused"
	case d.Blocked != nil:
		why = "it is blocked"
	}
	if why != "" && (len(d.Create) > 0 || len(out.Pods) > 0) {
		t.Errorf("the job wants pods although %s: create %v, %d pods rendered", why, d.Create, len(out.Pods))
	}
}

// checkDeadline: a job does not fail its activeDeadlineSeconds before that many seconds have
// passed since its start, and render never asks to run again in the past.
func checkDeadline(t *testing.T, in Input, out *Output) {
	t.Helper()
	d := &out.Decisions
	if d.RequeueAfter != nil && d.RequeueAfter.Duration <= 0 {
		t.Errorf("RequeueAfter is %v; want a time ahead", d.RequeueAfter.Duration)
	}
	limit, start := in.Job.ActiveDeadlineSeconds, in.Job.Status.StartTime
	if limit == nil || start == nil || in.Job.Finished() || d.Reason != batch.ReasonDeadlineExceeded {
		return
	}
	if ran := in.Now.Unix() - start.Unix(); *limit > ran {
		t.Errorf("the job failed its deadline of %d s after running %d s", *limit, ran)
	}
}
