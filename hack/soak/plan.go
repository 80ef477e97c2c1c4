package main

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
	kubeflowv1 "github.com/trainyard/trainyard/apis/kubeflow/v1"
)

// The job kinds the soak creates, both APIs.
const (
	kindPTJ = "PyTorchTrainingJob"
	kindTFJ = "TensorFlowTrainingJob"
	kindPT  = "PyTorchJob"
	kindTF  = "TFJob"
)

var allKinds = []string{kindPTJ, kindTFJ, kindPT, kindTF}

// namePrefix is the start of a job's name by kind: the name says the kind in logs and evidence.
var namePrefix = map[string]string{kindPTJ: "ptj", kindTFJ: "tfj", kindPT: "kpt", kindTF: "ktf"}

// Simulation annotations read by the cluster's KWOK stages (hack/kwok/pod-stages.yaml).
const (
	simStartDelay  = "sim.trainyard.dev/start-delay"
	simRunDuration = "sim.trainyard.dev/run-duration"
	simExitCode    = "sim.trainyard.dev/exit-code"
)

// podSim is how a replica type's pods behave under KWOK: Running after startDelay, then, unless
// runFor is 0 (run until deleted), terminated with exitCode after runFor. Every pod of the type,
// including the ones a restart creates, behaves the same.
type podSim struct {
	startDelay time.Duration
	runFor     time.Duration
	exitCode   int32
}

func (s podSim) annotations() map[string]string {
	a := map[string]string{simStartDelay: s.startDelay.String()}
	if s.runFor > 0 {
		a[simRunDuration] = s.runFor.String()
		a[simExitCode] = strconv.Itoa(int(s.exitCode))
	}
	return a
}

func (s podSim) String() string {
	if s.runFor == 0 {
		return "runs until deleted"
	}
	return fmt.Sprintf("exits %d after %s", s.exitCode, s.runFor)
}

// replicaPlan is one replica type of a job.
type replicaPlan struct {
	typ      string // as the kind spells it: master, chief, Worker, PS ...
	replicas int32
	policy   string // a restart policy, or "" for the kind's default
	sim      podSim
}

// elasticPlan is an elastic job's bounds: expected counts every pod of a PyTorchTrainingJob,
// the Worker replicas of a PyTorchJob.
type elasticPlan struct{ min, max, expected int32 }

// jobPlan is a job the soak creates, drawn at random.
type jobPlan struct {
	kind, name   string
	replicas     []replicaPlan
	cleanUp      string // cleanUpPolicy (T9k) or cleanPodPolicy (Kubeflow); "" for the default
	backoffLimit *int32
	deadline     *int64
	ttl          *int32 // Kubeflow ttlSecondsAfterFinished
	elastic      *elasticPlan
	allWorkers   bool // TFJob successPolicy AllWorkers
	// legacyLayout puts a Kubeflow job's run policy directly under spec (the older layout).
	legacyLayout bool
	// restartScope is runPolicy.restartScope (the Kubeflow kinds' annotation); "" for what can
	// recover.
	restartScope batch.RestartScope
}

func (p jobPlan) pods() int32 {
	var n int32
	for _, r := range p.replicas {
		n += r.replicas
	}
	return n
}

func (p jobPlan) describe() string {
	s := fmt.Sprintf("%s %s:", p.kind, p.name)
	for _, r := range p.replicas {
		policy := r.policy
		if policy == "" {
			policy = "default"
		}
		s += fmt.Sprintf(" %s x%d (%s, %s);", r.typ, r.replicas, policy, r.sim)
	}
	if p.elastic != nil {
		s += fmt.Sprintf(" elastic %d..%d expected %d;", p.elastic.min, p.elastic.max, p.elastic.expected)
	}
	if p.restartScope != "" {
		s += fmt.Sprintf(" restartScope %s;", p.restartScope)
	}
	if p.backoffLimit != nil {
		s += fmt.Sprintf(" backoffLimit %d;", *p.backoffLimit)
	}
	if p.deadline != nil {
		s += fmt.Sprintf(" deadline %ds;", *p.deadline)
	}
	if p.ttl != nil {
		s += fmt.Sprintf(" ttl %ds;", *p.ttl)
	}
	if p.cleanUp != "" {
		s += " clean-up " + p.cleanUp + ";"
	}
	if p.allWorkers {
		s += " successPolicy AllWorkers;"
	}
	return s
}

// planner draws jobs from the run's seeded random source.
type planner struct{ rng *rand.Rand }

func (pl planner) chance(p float64) bool { return pl.rng.Float64() < p }

func (pl planner) between(lo, hi int) int { return lo + pl.rng.IntN(hi-lo+1) }

func (pl planner) oneOf(choices ...string) string { return choices[pl.rng.IntN(len(choices))] }

// exitCodes are drawn with these weights: mostly success, then the retryable signal codes
// (130, 137, 138, 143) and plain errors (1, 2), so that every restart policy meets both kinds.
var exitCodes = []struct {
	code   int32
	weight int
}{{0, 50}, {1, 14}, {2, 6}, {137, 14}, {143, 6}, {130, 5}, {138, 5}}

