package v1beta1

// Labels Trainyard puts on every object it renders for a T9k job. Set by render, read by the
// controller's watches and by users' selectors (`kubectl get pods -l ...`).
const (
	// LabelOwnerKind is the kind of the job that owns the object, e.g. PyTorchTrainingJob.
	LabelOwnerKind = "tensorstack.dev/owner-kind"
	// LabelOwnerName is the name of the job that owns the object. Together with LabelOwnerKind it
	// selects every pod of a job; the headless Service selects on both.
	LabelOwnerName = "tensorstack.dev/owner-name"
	// LabelReplicaType is the replica type of a pod, as written in spec.replicaSpecs[].type.
	LabelReplicaType = "batch.tensorstack.dev/replica-type"
	// LabelReplicaIndex is the index of a pod within its replica type, in decimal.
	LabelReplicaIndex = "batch.tensorstack.dev/replica-index"
)

// Labels read by the T9k scheduler. Set by render on pods and PodGroups when
// spec.scheduler.t9kScheduler is chosen (role is set on every pod, as the T9k controller does).
const (
	// LabelSchedulerRole is the replica type of a pod, the role the PodGroup counts it under.
	LabelSchedulerRole = "scheduler.tensorstack.dev/role"
	// LabelSchedulerGroupName names the PodGroup a pod belongs to.
	LabelSchedulerGroupName = "scheduler.tensorstack.dev/group-name"
	// LabelSchedulerQueue names the queue of the PodGroup a pod belongs to.
	LabelSchedulerQueue = "scheduler.tensorstack.dev/queue"
)

// Keys read by the other gang schedulers Trainyard supports. Set by render on pods.
const (
	// AnnotationVolcanoGroupName names the Volcano PodGroup of a pod.
	AnnotationVolcanoGroupName = "scheduling.k8s.io/group-name"
	// AnnotationVolcanoTaskSpec names a pod's task (its replica type) within its Volcano PodGroup,
	// as Volcano's own jobs and Kubeflow's operator set it.
	AnnotationVolcanoTaskSpec = "volcano.sh/task-spec"
	// LabelCoschedulingPodGroup names the scheduler-plugins (coscheduling) PodGroup of a pod.
	LabelCoschedulingPodGroup = "scheduling.x-k8s.io/pod-group"
)

// Annotations on a kubeflow.org PyTorchJob or TFJob that choose the kube-scheduler's own gang
// scheduling, which Kubeflow's schema has no field for (spec.scheduler.kubernetes on the T9k
// kinds). Set by users; read by render.
const (
	// AnnotationGangScheduler set to GangSchedulerKubernetes gives the job a scheduling.k8s.io
	// Workload and PodGroup; runPolicy.schedulingPolicy.minAvailable still sets the gang's size.
	AnnotationGangScheduler = "scheduling.trainyard.dev/gang-scheduler"
	// AnnotationGangTopologyKey is the node label whose value every pod of the gang must share.
	AnnotationGangTopologyKey = "scheduling.trainyard.dev/topology-key"
	GangSchedulerKubernetes   = "kubernetes"
)

// Names of the schedulers pods are handed to when a gang scheduler is chosen.
const (
	T9kSchedulerName     = "t9k-scheduler"
	VolcanoSchedulerName = "volcano"
	// CoschedulingSchedulerName is used when the template names no scheduler of its own.
	CoschedulingSchedulerName = "scheduler-plugins-scheduler"
)

// Annotations Trainyard puts on the pods it renders.
const (
	// AnnotationRunMode records the run mode a pod was created in (Immediate or Debug). Set by
	// render; read by render, which replaces pods when debug mode is switched on or off.
	AnnotationRunMode = "batch.tensorstack.dev/run-mode"
	// AnnotationGangRestarts records the job's status.gangRestarts when the pod was created, in
	// decimal; absent means 0. Set by render; read by render, which deletes the pods of an earlier
	// gang and creates the new one only once they are all gone.
	AnnotationGangRestarts = "batch.tensorstack.dev/gang-restarts"
	// AnnotationTemplateHash is a hash of the replica type's template the pod was made from
	// (render's TemplateHash). Set by render; read by render, which does not hold a restart in its
	// back-off when the template has been edited since (a fixed image, say). Absent on pods made
	// before the operator wrote it: they are taken as made from the current template.
	AnnotationTemplateHash = "batch.trainyard.dev/template-hash"
)

// AnnotationPausedByUser on a kubeflow.org PyTorchJob or TFJob queued by Kueue's own integration
// says that `trainyard pause` deactivated its Workload: Kueue's runPolicy.suspend is then the
// user's pause, not Kueue's hold. Its value is the Workload's name. Set by `trainyard pause`,
// removed by `trainyard resume`; read by render.
const AnnotationPausedByUser = "batch.trainyard.dev/paused-by-user"

// AnnotationRestartScope on a kubeflow.org PyTorchJob or TFJob chooses what is restarted when a
// replica must be, as runPolicy.restartScope does on the T9k kinds (Kubeflow's schema has no such
// field): Gang or Replica. Set by users; read (and checked) by render.
const AnnotationRestartScope = "batch.trainyard.dev/restart-scope"

// LabelTensorBoard is set to the job's name on the TensorBoard's pods and selects them. Those pods
// deliberately lack LabelOwnerKind, so the job's headless Service and its replica counts never
// include them. Set by render; read by the TensorBoard Deployment and Service.
const LabelTensorBoard = "batch.tensorstack.dev/tensorboard"
