package render

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
	kubeflowv1 "github.com/trainyard/trainyard/apis/kubeflow/v1"
	"github.com/trainyard/trainyard/apis/kueue"
)

// This file holds every place where a job of a kubeflow.org kind (PyTorchJob, TFJob) is rendered
// differently from the T9k kinds, so that scripts written for Kubeflow's training operator run
// unchanged: the training port's name and default, the training.kubeflow.org labels, a headless
// Service per replica (named like its pod, so `J-master-0` and `J-worker-0.<ns>.svc` resolve), and
// the environment (MASTER_ADDR=J-master-0, PET_*, TF_CONFIG with per-replica Service addresses).
// Everything else (restarts, backoff, deadlines, clean-up, pause, gang scheduling, status) is the
// shared core.

// Kubeflow is set on a Job converted from a kubeflow.org kind.
type Kubeflow struct {
	// UnknownTypes are the keys of the replica-spec map that are no replica type of the kind
	// (`master` for `Master`, say): render refuses them, naming the key, as admission does.
	UnknownTypes []string
	// NprocPerNode is PET_NPROC_PER_NODE: PyTorchJob spec.nprocPerNode, default "auto".
	NprocPerNode string
	// Elastic is a PyTorchJob's elasticPolicy: torchrun's rendezvous settings, passed as PET_*.
	Elastic *KubeflowElastic
	// AllWorkers: a TFJob with neither chief nor master succeeds once every worker has
	// (successPolicy AllWorkers) rather than when worker 0 has.
	AllWorkers bool
	// DynamicWorker is a TFJob's enableDynamicWorker: each pod's TF_CONFIG has a sparse cluster
	// (tfSparseEnv), and a Worker that fails for good leaves the job running.
	DynamicWorker bool
	// MinAvailable and MinResources override the PodGroup's minMember and minResources
	// (runPolicy.schedulingPolicy).
	MinAvailable *int32
	MinResources corev1.ResourceList
	// TTLSecondsAfterFinished deletes the job that long after it finished.
	TTLSecondsAfterFinished *int32
	// GangScheduler is the job's scheduling.trainyard.dev/gang-scheduler annotation, as written.
	GangScheduler string
	// KueueQueue is the job's kueue.x-k8s.io/queue-name label: Kueue's own integration queues
	// the job and holds it through runPolicy.suspend (kueueHold).
	KueueQueue string
	// PausedByUser: `trainyard pause` deactivated the queued job's Workload (the annotation
	// batch.trainyard.dev/paused-by-user), so its suspension is the user's pause.
	PausedByUser bool
}

// KubeflowElastic is a PyTorchJob's elasticPolicy as the PET_* variables carry it.
type KubeflowElastic struct {
	Min, Max    int32
	RdzvBackend string
	// RdzvHost and RdzvPort default to worker 0 and the training port.
	RdzvHost    string
	RdzvPort    int32
	RdzvID      string
	RdzvConf    []kubeflowv1.RDZVConf
	MaxRestarts *int32
	Standalone  bool
	// Metrics, when set, make an HPA that scales the job's workers between Min and Max.
	Metrics []autoscalingv2.MetricSpec
}

// Kubeflow's environment variables for torchrun (PET_ is torchrun's prefix for its flags).
const (
	EnvPETNNodes        = "PET_NNODES"
	EnvPETNprocPerNode  = "PET_NPROC_PER_NODE"
	EnvPETNodeRank      = "PET_NODE_RANK"
	EnvPETMasterAddr    = "PET_MASTER_ADDR"
	EnvPETMasterPort    = "PET_MASTER_PORT"
	EnvPETRdzvBackend   = "PET_RDZV_BACKEND"
	EnvPETRdzvEndpoint  = "PET_RDZV_ENDPOINT"
	EnvPETRdzvID        = "PET_RDZV_ID"
	EnvPETRdzvConf      = "PET_RDZV_CONF"
	EnvPETMaxRestarts   = "PET_MAX_RESTARTS"
	EnvPETStandalone    = "PET_STANDALONE"
	DefaultNprocPerNode = "auto"
)

