package render

import (
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
)

// podBuilder makes observed pods for tests: podBuilder("worker", 1).Failed(137).Obj().
type podBuilder struct{ pod corev1.Pod }

func makePod(typ string, index int32) *podBuilder {
	return &podBuilder{pod: corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: PodName("job", typ, index),
			Labels: map[string]string{
				batch.LabelReplicaType:  typ,
				batch.LabelReplicaIndex: itoa(index),
			},
		},
		Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "pytorch"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}}
}

func (b *podBuilder) exited(phase corev1.PodPhase, code int32) *podBuilder {
	b.pod.Status.Phase = phase
	b.pod.Status.ContainerStatuses = []corev1.ContainerStatus{{
		Name:  "pytorch",
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}},
	}}
	return b
}

func (b *podBuilder) Succeeded() *podBuilder        { return b.exited(corev1.PodSucceeded, 0) }
func (b *podBuilder) Failed(code int32) *podBuilder { return b.exited(corev1.PodFailed, code) }

func (b *podBuilder) Evicted() *podBuilder {
	b.pod.Status.Phase, b.pod.Status.Reason = corev1.PodFailed, "Evicted"
	return b
}

func (b *podBuilder) NodeLost() *podBuilder {
	now := metav1.Now()
	b.pod.DeletionTimestamp = &now
	b.pod.Status.Conditions = append(b.pod.Status.Conditions, corev1.PodCondition{
		Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "DeletionByTaintManager",
	})
	return b
}

func (b *podBuilder) Obj() *corev1.Pod { return &b.pod }

func itoa(i int32) string { return strconv.Itoa(int(i)) }

func TestRestartVerdict(t *testing.T) {
	cases := map[string]struct {
		policy batch.RestartPolicy
		pod    *corev1.Pod
		want   verdict
	}{
		"worker exit 1 under Never fails the job":               {batch.RestartPolicyNever, makePod("worker", 0).Failed(1).Obj(), fail},
		"worker eviction under Never fails the job":             {batch.RestartPolicyNever, makePod("worker", 0).Evicted().Obj(), fail},
		"worker exit 0 under Never is kept":                     {batch.RestartPolicyNever, makePod("worker", 0).Succeeded().Obj(), keep},
		"worker exit 1 under OnFailure is restarted":            {batch.RestartPolicyOnFailure, makePod("worker", 0).Failed(1).Obj(), restart},
		"worker exit 0 under OnFailure is kept":                 {batch.RestartPolicyOnFailure, makePod("worker", 0).Succeeded().Obj(), keep},
		"worker eviction under OnFailure is restarted":          {batch.RestartPolicyOnFailure, makePod("worker", 0).Evicted().Obj(), restart},
		"worker exit 0 under Always is restarted":               {batch.RestartPolicyAlways, makePod("worker", 0).Succeeded().Obj(), restart},
		"worker exit 2 under Always is restarted":               {batch.RestartPolicyAlways, makePod("worker", 0).Failed(2).Obj(), restart},
		"worker exit 137 under ExitCode is restarted":           {batch.RestartPolicyExitCode, makePod("worker", 0).Failed(137).Obj(), restart},
		"worker exit 130 under ExitCode is restarted":           {batch.RestartPolicyExitCode, makePod("worker", 0).Failed(130).Obj(), restart},
		"worker exit 138 under ExitCode is restarted":           {batch.RestartPolicyExitCode, makePod("worker", 0).Failed(138).Obj(), restart},
		"worker exit 143 under ExitCode is restarted":           {batch.RestartPolicyExitCode, makePod("worker", 0).Failed(143).Obj(), restart},
		"worker exit 1 under ExitCode fails the job":            {batch.RestartPolicyExitCode, makePod("worker", 0).Failed(1).Obj(), fail},
		"worker exit 0 under ExitCode is kept":                  {batch.RestartPolicyExitCode, makePod("worker", 0).Succeeded().Obj(), keep},
		"worker eviction under ExitCode is restarted":           {batch.RestartPolicyExitCode, makePod("worker", 0).Evicted().Obj(), restart},
		"worker on a lost node under ExitCode is restarted":     {batch.RestartPolicyExitCode, makePod("worker", 0).NodeLost().Obj(), restart},
		"failure without exit code under ExitCode is permanent": {batch.RestartPolicyExitCode, makePod("worker", 0).exited(corev1.PodFailed, 0).withoutStatuses().Obj(), fail},
	}
	job := &Job{Framework: PyTorch}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := restartVerdict(tc.policy, classify(job, tc.pod)); got != tc.want {
				t.Errorf("restartVerdict = %v, want %v", got, tc.want)
			}
		})
	}
}

