package render

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
)

// Output is the complete desired state of one job and the decisions behind it.
type Output struct {
	// KueueWorkload is the Kueue Workload of a queued job (queue.go) while it can still run; the
	// controller creates it when Decisions.Kueue says so.
	KueueWorkload *unstructured.Unstructured
	// PodGroup is set when a gang scheduler is chosen and the job has pods to schedule.
	PodGroup *unstructured.Unstructured
	// Workload is the scheduling.k8s.io Workload the PodGroup is made from, for the kube-scheduler's
	// own gang scheduling (spec.scheduler.kubernetes); it lives as long as the PodGroup.
	Workload *unstructured.Unstructured
	// Service is the job's headless Service; nil once the job is finished and no pod is left, and
	// for the Kubeflow kinds, which get ReplicaServices instead.
	Service *corev1.Service
	// Autoscaler is the HPA of an elastic Kubeflow PyTorchJob with elasticPolicy.metrics, while it
	// runs; the controller deletes the job's HPA when none is wanted.
	Autoscaler *autoscalingv2.HorizontalPodAutoscaler
	// ReplicaServices are a Kubeflow job's headless Services, one per replica that has or will
	// have a pod, named like the pod. The controller deletes the job's others. They are named here
	// and each is built on demand (ReplicaServices.Service): a 5,000-pod job has 5,000, and a
	// round needs only those missing. While the job is paced, those of unbound pods are not due.
	ReplicaServices ReplicaServices
	// Pods are the pods that should exist, in spec order and by index. The controller creates
	// those it does not observe. Pods are removed only by Decisions.Delete, never by absence here.
	Pods []*corev1.Pod
	// TensorBoard is set when the job asks for one; it stays until the job is deleted.
	TensorBoard *TensorBoard
	// Decisions are what the observations imply.
	Decisions Decisions
}

// TensorBoard is the TensorBoard Deployment and its Service.
type TensorBoard struct {
	Deployment *appsv1.Deployment
	Service    *corev1.Service
}

// Decisions are the conclusions render draws from the observations.
type Decisions struct {
	// Phase is the job's phase after this round.
	Phase batch.JobPhase `json:"phase"`
	// Reason is a CamelCase word for the phase (e.g. BackoffLimitExceeded); Message explains it.
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	// Blocked is set when pods cannot be created for a reason the user must fix
	// (e.g. a missing PodGroup CRD).
	Blocked *Blocked `json:"blocked,omitempty"`
	// Queued is set while Kueue holds a queued job: no pod until its Workload is admitted.
	Queued *Blocked `json:"queued,omitempty"`
	// Kueue is what a queued job's Workload needs (queue.go).
	Kueue *KueueDecisions `json:"kueue,omitempty"`
	// Dispatched: Kueue's MultiKueue runs the job in a worker cluster and writes its status here
	// (multikueue.go). The job's Workload is kept; its status and everything else are left alone.
	Dispatched bool `json:"dispatched,omitempty"`
	// StartTime and CompletionTime are the values the status should hold.
	StartTime      *metav1.Time `json:"startTime,omitempty"`
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// Create names the desired pods that are not observed and are to be created in this round.
	Create []string `json:"create,omitempty"`
	// HeldForScheduler counts the desired pods not observed and not created in this round, held
	// back while Input.MaxUnscheduledPods of the job's pods wait for the scheduler.
	HeldForScheduler int32 `json:"heldForScheduler,omitempty"`
	// WaitingForScheduler counts the job's observed pods that wait for the scheduler, when its
	// creation is paced (Input.MaxUnscheduledPods); those in Create will wait beside them.
	WaitingForScheduler int32 `json:"waitingForScheduler,omitempty"`
	// Delete lists the pods to delete, with the reason.
	Delete []Deletion `json:"delete,omitempty"`
	// Restarts lists the replicas whose end restarts something in this round: themselves, or
	// every pod of the job when GangRestart is set (their pods are in Delete).
	Restarts []Restart `json:"restarts,omitempty"`
	// GangRestart: every pod of the job is restarted in this round. All are deleted, and the new
	// gang is created once the old pods are all gone.
	GangRestart bool `json:"gangRestart,omitempty"`
	// RestartAt: a restart decided by an exit code waits for its back-off until then
	// (backoff.go); Message says which replica and why.
	RestartAt *metav1.Time `json:"restartAt,omitempty"`
	// NodeLostAt: some of the job's pods are being deleted (evicted) on a node NotReady or
	// unreachable for less than the bound (nodes.go); this is when the first of those nodes is
	// taken for lost and those pods are force-deleted and replaced, unless it is Ready before.
	NodeLostAt *metav1.Time `json:"nodeLostAt,omitempty"`
	// BackoffCount is the new value of status.backoffCount: restarts decided by an exit code.
	BackoffCount int32 `json:"backoffCount"`
	// DisruptionCount is the new value of status.disruptionCount: restarts after a disruption.
	DisruptionCount int32 `json:"disruptionCount,omitempty"`
	// GangRestarts is the new value of status.gangRestarts, which new pods are created under.
	GangRestarts int32 `json:"gangRestarts,omitempty"`
	// LastScaleDownTime is the new value of status.lastScaleDownTime: when a running replica was
	// last deleted for a scale-down (scaledown.go).
	LastScaleDownTime *metav1.Time `json:"lastScaleDownTime,omitempty"`
	// RequeueAfter is when render must run again even if nothing changes (a deadline, a node
	// that will have been NotReady for --node-lost-after).
	RequeueAfter *metav1.Duration `json:"requeueAfter,omitempty"`
	// Warnings become Warning events on the job.
	Warnings []Warning `json:"warnings,omitempty"`
	// DeleteJob: the job finished more than ttlSecondsAfterFinished ago and is to be deleted.
	DeleteJob bool `json:"deleteJob,omitempty"`
}