// trainingPort is the name and default of the port the environment contract points at.
func (j *Job) trainingPort() (string, int32) {
	switch {
	case j.Kubeflow != nil && j.Framework == TensorFlow:
		return kubeflowv1.TFPortName, kubeflowv1.DefaultTFPort
	case j.Kubeflow != nil:
		return kubeflowv1.PyTorchPortName, kubeflowv1.DefaultPyTorchPort
	case j.Framework == TensorFlow:
		return TFContainerName, DefaultTFPort
	}
	return PyTorchContainerName, DefaultPyTorchPort
}

// addTrainingPort gives a Kubeflow job's training container the training port (pytorchjob-port
// 23456, tfjob-port 2222) when none of its ports has that name, at the end of its ports, as
// Kubeflow's defaulting does; a port of that name keeps its number, and another port on the same
// number does not count. Note: the job is stored as written (there is no mutating webhook), so the
// port is added to the pods, whose Services publish it too (servicePortsOf).
func addTrainingPort(j *Job, c *corev1.Container) {
	name, port := j.trainingPort()
	for _, p := range c.Ports {
		if p.Name == name {
			return
		}
	}
	c.Ports = append(c.Ports, corev1.ContainerPort{Name: name, ContainerPort: port})
}

// portOf is the training port of replica type t's training container.
func (j *Job) portOf(t *ReplicaType) int32 {
	name, def := j.trainingPort()
	return containerPort(j.templateContainer(t), name, def)
}

// kubeflowLabels are the training.kubeflow.org labels of replica index of type t (the
// replica-type value in lower case, as Kubeflow writes it).
func kubeflowLabels(j *Job, t *ReplicaType, index int32) map[string]string {
	l := map[string]string{
		kubeflowv1.LabelJobName:      j.Name,
		kubeflowv1.LabelReplicaType:  t.Type,
		kubeflowv1.LabelReplicaIndex: strconv.FormatInt(int64(index), 10),
		kubeflowv1.LabelOperatorName: kubeflowv1.OperatorName(j.Kind),
	}
	if j.isMaster(t, index) {
		l[kubeflowv1.LabelJobRole] = kubeflowv1.JobRoleMaster
	}
	return l
}

// isMaster reports whether replica index of type t is the job's master: PyTorch Master-0, else
// Worker-0 (render's rank 0); TensorFlow Chief-0, else Master-0, else Worker-0.
func (j *Job) isMaster(t *ReplicaType, index int32) bool {
	if index != 0 {
		return false
	}
	if j.Framework == TensorFlow {
		return tfLeaderType(j.Replicas) == t.Type
	}
	return j.Replicas[masterTypeIndex(j.Replicas)].Type == t.Type
}

// tfLeaderType is the TensorFlow replica type whose replica 0 decides the job: chief, else
// master (Kubeflow's TFJob), else worker, else the first type.
func tfLeaderType(types []ReplicaType) string {
	for _, want := range []string{"chief", "master", "worker"} {
		for _, t := range types {
			if t.Type == want && t.Replicas > 0 {
				return want
			}
		}
	}
	return types[0].Type
}

// replicaServices names a Kubeflow job's headless Service per replica, named like its pod and
// selecting it alone, for every replica that has or will have a pod after this round.
//
// While the job's pod creation is paced to the scheduler (Decisions.HeldForScheduler), a
// replica's missing Service is due only once its pod is bound to a node: the Services then follow
// the bindings, each round that the bindings wake creating the new pods and the Services of the
// pods bound since, rather than rounds of their own. Nothing waits on a Service before its pod
// runs, and a pod runs after it is bound. Once nothing is held, every Service is due.
func (r *renderer) replicaServices() ReplicaServices {
	set := ReplicaServices{job: r.job}
	paced := r.out.Decisions.HeldForScheduler > 0
	for ti := range r.job.Replicas {
		t := &r.job.Replicas[ti]
		for i := int32(0); i < t.Replicas; i++ {
			p := r.observed[slot{t.Type, i}]
			// Note: a replica being restarted keeps its Service, rather than losing it with the
			// old pod and getting it back with the new one (a gang restart would rewrite them all).
			wanted := r.create && (p == nil || !p.deleting || p.restarting)
			remains := p != nil && !p.deleting && p.pod.DeletionTimestamp == nil
			if !wanted && !remains {
				continue
			}
			waits := paced && (p == nil || p.pod.Spec.NodeName == "")
			set.slots = append(set.slots, replicaSlot{typeIndex: ti, index: i, name: PodName(r.job.Name, t.Type, i), waits: waits})
		}
	}
	return set
}