func (b *podBuilder) withoutStatuses() *podBuilder {
	b.pod.Status.ContainerStatuses = nil
	return b
}

func TestClassify(t *testing.T) {
	type observation struct {
		Terminated, Succeeded, Disrupted, NodeLost bool
		ExitCode                                   *int32
	}
	cases := map[string]struct {
		pod  *corev1.Pod
		want observation
	}{
		"a running pod has not ended":                   {makePod("worker", 0).Obj(), observation{}},
		"a succeeded pod ended with code 0":             {makePod("worker", 0).Succeeded().Obj(), observation{Terminated: true, Succeeded: true, ExitCode: ptr(int32(0))}},
		"a failed pod carries its exit code":            {makePod("worker", 0).Failed(137).Obj(), observation{Terminated: true, ExitCode: ptr(int32(137))}},
		"an evicted pod is disrupted":                   {makePod("worker", 0).Evicted().Obj(), observation{Terminated: true, Disrupted: true}},
		"a pod the taint manager deletes is disrupted":  {makePod("worker", 0).NodeLost().Obj(), observation{Disrupted: true}},
		"the sidecar's exit code is not the training's": {makePod("worker", 0).sidecarExited(3).Obj(), observation{}},
	}
	job := &Job{Framework: PyTorch}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := classify(job, tc.pod)
			got := observation{o.terminated, o.succeeded, o.disrupted, o.nodeLost, o.exitCode}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("classify (-want +got):\n%s", diff)
			}
		})
	}
}

func (b *podBuilder) sidecarExited(code int32) *podBuilder {
	b.pod.Spec.Containers = append(b.pod.Spec.Containers, corev1.Container{Name: "sidecar"})
	b.pod.Status.ContainerStatuses = []corev1.ContainerStatus{
		{Name: "sidecar", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}}},
		{Name: "pytorch", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
	}
	return b
}