// Blocked says why no pod can be created.
type Blocked struct {
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// Why a pod is deleted.
const (
	DeleteRestart        = "Restart"
	DeleteCleanUp        = "CleanUp"
	DeletePaused         = "Paused"
	DeleteScaledDown     = "ScaledDown"
	DeleteRunModeChanged = "RunModeChanged"
)

// Deletion is one pod to delete.
type Deletion struct {
	Name string    `json:"name"`
	UID  types.UID `json:"uid,omitempty"`
	// Reason is one of the Delete* constants.
	Reason string `json:"reason"`
	// Force asks for a zero grace period: the pod's node is gone and a graceful delete would never
	// finish, which would keep its name (and so its replacement) blocked.
	Force bool `json:"force,omitempty"`
}

// Restart is one replica whose end restarts something in this round.
type Restart struct {
	Pod      string `json:"pod"`
	Type     string `json:"type"`
	Index    int32  `json:"index"`
	ExitCode *int32 `json:"exitCode,omitempty"`
	// Disrupted: evicted, preempted, lost with its node or deleted by someone else; such a
	// restart counts in disruptionCount, not backoffCount.
	Disrupted bool `json:"disrupted,omitempty"`
	// Cause says how it ended, in a few words without volatile detail ("exited with code 1",
	// "was evicted", "lost its node").
	Cause string `json:"cause"`
}

// Warning is an event to record on the job.
type Warning struct {
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// Warning reasons.
const (
	WarnEnvOverridden   = "EnvOverridden"
	WarnRestartPolicy   = "RestartPolicyReplaced"
	WarnSchedulerName   = "SchedulerNameReplaced"
	WarnTorchrunCommand = "TorchrunCommandReplaced"
	WarnTorchrunOff     = "TorchrunNotEnabled"
	WarnLabelReplaced   = "LabelReplaced"
	WarnElasticRestarts = "ElasticWithoutRestarts"
	WarnNoSlices        = "ElasticJobWithoutSlices"
)

// Render computes the desired state of in.Job from the observations in in.
func Render(in Input) (*Output, error) {
	if err := Validate(&in.Job); err != nil {
		return nil, err
	}
	in.Job = AdmittedJob(in.Job, in.Kueue)
	r := newRenderer(in)
	r.decide()
	r.dispatched()
	r.build()
	return r.out, nil
}

// renderer holds one render pass.
type renderer struct {
	job      *Job
	in       Input
	out      *Output
	now      metav1.Time
	observed map[slot]*observedPod
	// others are observed pods that match no replica slot (a removed type, a scaled-down index).
	others   []*observedPod
	warnings map[Warning]bool
	// env is the environment contract of the job's framework, built once per render.
	env envContract
	// create is false when no pod should be created (finished, paused, blocked, queued).
	create bool
	// admission is what an admitted queued job's pods get from Kueue, by replica type.
	admission map[string]*podSetInfo
	// holdCreates: a gang restart is under way, so no missing pod is created until every pod of
	// the old gang is gone.
	holdCreates bool
	// vanished are the slots whose pod someone else deleted and is already gone
	// (observeDeletions).
	vanished map[slot]*observedPod
	// backoff: a restart decided by an exit code waits for its back-off (backoff.go).
	backoff *backoffHold
	// templateHashes are the replica types' TemplateHash, by type, as computed.
	templateHashes map[string]string
}

func newRenderer(in Input) *renderer {
	r := &renderer{
		job:      &in.Job,
		in:       in,
		out:      &Output{},
		now:      metav1.NewTime(in.Now.UTC().Truncate(time.Second)),
		warnings: map[Warning]bool{},
		vanished: map[slot]*observedPod{},
	}
	r.observed, r.others = observePods(r.job, in.Pods)
	r.observeNodes()
	r.observeDeletions()
	switch {
	case r.job.Kubeflow != nil && r.job.Framework == TensorFlow:
		r.env = newKubeflowTFEnv(r.job)
	case r.job.Kubeflow != nil:
		r.env = newKubeflowPyTorchEnv(r.job)
	case r.job.Framework == TensorFlow:
		r.env = newTFEnv(r.job)
	default:
		r.env = newPyTorchEnv(r.job)
	}
	r.out.Decisions.BackoffCount = r.job.Status.BackoffCount
	r.out.Decisions.DisruptionCount = r.job.Status.DisruptionCount
	r.out.Decisions.GangRestarts = r.job.Status.GangRestarts
	r.out.Decisions.LastScaleDownTime = r.job.Status.LastScaleDownTime
	r.out.Decisions.StartTime = r.job.Status.StartTime
	r.out.Decisions.CompletionTime = r.job.Status.CompletionTime
	return r
}

// decide draws the round's conclusions, in order of precedence: a finished job only cleans up;
// a paused job deletes its pods; a blocked job waits; otherwise outcome, restarts and deadlines.
func (r *renderer) decide() {
	d := &r.out.Decisions
	switch {
	case r.job.Finished():
		d.Phase, d.Reason, d.Message = r.job.Status.Phase, finishedReason(r.job), finishedMessage(r.job)
		r.cleanUp()
	case r.job.Pause && !r.job.Debug && r.succeededBeforePause():
		// The training ended before the pause took its pods: the outcome is known, and deleting
		// the leader's pod would throw it away (resuming would train again).
		d.CompletionTime = &r.now
		r.cleanUp()
	case r.job.Pause:
		if r.countEndedBeforeStop() {
			d.CompletionTime = &r.now
			r.cleanUp()
			return
		}
		r.pause()
		r.kueueHold()
	case r.job.Dispatched:
		r.dispatch()
	default:
		if b := r.blocked(); b != nil {
			d.Blocked = b
			d.Phase, d.Reason, d.Message = batch.JobPending, b.Reason, b.Message
			return
		}
		if r.queueHold() {
			return
		}
		r.create = true
		r.deleteStrays()
		r.deleteEarlierGangs()
		if r.leavingDebug() {
			// The debug session was no training: activeDeadlineSeconds counts from the training
			// pods' creation, as after a resume, not from the debug pods'.
			d.StartTime = nil
		}
		if r.job.Debug {
			r.debugPhase()
			break
		}
		if r.outcome() {
			r.create = false
			d.CompletionTime = &r.now
			r.cleanUp()
			return
		}
		r.runningPhase()
	}
}

// build renders the objects that should exist after the decisions.
func (r *renderer) build() {
	if r.job.Dispatched {
		// Nothing of it but its Workload lives in this cluster, and its copy in a worker keeps
		// its deadline (multikueue.go).
		r.kueueDecisions()
		return
	}
	if r.job.TensorBoard != nil && !r.nameTaken() {
		r.out.TensorBoard = tensorBoard(r.job)
	}
	if r.create {
		r.out.Pods = r.desiredPods()
		if len(r.out.Decisions.Create) > 0 && (r.out.Decisions.StartTime == nil || r.job.Status.Phase == batch.JobPaused) {
			r.out.Decisions.StartTime = &r.now
		}
		// A status that lost its startTime (the operator stopped between creating the pods and
		// writing the status) takes it from the oldest pod, so the deadline still counts.
		if r.out.Decisions.StartTime == nil {
			r.out.Decisions.StartTime = r.oldestPodCreation()
		}
	}
	// The Service lives while the job has pods to run or pods left. The PodGroup lives only while
	// the job can still run: a paused job has none, a blocked one cannot have the one whose kind
	// is missing, and a finished job's goes at once, whatever pods clean-up keeps.
	// Note: a gang scheduler that sees fewer live pods than minMember (a finished job whose
	// Succeeded master is kept) takes the PodGroup for a gang still waiting and reserves its
	// minResources: Volcano does, holding the GPUs of finished jobs until they are deleted.
	if r.job.Kubeflow != nil {
		r.out.ReplicaServices = r.replicaServices()
		r.out.Autoscaler = r.autoscaler()
	}
	if r.create || r.podsRemain() {
		if r.job.Kubeflow == nil {
			r.out.Service = service(r.job)
		}
		if !r.job.Pause && r.out.Decisions.Blocked == nil && !r.terminal() {
			if g := gangOf(r.job); g != nil {
				gv, _ := g.served(r.in.InstalledCRDs) // served: the job is not Blocked
				r.out.PodGroup = podGroup(r.job, gv)
				if g == &kubernetesGang {
					r.out.Workload = kubernetesWorkload(r.job, gv)
				}
			}
		}
	}
	if r.job.TorchrunUnset {
		r.warn(WarnTorchrunOff, "spec.torchrunConfig has settings but not enabled: true, so the pods run the template's command, not torchrun, and the settings do nothing; set spec.torchrunConfig.enabled: true to launch with torchrun")
	}
	if r.job.elastic() && r.job.launcherRestarts() <= 0 {
		field := "spec.torchrunConfig.maxRestarts"
		if r.job.Kubeflow != nil {
			field = "spec.elasticPolicy.maxRestarts"
		}
		r.warn(WarnElasticRestarts, "the job is elastic but "+field+" is unset or 0: once it is scaled down, the remaining pods' torchrun agents have no restart to spare to go on in the smaller world, so they fail (torch 1.x after waiting 300 s) and the job restarts as a gang (a disruption, not counted in backoffCount); a scale-up can fail so too, when an agent sees its worker end as the world re-forms before it sees the newcomer; set "+field+" (each scale-down uses one restart of every remaining agent)")
	}
	r.deadline()
	r.expire()
	r.kueueDecisions()
	for w := range r.warnings {
		r.out.Decisions.Warnings = append(r.out.Decisions.Warnings, w)
	}
	sortWarnings(r.out.Decisions.Warnings)
}

func (r *renderer) warn(reason, message string) {
	r.warnings[Warning{Reason: reason, Message: message}] = true
}

func (r *renderer) delete(p *observedPod, reason string) {
	if p.deleting || p.pod.DeletionTimestamp != nil && !p.nodeLost {
		return // already going, or deleted in this round for another reason
	}
	r.out.Decisions.Delete = append(r.out.Decisions.Delete, Deletion{
		Name: p.pod.Name, UID: p.pod.UID, Reason: reason, Force: p.nodeLost,
	})
	p.deleting, p.restarting = true, reason == DeleteRestart
}

// oldestPodCreation is the creation time of the job's oldest observed pod, or nil.
func (r *renderer) oldestPodCreation() *metav1.Time {
	var oldest *metav1.Time
	for _, p := range r.allObserved() {
		if r.otherRunMode(p) {
			continue // a debug pod's start is no training's
		}
		if t := p.pod.CreationTimestamp; !t.IsZero() && (oldest == nil || t.Before(oldest)) {
			oldest = &metav1.Time{Time: t.UTC().Truncate(time.Second)}
		}
	}
	return oldest
}

// terminal reports whether the job is Succeeded or Failed after this round.
func (r *renderer) terminal() bool {
	p := r.out.Decisions.Phase
	return p == batch.JobSucceeded || p == batch.JobFailed
}

// podsRemain reports whether any observed pod stays after this round's deletions.
func (r *renderer) podsRemain() bool {
	for _, p := range r.allObserved() {
		if !p.deleting && p.pod.DeletionTimestamp == nil {
			return true
		}
	}
	return false
}

// finishedMessage is the message of a finished job's terminal condition: a later round keeps
// saying why the job ended (which pod failed, how), rather than wiping it.
func finishedMessage(j *Job) string {
	for _, c := range j.Status.Conditions {
		if (c.Type == batch.ConditionFailed || c.Type == batch.ConditionCompleted) && c.Status == metav1.ConditionTrue {
			return c.Message
		}
	}
	return ""
}

func finishedReason(j *Job) string {
	for _, c := range j.Status.Conditions {
		if (c.Type == batch.ConditionFailed || c.Type == batch.ConditionCompleted) && c.Status == metav1.ConditionTrue {
			return c.Reason
		}
	}
	return ""
}