func (pl planner) exitCode() int32 {
	total := 0
	for _, c := range exitCodes {
		total += c.weight
	}
	n := pl.rng.IntN(total)
	for _, c := range exitCodes {
		if n < c.weight {
			return c.code
		}
		n -= c.weight
	}
	return 0
}

// sim draws a replica type's behaviour; the type that decides success ends more often.
func (pl planner) sim(leader bool) podSim {
	s := podSim{startDelay: time.Duration(pl.between(0, 30)) * 100 * time.Millisecond}
	ends := 0.4
	if leader {
		ends = 0.8
	}
	if pl.chance(ends) {
		s.runFor = time.Duration(pl.between(6, 50)) * time.Second
		s.exitCode = pl.exitCode()
		if leader && pl.chance(0.5) {
			s.exitCode = 0
		}
	}
	return s
}

func (pl planner) policy() string {
	return pl.oneOf("", "Never", "OnFailure", "Always", "ExitCode")
}

// plan draws a job of the kind: 1 to 8 pods, random restart policies, pod behaviour, clean-up,
// backoff limit, sometimes a deadline, a TTL (Kubeflow) or elastic bounds (PyTorch).
func (pl planner) plan(kind, name string) jobPlan {
	p := jobPlan{kind: kind, name: name}
	add := func(typ string, n int32, leader bool) {
		if n > 0 {
			p.replicas = append(p.replicas, replicaPlan{typ: typ, replicas: n, policy: pl.policy(), sim: pl.sim(leader)})
		}
	}
	switch kind {
	case kindPTJ:
		switch {
		case pl.chance(0.3):
			e := &elasticPlan{min: 2, max: int32(pl.between(3, 6))}
			e.expected = int32(pl.between(int(e.min), int(e.max)))
			p.elastic = e
			add(batch.PyTorchReplicaMaster, 1, true)
			add(batch.PyTorchReplicaWorker, e.expected-1, false)
		case pl.chance(0.8):
			add(batch.PyTorchReplicaMaster, 1, true)
			add(batch.PyTorchReplicaWorker, int32(pl.between(0, 6)), false)
		default:
			add(batch.PyTorchReplicaWorker, int32(pl.between(1, 4)), true)
		}
	case kindTFJ:
		chief := pl.chance(0.5)
		if chief {
			add(string(batch.TensorFlowReplicaChief), 1, true)
		}
		add(string(batch.TensorFlowReplicaPS), int32(pl.between(0, 2)), false)
		add(string(batch.TensorFlowReplicaWorker), int32(pl.between(1, 4)), !chief)
		if pl.chance(0.2) {
			add(string(batch.TensorFlowReplicaEvaluator), 1, false)
		}
	case kindPT:
		master := pl.chance(0.8)
		if master {
			add(string(kubeflowv1.ReplicaTypeMaster), 1, true)
		}
		workers := int32(pl.between(1, 6))
		if master && pl.chance(0.3) {
			e := &elasticPlan{min: 1, max: int32(pl.between(3, 6))}
			e.expected = int32(pl.between(int(e.min), int(e.max)))
			p.elastic = e
			workers = e.expected
		}
		add(string(kubeflowv1.ReplicaTypeWorker), workers, !master)
	case kindTF:
		leader := pl.oneOf("Chief", "Chief", "Chief", "Master", "", "", "")
		if leader != "" {
			add(leader, 1, true)
		}
		add(string(kubeflowv1.ReplicaTypePS), int32(pl.between(0, 2)), false)
		add(string(kubeflowv1.ReplicaTypeWorker), int32(pl.between(1, 4)), leader == "")
		if pl.chance(0.2) {
			add(string(kubeflowv1.ReplicaTypeEvaluator), 1, false)
		}
		p.allWorkers = leader == "" && pl.chance(0.4)
	}
	kubeflow := kind == kindPT || kind == kindTF
	if kubeflow {
		p.cleanUp = pl.oneOf("", "All", "Running", "None")
		p.legacyLayout = pl.chance(0.5)
		if pl.chance(0.2) {
			p.ttl = ptrTo(int32(pl.between(5, 30)))
		}
	} else {
		p.cleanUp = pl.oneOf("", "All", "Unfinished", "None", "all", "unfinished")
	}
	if pl.chance(0.5) {
		p.backoffLimit = ptrTo(int32(pl.between(0, 5)))
	}
	if pl.chance(0.3) {
		p.restartScope = batch.RestartScope(pl.oneOf(string(batch.RestartScopeGang), string(batch.RestartScopeReplica)))
	}
	if pl.chance(0.2) {
		p.deadline = ptrTo(int64(pl.between(25, 90)))
	}
	return p
}

