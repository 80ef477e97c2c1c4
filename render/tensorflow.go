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
	cluster json.RawMessage
}

type tfConfig struct {
	Cluster     json.RawMessage `json:"cluster"`
	Task        tfTask          `json:"task"`
	Environment string          `json:"environment"`
}

type tfTask struct {
	Type  string `json:"type"`
	Index int32  `json:"index"`
}

func newTFEnv(j *Job) *tfEnv {
	cluster := make(map[string][]string, len(j.Replicas))
	for ti := range j.Replicas {
		t := &j.Replicas[ti]
		port := ":" + strconv.Itoa(int(containerPort(j.templateContainer(t), TFContainerName, DefaultTFPort)))
		addrs := make([]string, t.Replicas)
		for i := range addrs {
			addrs[i] = PodName(j.Name, t.Type, int32(i)) + "." + j.Name + port
		}
		cluster[t.Type] = addrs
	}
	raw, _ := json.Marshal(cluster) // maps of strings always marshal; keys come out sorted
	return &tfEnv{cluster: raw}
}

func (e *tfEnv) names() []string { return []string{EnvTFConfig} }

func (e *tfEnv) vars(t *ReplicaType, index int32) []corev1.EnvVar {
	cfg, _ := json.Marshal(tfConfig{Cluster: e.cluster, Task: tfTask{Type: t.Type, Index: index}, Environment: "cloud"})
	return []corev1.EnvVar{{Name: EnvTFConfig, Value: string(cfg)}}
}
