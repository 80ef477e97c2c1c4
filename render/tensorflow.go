package render

import (
	"encoding/json"
	"strconv"

	corev1 "k8s.io/api/core/v1"
)

// EnvTFConfig describes the whole TensorFlow cluster and the pod's own task.
const EnvTFConfig = "TF_CONFIG"

// tfEnv renders TF_CONFIG:
// {"cluster":{"<type>":["J-<type>-<i>.J:<port>",...]},"task":{"type":"<type>","index":<i>},"environment":"cloud"}
// each type's port being its training container's port named tensorflow, else 2222.
//
// Decision: the evaluator is not part of the training cluster. The chief, workers and parameter
// servers get a cluster without it; an evaluator gets every type, itself included. TensorFlow's own
// distribute coordinator splits the cluster the same way (training tasks never see the evaluator,
// the evaluator needs its own job listed); its strategies refuse a cluster that lists more than one
// evaluator (multi_worker_util._validate_cluster_spec), and ParameterServerStrategy's coordinator
// connects to every task it is given, so an evaluator listed there, which runs no tf.distribute
// server, blocks the chief (tensorflow/tensorflow#46169).
type tfEnv struct {
	// prefix is `{"cluster":{...},"task":{"type":`, the same for every pod (every pod but an
	// evaluator's where evalPrefix is set).
	prefix string
	// evalPrefix, when set, is the evaluators' prefix: the cluster with the evaluators listed.
	evalPrefix string
}

func newTFEnv(j *Job) *tfEnv {
	cluster := make(map[string][]string, len(j.Replicas))
	for ti := range j.Replicas {
		t := &j.Replicas[ti]
		if t.Replicas == 0 {
			// A type with no replica is absent (a chief with replicas 0: worker 0 decides). Listed
			// as an empty job, TensorFlow would take it as present: a "chief" job, even empty, makes
			// no worker the chief and the chief's task the collective leader, and an empty job
			// fails ClusterSpec.job_tasks (max() of nothing).
			continue
		}
		port := ":" + strconv.Itoa(int(j.portOf(t)))
		addrs := make([]string, t.Replicas)
		for i := range addrs {
			addrs[i] = PodName(j.Name, t.Type, int32(i)) + "." + j.Name + port
		}
		cluster[t.Type] = addrs
	}
	raw, _ := json.Marshal(cluster) // maps of strings always marshal; keys come out sorted
	env := &tfEnv{prefix: `{"cluster":` + string(raw) + `,"task":{"type":`}
	if len(cluster[tfEvaluator]) > 0 {
		env.evalPrefix = env.prefix
		delete(cluster, tfEvaluator)
		raw, _ = json.Marshal(cluster)
		env.prefix = `{"cluster":` + string(raw) + `,"task":{"type":`
	}
	return env
}

const tfEvaluator = "evaluator"

func (e *tfEnv) names() []string { return []string{EnvTFConfig} }

// vars completes the shared prefix with the pod's task. Note: built by concatenation rather than
// json.Marshal, which would re-validate the whole cluster for every pod (quadratic in job size).
func (e *tfEnv) vars(t *ReplicaType, index int32) []corev1.EnvVar {
	typ, _ := json.Marshal(t.Type)
	prefix := e.prefix
	if t.Type == tfEvaluator && e.evalPrefix != "" {
		prefix = e.evalPrefix
	}
	cfg := prefix + string(typ) + `,"index":` + strconv.Itoa(int(index)) + `},"environment":"cloud"}`
	return []corev1.EnvVar{{Name: EnvTFConfig, Value: cfg}}
}