// ReplicaServices are a Kubeflow job's per-replica Services: their names, in spec order and by
// index, and each Service built from the job on demand. The zero value is the empty set.
type ReplicaServices struct {
	job   *Job
	slots []replicaSlot
}

type replicaSlot struct {
	typeIndex int // in Job.Replicas
	index     int32
	name      string
	waits     bool // not due yet: the job is paced and the replica's pod is not bound
}

// Len is the number of Services.
func (s ReplicaServices) Len() int { return len(s.slots) }

// Due reports whether the i-th Service, if missing, is to be created now: false only while the
// job's pods are paced to the scheduler and the replica's pod is not yet bound to a node.
func (s ReplicaServices) Due(i int) bool { return !s.slots[i].waits }

// Name is the name of the i-th Service.
func (s ReplicaServices) Name(i int) string { return s.slots[i].name }

// All builds every Service.
func (s ReplicaServices) All() []*corev1.Service {
	out := make([]*corev1.Service, s.Len())
	for i := range out {
		out[i] = s.Service(i)
	}
	return out
}

// Service builds the i-th Service: headless, publishing its pod before it is ready, selecting the
// one pod of its replica, with the ports of its replica type.
func (s ReplicaServices) Service(i int) *corev1.Service {
	sl := s.slots[i]
	t := &s.job.Replicas[sl.typeIndex]
	labels := jobLabels(s.job)
	for k, v := range kubeflowLabels(s.job, t, sl.index) {
		labels[k] = v
	}
	return &corev1.Service{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{
			Name:            sl.name,
			Namespace:       s.job.Namespace,
			Labels:          labels,
			OwnerReferences: []metav1.OwnerReference{ownerRef(s.job)},
		},
		Spec: corev1.ServiceSpec{
			ClusterIP:                corev1.ClusterIPNone,
			PublishNotReadyAddresses: true,
			Selector: map[string]string{
				kubeflowv1.LabelJobName:      s.job.Name,
				kubeflowv1.LabelReplicaType:  t.Type,
				kubeflowv1.LabelReplicaIndex: labels[kubeflowv1.LabelReplicaIndex],
			},
			Ports: servicePortsOf(s.job, []ReplicaType{*t}),
		},
	}
}

// kubeflowPyTorchEnv is Kubeflow's PyTorchJob contract: MASTER_ADDR is the master's Service
// (J-master-0, or J-worker-0 for a job of workers only), RANK the pod's node rank, WORLD_SIZE the
// pods times the processes per pod, and torchrun's settings as PET_* variables.
type kubeflowPyTorchEnv struct {
	*pytorchEnv
	nnodes, nproc string
	elastic       []corev1.EnvVar
}