// object is the plan as the API object to create in namespace ns.
func (p jobPlan) object(ns string) client.Object {
	meta := metav1.ObjectMeta{Name: p.name, Namespace: ns}
	if p.restartScope != "" && (p.kind == kindPT || p.kind == kindTF) {
		meta.Annotations = map[string]string{batch.AnnotationRestartScope: string(p.restartScope)}
	}
	switch p.kind {
	case kindPTJ:
		job := &batch.PyTorchTrainingJob{ObjectMeta: meta}
		for _, r := range p.replicas {
			job.Spec.ReplicaSpecs = append(job.Spec.ReplicaSpecs, batch.PyTorchReplicaSpec{Type: r.typ, ReplicaTemplate: p.t9kTemplate(r, "pytorch")})
		}
		if e := p.elastic; e != nil {
			job.Spec.TorchrunConfig = &batch.TorchrunConfig{Enabled: ptrTo(true)}
			job.Spec.Elastic = &batch.ElasticConfig{Enabled: ptrTo(true), MinReplicas: &e.min, MaxReplicas: &e.max, ExpectedReplicas: &e.expected}
		}
		job.Spec.RunPolicy = p.t9kRunPolicy()
		return job
	case kindTFJ:
		job := &batch.TensorFlowTrainingJob{ObjectMeta: meta}
		for _, r := range p.replicas {
			job.Spec.ReplicaSpecs = append(job.Spec.ReplicaSpecs, batch.TensorFlowReplicaSpec{Type: batch.TensorFlowReplicaType(r.typ), ReplicaTemplate: p.t9kTemplate(r, "tensorflow")})
		}
		job.Spec.RunPolicy = p.t9kRunPolicy()
		return job
	case kindPT:
		job := &kubeflowv1.PyTorchJob{ObjectMeta: meta}
		job.Spec.PyTorchReplicaSpecs = p.kubeflowReplicas(kubeflowv1.PyTorchContainerName)
		if e := p.elastic; e != nil {
			job.Spec.ElasticPolicy = &kubeflowv1.ElasticPolicy{MinReplicas: &e.min, MaxReplicas: &e.max}
		}
		p.setRunPolicy(&job.Spec.RunPolicy, &job.Spec.BackoffLimit, &job.Spec.ActiveDeadlineSeconds, &job.Spec.TTLSecondsAfterFinished, &job.Spec.CleanPodPolicy)
		return job
	default:
		job := &kubeflowv1.TFJob{ObjectMeta: meta}
		job.Spec.TFReplicaSpecs = p.kubeflowReplicas(kubeflowv1.TFContainerName)
		if p.allWorkers {
			job.Spec.SuccessPolicy = ptrTo(kubeflowv1.SuccessPolicyAllWorkers)
		}
		p.setRunPolicy(&job.Spec.RunPolicy, &job.Spec.BackoffLimit, &job.Spec.ActiveDeadlineSeconds, &job.Spec.TTLSecondsAfterFinished, &job.Spec.CleanPodPolicy)
		return job
	}
}

func (p jobPlan) podTemplate(r replicaPlan, container string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Annotations: r.sim.annotations()},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptrTo(int64(0)),
			Containers:                    []corev1.Container{{Name: container, Image: "example.invalid/train:1", Args: []string{"train.py"}}},
		},
	}
}

func (p jobPlan) t9kTemplate(r replicaPlan, container string) batch.ReplicaTemplate {
	return batch.ReplicaTemplate{
		Replicas:      ptrTo(r.replicas),
		RestartPolicy: batch.RestartPolicy(r.policy),
		Template:      p.podTemplate(r, container),
	}
}

func (p jobPlan) t9kRunPolicy() *batch.RunPolicy {
	return &batch.RunPolicy{BackoffLimit: p.backoffLimit, ActiveDeadlineSeconds: p.deadline, CleanUpPolicy: batch.CleanUpPolicy(p.cleanUp), RestartScope: p.restartScope}
}

func (p jobPlan) kubeflowReplicas(container string) map[kubeflowv1.ReplicaType]*kubeflowv1.ReplicaSpec {
	out := map[kubeflowv1.ReplicaType]*kubeflowv1.ReplicaSpec{}
	for _, r := range p.replicas {
		out[kubeflowv1.ReplicaType(r.typ)] = &kubeflowv1.ReplicaSpec{
			Replicas:      ptrTo(r.replicas),
			RestartPolicy: kubeflowv1.RestartPolicy(r.policy),
			Template:      p.podTemplate(r, container),
		}
	}
	return out
}

// setRunPolicy writes a Kubeflow job's run policy, in runPolicy or (the older layout) in the
// four fields directly under spec.
func (p jobPlan) setRunPolicy(rp **kubeflowv1.RunPolicy, backoff **int32, deadline **int64, ttl **int32, clean **kubeflowv1.CleanPodPolicy) {
	var cleanPod *kubeflowv1.CleanPodPolicy
	if p.cleanUp != "" {
		cleanPod = ptrTo(kubeflowv1.CleanPodPolicy(p.cleanUp))
	}
	if p.legacyLayout {
		*backoff, *deadline, *ttl, *clean = p.backoffLimit, p.deadline, p.ttl, cleanPod
		return
	}
	*rp = &kubeflowv1.RunPolicy{BackoffLimit: p.backoffLimit, ActiveDeadlineSeconds: p.deadline, TTLSecondsAfterFinished: p.ttl, CleanPodPolicy: cleanPod}
}

func ptrTo[T any](v T) *T { return &v }