func TestRestartScopeOf(t *testing.T) {
	types := func(names ...string) []ReplicaType {
		var out []ReplicaType
		for _, n := range names {
			out = append(out, ReplicaType{Type: n, Replicas: 2})
		}
		return out
	}
	gang, replica := batch.RestartScopeGang, batch.RestartScopeReplica
	cases := map[string]struct {
		job  Job
		at   slot
		want batch.RestartScope
	}{
		"a PyTorch worker without torchrun restarts the gang":                       {Job{Framework: PyTorch, Replicas: types("master", "worker")}, slot{"worker", 1}, gang},
		"a PyTorch worker under torchrun with maxRestarts restarts alone":           {Job{Framework: PyTorch, Torchrun: &batch.TorchrunConfig{MaxRestarts: ptr(int32(3))}, Replicas: types("master", "worker")}, slot{"worker", 1}, replica},
		"a PyTorch worker under torchrun without maxRestarts restarts the gang":     {Job{Framework: PyTorch, Torchrun: &batch.TorchrunConfig{}, Replicas: types("master", "worker")}, slot{"worker", 1}, gang},
		"a PyTorch worker under torchrun with maxRestarts 0 restarts the gang":      {Job{Framework: PyTorch, Torchrun: &batch.TorchrunConfig{MaxRestarts: ptr(int32(0))}, Replicas: types("master", "worker")}, slot{"worker", 1}, gang},
		"a PyTorchJob without elasticPolicy restarts the gang":                      {Job{Framework: PyTorch, Kubeflow: &Kubeflow{}, Replicas: types("master", "worker")}, slot{"worker", 1}, gang},
		"a PyTorchJob with elasticPolicy and maxRestarts restarts a worker alone":   {Job{Framework: PyTorch, Kubeflow: &Kubeflow{Elastic: &KubeflowElastic{MaxRestarts: ptr(int32(2))}}, Replicas: types("worker")}, slot{"worker", 1}, replica},
		"a PyTorchJob with elasticPolicy without maxRestarts restarts the gang":     {Job{Framework: PyTorch, Kubeflow: &Kubeflow{Elastic: &KubeflowElastic{}}, Replicas: types("worker")}, slot{"worker", 1}, gang},
		"a TensorFlow worker beside parameter servers restarts alone":               {Job{Framework: TensorFlow, Replicas: types("chief", "ps", "worker")}, slot{"worker", 1}, replica},
		"a failed parameter server restarts the gang":                               {Job{Framework: TensorFlow, Replicas: types("chief", "ps", "worker")}, slot{"ps", 0}, gang},
		"a failed chief beside parameter servers restarts the gang":                 {Job{Framework: TensorFlow, Replicas: types("chief", "ps", "worker")}, slot{"chief", 0}, gang},
		"a TensorFlow worker without parameter servers restarts the gang":           {Job{Framework: TensorFlow, Replicas: types("chief", "worker")}, slot{"worker", 1}, gang},
		"an evaluator, never in the collective group, restarts alone":               {Job{Framework: TensorFlow, Replicas: types("chief", "worker", "evaluator")}, slot{"evaluator", 0}, replica},
		"the user's Replica wins over the default":                                  {Job{Framework: PyTorch, RestartScope: replica, Replicas: types("master", "worker")}, slot{"worker", 1}, replica},
		"the user's Gang wins over torchrun":                                        {Job{Framework: PyTorch, RestartScope: gang, Torchrun: &batch.TorchrunConfig{}, Replicas: types("worker")}, slot{"worker", 1}, gang},
		"the master under torchrun with maxRestarts hosts the c10d store: the gang": {Job{Framework: PyTorch, Torchrun: &batch.TorchrunConfig{MaxRestarts: ptr(int32(3))}, Replicas: types("master", "worker")}, slot{"master", 0}, gang},
		"worker-0 of a job without master hosts the c10d store: the gang":           {Job{Framework: PyTorch, Torchrun: &batch.TorchrunConfig{MaxRestarts: ptr(int32(3))}, Replicas: types("worker")}, slot{"worker", 0}, gang},
		"the master under torchrun with the etcd backend hosts no store: alone":     {Job{Framework: PyTorch, Torchrun: &batch.TorchrunConfig{MaxRestarts: ptr(int32(3)), RdzvBackend: "etcd-v2"}, Replicas: types("master", "worker")}, slot{"master", 0}, replica},
		"a PyTorchJob's elastic Worker-0 hosts the c10d store: the gang":            {Job{Framework: PyTorch, Kubeflow: &Kubeflow{Elastic: &KubeflowElastic{MaxRestarts: ptr(int32(2))}}, Replicas: types("master", "worker")}, slot{"worker", 0}, gang},
		"a PyTorchJob's elastic Master beside Workers hosts nothing: alone":         {Job{Framework: PyTorch, Kubeflow: &Kubeflow{Elastic: &KubeflowElastic{MaxRestarts: ptr(int32(2))}}, Replicas: types("master", "worker")}, slot{"master", 0}, replica},
		"a PyTorchJob whose rdzvHost the user chose: Worker-0 alone":                {Job{Framework: PyTorch, Kubeflow: &Kubeflow{Elastic: &KubeflowElastic{MaxRestarts: ptr(int32(2)), RdzvHost: "etcd.example"}}, Replicas: types("worker")}, slot{"worker", 0}, replica},
		"the user's Replica wins over the store host":                               {Job{Framework: PyTorch, RestartScope: replica, Torchrun: &batch.TorchrunConfig{MaxRestarts: ptr(int32(3))}, Replicas: types("master", "worker")}, slot{"master", 0}, replica},
		"--max_restarts=2 in extraOptions restarts a worker alone":                  {Job{Framework: PyTorch, Torchrun: &batch.TorchrunConfig{ExtraOptions: []string{"--max_restarts=2"}}, Replicas: types("master", "worker")}, slot{"worker", 1}, replica},
		"--max-restarts 2, two words, in extraOptions restarts a worker alone":      {Job{Framework: PyTorch, Torchrun: &batch.TorchrunConfig{ExtraOptions: []string{"--max-restarts", "2"}}, Replicas: types("master", "worker")}, slot{"worker", 1}, replica},
		"--max_restarts=0 in extraOptions wins over maxRestarts: the gang":          {Job{Framework: PyTorch, Torchrun: &batch.TorchrunConfig{MaxRestarts: ptr(int32(3)), ExtraOptions: []string{"--max_restarts=0"}}, Replicas: types("master", "worker")}, slot{"worker", 1}, gang},
		"the last --max_restarts of extraOptions counts":                            {Job{Framework: PyTorch, Torchrun: &batch.TorchrunConfig{ExtraOptions: []string{"--max_restarts=0", "--max_restarts=4"}}, Replicas: types("master", "worker")}, slot{"worker", 1}, replica},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := tc.job.restartScopeOf(tc.at); got != tc.want {
				t.Errorf("restartScopeOf(%v) = %s; want %s", tc.at, got, tc.want)
			}
		})
	}
}