func newKubeflowPyTorchEnv(j *Job) *kubeflowPyTorchEnv {
	base := newPyTorchEnv(j)
	m := &j.Replicas[masterTypeIndex(j.Replicas)]
	base.masterAddr = PodName(j.Name, m.Type, 0)
	base.masterPort = strconv.Itoa(int(j.portOf(m)))
	e := &kubeflowPyTorchEnv{pytorchEnv: base, nproc: j.Kubeflow.NprocPerNode}
	if e.nproc == "" {
		e.nproc = DefaultNprocPerNode
	}
	// Note: with nprocPerNode auto or cpu the count is only known on the node; WORLD_SIZE then
	// counts pods (torchrun sets the real one for the processes it starts).
	per := int32(1)
	switch e.nproc {
	case "auto", "cpu":
	case "gpu":
		per = gpuLimit(j.templateContainer(m))
	default:
		if n, err := strconv.Atoi(e.nproc); err == nil && n > 0 {
			per = int32(n)
		}
	}
	base.worldSize = strconv.Itoa(int(j.PodCount() * max(per, 1)))
	e.nnodes = strconv.Itoa(int(j.PodCount()))
	if el := j.Kubeflow.Elastic; el != nil {
		e.nnodes = fmt.Sprintf("%d:%d", el.Min, el.Max)
		backend := el.RdzvBackend
		if backend == "" {
			backend = DefaultRdzvBackend
		}
		// Unset, the rendezvous is on worker 0 at its training port, as Kubeflow's operator has
		// it (the master's port may differ), or on the master in a job without workers.
		rdzv := m
		if wi := slices.IndexFunc(j.Replicas, func(t ReplicaType) bool { return t.Type == "worker" }); wi >= 0 {
			rdzv = &j.Replicas[wi]
		}
		host, port := el.RdzvHost, el.RdzvPort
		if host == "" {
			host = PodName(j.Name, rdzv.Type, 0)
		}
		if port == 0 {
			port = j.portOf(rdzv)
		}
		e.elastic = append(e.elastic,
			corev1.EnvVar{Name: EnvPETRdzvBackend, Value: backend},
			corev1.EnvVar{Name: EnvPETRdzvEndpoint, Value: host + ":" + strconv.Itoa(int(port))})
		if el.RdzvID != "" {
			e.elastic = append(e.elastic, corev1.EnvVar{Name: EnvPETRdzvID, Value: el.RdzvID})
		}
		if len(el.RdzvConf) > 0 {
			kv := make([]string, len(el.RdzvConf))
			for i, c := range el.RdzvConf {
				kv[i] = c.Key + "=" + c.Value
			}
			e.elastic = append(e.elastic, corev1.EnvVar{Name: EnvPETRdzvConf, Value: strings.Join(kv, ",")})
		}
		if el.MaxRestarts != nil {
			e.elastic = append(e.elastic, corev1.EnvVar{Name: EnvPETMaxRestarts, Value: strconv.Itoa(int(*el.MaxRestarts))})
		}
		if el.Standalone {
			e.elastic = append(e.elastic, corev1.EnvVar{Name: EnvPETStandalone, Value: "1"})
		}
	}
	return e
}

func hasType(j *Job, typ string) bool {
	for _, t := range j.Replicas {
		if t.Type == typ {
			return true
		}
	}
	return false
}

func (e *kubeflowPyTorchEnv) names() []string {
	return append(e.pytorchEnv.names(), EnvPETNNodes, EnvPETNprocPerNode, EnvPETNodeRank, EnvPETMasterAddr, EnvPETMasterPort,
		EnvPETRdzvBackend, EnvPETRdzvEndpoint, EnvPETRdzvID, EnvPETRdzvConf, EnvPETMaxRestarts, EnvPETStandalone)
}

func (e *kubeflowPyTorchEnv) vars(t *ReplicaType, index int32) []corev1.EnvVar {
	rank := strconv.Itoa(int(e.firstRank[t.Type] + index))
	vars := []corev1.EnvVar{
		{Name: EnvMasterAddr, Value: e.masterAddr},
		{Name: EnvMasterPort, Value: e.masterPort},
		{Name: EnvWorldSize, Value: e.worldSize},
		{Name: EnvRank, Value: rank},
		{Name: EnvPythonUnbuffered, Value: "1"},
		{Name: EnvPETNNodes, Value: e.nnodes},
		{Name: EnvPETNprocPerNode, Value: e.nproc},
		{Name: EnvPETNodeRank, Value: rank},
		{Name: EnvPETMasterAddr, Value: e.masterAddr},
		{Name: EnvPETMasterPort, Value: e.masterPort},
	}
	return append(vars, e.elastic...)
}

