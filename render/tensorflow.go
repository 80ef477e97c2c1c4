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
// with every replica type listed; each type's port is its training container's port named
// tensorflow, else 2222.
type tfEnv struct {
	// prefix is `{"cluster":{...},"task":{"type":"`, the same for every pod.
	prefix string
}

func newTFEnv(j *Job) *tfEnv {
	cluster := make(map[string][]string, len(j.Replicas))
	for ti := range j.Replicas {
		t := &j.Replicas[ti]
		port := ":" + strconv.Itoa(int(j.portOf(t)))
		addrs := make([]string, t.Replicas)
		for i := range addrs {
			addrs[i] = PodName(j.Name, t.Type, int32(i)) + "." + j.Name + port
		}
		cluster[t.Type] = addrs
	}
	raw, _ := json.Marshal(cluster) // maps of strings always marshal; keys come out sorted
	return &tfEnv{prefix: `{"cluster":` + string(raw) + `,"task":{"type":`}
}

func (e *tfEnv) names() []string { return []string{EnvTFConfig} }

// vars completes the shared prefix with the pod's task. Note: built by concatenation rather than
// json.Marshal, which would re-validate the whole cluster for every pod (quadratic in job size).
func (e *tfEnv) vars(t *ReplicaType, index int32) []corev1.EnvVar {
	typ, _ := json.Marshal(t.Type)
	cfg := e.prefix + string(typ) + `,"index":` + strconv.Itoa(int(index)) + `},"environment":"cloud"}`
	return []corev1.EnvVar{{Name: EnvTFConfig, Value: cfg}}
}