func TestRejoinableRendezvous(t *testing.T) {
	off := corev1.EnvVar{Name: EnvTorchSharedStoreOff, Value: "1"}
	userOn := corev1.EnvVar{Name: EnvTorchSharedStoreOff, Value: "0"}
	cases := map[string]struct {
		job     Job
		env     []corev1.EnvVar
		wantEnv []corev1.EnvVar
	}{
		"torchrun with maxRestarts turns the shared store off": {
			job:     Job{Framework: PyTorch, Torchrun: &batch.TorchrunConfig{MaxRestarts: ptr(int32(3))}},
			wantEnv: []corev1.EnvVar{off},
		},
		"torchrun without maxRestarts keeps torch's default": {
			job: Job{Framework: PyTorch, Torchrun: &batch.TorchrunConfig{}},
		},
		"an elastic job without maxRestarts turns it off: a scale-up's pod joins a later round": {
			job:     Job{Framework: PyTorch, Torchrun: &batch.TorchrunConfig{}, Elastic: &Elastic{Min: 1, Max: 4, Expected: 2}},
			wantEnv: []corev1.EnvVar{off},
		},
		"a PyTorchJob's elasticPolicy without maxRestarts turns it off": {
			job:     Job{Framework: PyTorch, Kubeflow: &Kubeflow{Elastic: &KubeflowElastic{}}},
			wantEnv: []corev1.EnvVar{off},
		},
		"a PyTorchJob's elasticPolicy with maxRestarts turns it off": {
			job:     Job{Framework: PyTorch, Kubeflow: &Kubeflow{Elastic: &KubeflowElastic{MaxRestarts: ptr(int32(1))}}},
			wantEnv: []corev1.EnvVar{off},
		},
		"the template's own value is kept": {
			job:     Job{Framework: PyTorch, Torchrun: &batch.TorchrunConfig{MaxRestarts: ptr(int32(3))}},
			env:     []corev1.EnvVar{userOn},
			wantEnv: []corev1.EnvVar{userOn},
		},
		"PyTorch without torchrun is left alone": {
			job: Job{Framework: PyTorch},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := &renderer{job: &tc.job}
			c := corev1.Container{Name: "pytorch", Env: tc.env}
			r.rejoinableRendezvous(&c)
			if diff := cmp.Diff(tc.wantEnv, c.Env); diff != "" {
				t.Errorf("env (-want +got):\n%s", diff)
			}
		})
	}
}