// newKubeflowTFEnv is Kubeflow's TFJob contract: TF_CONFIG's cluster lists every replica type at
// its Service address J-<type>-<i>.<namespace>.svc:<port>; a job of one replica gets no TF_CONFIG.
// Note: the evaluator is listed too. Older releases of Kubeflow's operator (tf-operator) left it
// out, as TensorFlow's estimators do not count it in the training cluster; v1.8.1 lists every
// type, and that is what scripts written for it read.
func newKubeflowTFEnv(j *Job) envContract {
	if j.PodCount() <= 1 {
		return noEnv{}
	}
	cluster := make(map[string][]string, len(j.Replicas))
	for ti := range j.Replicas {
		t := &j.Replicas[ti]
		port := ":" + strconv.Itoa(int(j.portOf(t)))
		addrs := make([]string, t.Replicas)
		for i := range addrs {
			addrs[i] = PodName(j.Name, t.Type, int32(i)) + "." + j.Namespace + ".svc" + port
		}
		cluster[t.Type] = addrs
	}
	if j.Kubeflow.DynamicWorker {
		return &tfSparseEnv{cluster: cluster}
	}
	raw, _ := json.Marshal(cluster)
	return &tfEnv{prefix: `{"cluster":` + string(raw) + `,"task":{"type":`}
}

// tfSparseEnv is TF_CONFIG under a TFJob's enableDynamicWorker, as Kubeflow's v1.8.1 writes it: a
// sparse cluster (TensorFlow's tf.train.ClusterSpec takes a dict of index to address for a type)
// with no "environment". A Worker sees every PS and, among the Workers, itself only
// ({"cluster":{"worker":{"1":"J-worker-1.<ns>.svc:2222"},"ps":[...]},"task":...}); a PS sees
// itself only; every other type (Chief, Master, Evaluator) gets {"worker":{},"ps":[]}. Note: a
// Worker of a job with no PS gets "ps":[] where Kubeflow writes "ps":null, which TensorFlow's
// ClusterSpec refuses.
type tfSparseEnv struct {
	cluster map[string][]string
}

func (e *tfSparseEnv) names() []string { return []string{EnvTFConfig} }

func (e *tfSparseEnv) vars(t *ReplicaType, index int32) []corev1.EnvVar {
	var cfg struct {
		Cluster struct {
			Worker map[int32]string `json:"worker"`
			PS     []string         `json:"ps"`
		} `json:"cluster"`
		Task struct {
			Type  string `json:"type"`
			Index int32  `json:"index"`
		} `json:"task"`
	}
	cfg.Cluster.Worker, cfg.Cluster.PS = map[int32]string{}, []string{}
	switch t.Type {
	case "ps":
		cfg.Cluster.PS = append(cfg.Cluster.PS, e.cluster["ps"][index])
	case "worker":
		cfg.Cluster.PS = append(cfg.Cluster.PS, e.cluster["ps"]...)
		cfg.Cluster.Worker[index] = e.cluster["worker"][index]
	}
	cfg.Task.Type, cfg.Task.Index = t.Type, index
	raw, _ := json.Marshal(cfg)
	return []corev1.EnvVar{{Name: EnvTFConfig, Value: string(raw)}}
}

// noEnv injects nothing.
type noEnv struct{}

func (noEnv) names() []string                          { return nil }
func (noEnv) vars(*ReplicaType, int32) []corev1.EnvVar { return nil }

// allWorkersSucceeded reports whether every worker of a TFJob has succeeded (successPolicy
// AllWorkers, for a job with neither chief nor master).
func (r *renderer) allWorkersSucceeded() bool {
	for _, t := range r.job.Replicas {
		if t.Type != "worker" {
			continue
		}
		for i := int32(0); i < t.Replicas; i++ {
			p := r.observed[slot{t.Type, i}]
			if p == nil || !p.succeeded || !r.current(p) {
				return false
			}
		}
		return t.Replicas > 0
	}
	return false
}

// expire deletes a finished job once ttlSecondsAfterFinished has passed since it finished, and
// asks to be run again when that falls due.
func (r *renderer) expire() {
	if r.job.Kubeflow == nil || r.job.Kubeflow.TTLSecondsAfterFinished == nil {
		return
	}
	d := &r.out.Decisions
	finished := d.Phase == batch.JobSucceeded || d.Phase == batch.JobFailed
	if !finished || d.CompletionTime == nil {
		return
	}
	ttl := time.Duration(*r.job.Kubeflow.TTLSecondsAfterFinished) * time.Second
	left := d.CompletionTime.Add(ttl).Sub(r.in.Now)
	if left <= 0 {
		d.DeleteJob = true
		return
	}
	if d.RequeueAfter == nil || left < d.RequeueAfter.Duration {
		d.RequeueAfter = &metav1.Duration{Duration: left}
	}
}

// autoscaler renders the HorizontalPodAutoscaler of an elastic PyTorchJob with
// elasticPolicy.metrics: it scales the job's workers (its /scale subresource) between minReplicas
// and maxReplicas on those metrics. It exists while the job runs.
func (r *renderer) autoscaler() *autoscalingv2.HorizontalPodAutoscaler {
	k := r.job.Kubeflow
	if k == nil || k.Elastic == nil || len(k.Elastic.Metrics) == 0 || !r.create {
		return nil
	}
	return &autoscalingv2.HorizontalPodAutoscaler{
		TypeMeta: metav1.TypeMeta{APIVersion: "autoscaling/v2", Kind: "HorizontalPodAutoscaler"},
		ObjectMeta: metav1.ObjectMeta{
			Name:            r.job.Name,
			Namespace:       r.job.Namespace,
			Labels:          jobLabels(r.job),
			OwnerReferences: []metav1.OwnerReference{ownerRef(r.job)},
		},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: r.job.APIVersion, Kind: r.job.Kind, Name: r.job.Name},
			MinReplicas:    ptr(k.Elastic.Min),
			MaxReplicas:    k.Elastic.Max,
			Metrics:        k.Elastic.Metrics,
		},
	}
}

// kueueHold: a kubeflow.org job labelled kueue.x-k8s.io/queue-name is queued by Kueue's own
// integration, which suspends it (runPolicy.suspend) until it admits the job's Workload, and
// again when it evicts it. That suspension is Kueue's hold, not the user's pause: with Kueue
// installed it is said as Queued, in Kueue's words from the job's Workload (the one Kueue made,
// which the controller observes: kueueWait, as for the T9k kinds), so the job says why it waits
// (a preemption, a lack of quota). The pods go as for any suspend, and the phase stays Paused, as
// Kubeflow's Suspended condition has it. `trainyard pause` marks the job it pauses
// (PausedByUser): such a job says it is paused, as any suspended job, and not Queued, since no
// queue would run it before `trainyard resume`; but only while its Workload is inactive (or not
// observed): one made active again by hand is queued, and the stale mark is not read.
func (r *renderer) kueueHold() {
	kf := r.job.Kubeflow
	if kf == nil || kf.KueueQueue == "" || !r.in.InstalledCRDs[kueue.WorkloadCRD] {
		return
	}
	k := r.in.Kueue
	var w *kueue.Workload
	if k != nil {
		w = k.Workload
	}
	if cause, _, _ := KueueDeactivation(w); kf.PausedByUser && (w == nil || !workloadActive(w)) && cause == "" {
		return
	}
	var msg string
	switch {
	case k == nil:
		// Not observed (a render without the cluster).
		msg = fmt.Sprintf("Kueue holds the job in LocalQueue %s: it set runPolicy.suspend and clears it when it admits the job's Workload "+
			"(trainyard describe shows the Workload; one made inactive waits until it is active again)", kf.KueueQueue)
	case w == nil:
		msg = fmt.Sprintf("Kueue holds the job in LocalQueue %s (runPolicy.suspend) and has made no Workload for it yet", kf.KueueQueue)
	case condition(w, kueue.WorkloadFinished):
		c := meta.FindStatusCondition(w.Status.Conditions, kueue.WorkloadFinished)
		msg = fmt.Sprintf("Workload %s is finished (%s: %s); Kueue does not run the job under it", w.Name, c.Reason, c.Message)
	case !workloadActive(w):
		r.out.Decisions.Queued = &Blocked{Reason: ReasonDeactivated, Message: inactiveMessage(w, r.job)}
		return
	case condition(w, kueue.WorkloadAdmitted) && !condition(w, kueue.WorkloadEvicted):
		msg = fmt.Sprintf("Kueue admitted Workload %s and is about to clear runPolicy.suspend", w.Name)
	default:
		msg = kueueWait(w, kf.KueueQueue, k.Preemptor)
	}
	r.out.Decisions.Queued = &Blocked{Reason: ReasonQueued, Message: msg}
}
