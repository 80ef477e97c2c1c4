//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
	"github.com/trainyard/trainyard/controller"
)

// Simulation annotations of the local cluster's pods (hack/kwok/pod-stages.yaml).
const (
	simStartDelay  = "sim.trainyard.dev/start-delay"
	simRunDuration = "sim.trainyard.dev/run-duration"
	simExitCode    = "sim.trainyard.dev/exit-code"
	// simLastLog stands for the tail of a failed container's log, which the kubelet copies into
	// its terminated message under terminationMessagePolicy FallbackToLogsOnError.
	simLastLog = "sim.trainyard.dev/last-log"
)

// sim is a pod template's simulation: runs for d (empty: until deleted), then exits with code.
func sim(d, code string) map[string]string {
	a := map[string]string{simStartDelay: "500ms"}
	if d != "" {
		a[simRunDuration] = d
	}
	if code != "" {
		a[simExitCode] = code
	}
	return a
}

// jobBuilder makes jobs for the features: pyTorchJob("j").Workers(3).WorkerPolicy(...).Obj().
type jobBuilder struct {
	pt *batch.PyTorchTrainingJob
	tf *batch.TensorFlowTrainingJob
}

func template(container string, ann map[string]string) batch.ReplicaTemplate {
	return batch.ReplicaTemplate{
		Replicas: ptr(int32(1)),
		Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Annotations: ann},
			Spec: corev1.PodSpec{
				TerminationGracePeriodSeconds: ptr(int64(0)),
				Containers:                    []corev1.Container{{Name: container, Image: "example.invalid/train:1"}},
			},
		},
	}
}

// pyTorchJob is a job of one master that runs until deleted; Workers adds workers.
func pyTorchJob(name string) *jobBuilder {
	return &jobBuilder{pt: &batch.PyTorchTrainingJob{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: batch.PyTorchTrainingJobSpec{ReplicaSpecs: []batch.PyTorchReplicaSpec{
			{Type: "master", ReplicaTemplate: template("pytorch", sim("", ""))},
		}},
	}}
}

func (b *jobBuilder) Workers(n int32, ann map[string]string) *jobBuilder {
	t := template("pytorch", ann)
	t.Replicas = &n
	b.pt.Spec.ReplicaSpecs = append(b.pt.Spec.ReplicaSpecs, batch.PyTorchReplicaSpec{Type: "worker", ReplicaTemplate: t})
	return b
}

// Master sets the master's simulation.
func (b *jobBuilder) Master(ann map[string]string) *jobBuilder {
	b.pt.Spec.ReplicaSpecs[0].Template.Annotations = ann
	return b
}

// WorkerPolicy sets the workers' restartPolicy.
func (b *jobBuilder) WorkerPolicy(p batch.RestartPolicy) *jobBuilder {
	for i := range b.pt.Spec.ReplicaSpecs {
		if b.pt.Spec.ReplicaSpecs[i].Type == "worker" {
			b.pt.Spec.ReplicaSpecs[i].RestartPolicy = p
		}
	}
	return b
}

// Policy sets every replica type's restartPolicy.
func (b *jobBuilder) Policy(p batch.RestartPolicy) *jobBuilder {
	for _, t := range b.templates() {
		t.RestartPolicy = p
	}
	return b
}

// Torchrun launches a PyTorch job's training containers through torchrun.
func (b *jobBuilder) Torchrun() *jobBuilder {
	b.pt.Spec.TorchrunConfig = &batch.TorchrunConfig{Enabled: ptr(true)}
	return b
}

// MaxRestarts lets torchrun's agents restart their workers n times (--max_restarts).
func (b *jobBuilder) MaxRestarts(n int32) *jobBuilder {
	b.pt.Spec.TorchrunConfig.MaxRestarts = ptr(n)
	return b
}

// Tolerate gives every pod explicit tolerations of a not-ready and an unreachable node for
// seconds, as the API server's DefaultTolerationSeconds admission would with its defaults (300).
func (b *jobBuilder) Tolerate(seconds int64) *jobBuilder {
	for _, t := range b.templates() {
		for _, key := range []string{corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable} {
			t.Template.Spec.Tolerations = append(t.Template.Spec.Tolerations, corev1.Toleration{
				Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr(seconds)})
		}
	}
	return b
}

func (b *jobBuilder) templates() []*batch.ReplicaTemplate {
	var out []*batch.ReplicaTemplate
	if b.tf != nil {
		for i := range b.tf.Spec.ReplicaSpecs {
			out = append(out, &b.tf.Spec.ReplicaSpecs[i].ReplicaTemplate)
		}
		return out
	}
	for i := range b.pt.Spec.ReplicaSpecs {
		out = append(out, &b.pt.Spec.ReplicaSpecs[i].ReplicaTemplate)
	}
	return out
}

func (b *jobBuilder) runPolicy() *batch.RunPolicy {
	spec := &b.pt.Spec.RunPolicy
	if b.tf != nil {
		spec = &b.tf.Spec.RunPolicy
	}
	if *spec == nil {
		*spec = &batch.RunPolicy{}
	}
	return *spec
}

func (b *jobBuilder) BackoffLimit(n int32) *jobBuilder { b.runPolicy().BackoffLimit = &n; return b }
func (b *jobBuilder) Deadline(s int64) *jobBuilder {
	b.runPolicy().ActiveDeadlineSeconds = &s
	return b
}
func (b *jobBuilder) CleanUp(p batch.CleanUpPolicy) *jobBuilder {
	b.runPolicy().CleanUpPolicy = p
	return b
}

// tensorFlowJob is a job of the given replica types, each with its count and simulation.
func tensorFlowJob(name string) *jobBuilder {
	return &jobBuilder{tf: &batch.TensorFlowTrainingJob{ObjectMeta: metav1.ObjectMeta{Name: name}}}
}

func (b *jobBuilder) Replica(typ batch.TensorFlowReplicaType, n int32, ann map[string]string) *jobBuilder {
	t := template("tensorflow", ann)
	t.Replicas = &n
	b.tf.Spec.ReplicaSpecs = append(b.tf.Spec.ReplicaSpecs, batch.TensorFlowReplicaSpec{Type: typ, ReplicaTemplate: t})
	return b
}

func (b *jobBuilder) Obj() client.Object {
	if b.tf != nil {
		return b.tf
	}
	return b.pt
}

// newClient is a controller-runtime client of the test cluster with Trainyard's types.
func newClient(t *testing.T, cfg *envconf.Config) client.Client {
	t.Helper()
	rc, err := clientcmd.BuildConfigFromFlags("", cfg.KubeconfigFile())
	if err != nil {
		t.Fatal(err)
	}
	rc.QPS, rc.Burst = 100, 200
	c, err := client.New(rc, client.Options{Scheme: controller.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// namespaced creates a namespace of its own for a feature and returns a client and the name.
func namespaced(ctx context.Context, t *testing.T, cfg *envconf.Config, prefix string) (client.Client, string) {
	t.Helper()
	c := newClient(t, cfg)
	ns := fmt.Sprintf("%s-%04x", prefix, rand.IntN(1<<16))
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	})
	return c, ns
}

func create(ctx context.Context, t *testing.T, c client.Client, ns string, obj client.Object) {
	t.Helper()
	obj.SetNamespace(ns)
	if err := c.Create(ctx, obj); err != nil {
		t.Fatalf("creating %s: %v", obj.GetName(), err)
	}
}

// jobStatus reads a job's status (either kind).
func jobStatus(ctx context.Context, c client.Client, ns, name string) (batch.TrainingJobStatus, error) {
	var pt batch.PyTorchTrainingJob
	err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &pt)
	if err == nil {
		return pt.Status, nil
	}
	var tf batch.TensorFlowTrainingJob
	if err2 := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &tf); err2 != nil {
		return batch.TrainingJobStatus{}, err
	}
	return tf.Status, nil
}

// eventually polls cond every 100 ms until it holds, failing the test after timeout with the last
// reason cond gave. Timeouts only keep a broken run from hanging; speed is measured elsewhere.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	last := ""
	for {
		ok, why := cond()
		if ok {
			return
		}
		last = why
		if time.Now().After(deadline) {
			t.Fatalf("%s: not so after %s (%s)", what, timeout, last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitPhase waits for the job's phase and returns its status.
func waitPhase(ctx context.Context, t *testing.T, c client.Client, ns, name string, phase batch.JobPhase) batch.TrainingJobStatus {
	t.Helper()
	var st batch.TrainingJobStatus
	eventually(t, 90*time.Second, fmt.Sprintf("job %s is %s", name, phase), func() (bool, string) {
		var err error
		st, err = jobStatus(ctx, c, ns, name)
		if err != nil {
			return false, err.Error()
		}
		return st.Phase == phase, fmt.Sprintf("phase %q, aggregate %+v", st.Phase, st.Aggregate)
	})
	return st
}

// jobPods lists the pods of a job by its owner-name label.
func jobPods(ctx context.Context, t *testing.T, c client.Client, ns, job string) []corev1.Pod {
	t.Helper()
	var list corev1.PodList
	if err := c.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{batch.LabelOwnerName: job}); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// podsByName maps a job's pods' names to their phase ("Terminating" when being deleted).
func podsByName(ctx context.Context, t *testing.T, c client.Client, ns, job string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, p := range jobPods(ctx, t, c, ns, job) {
		s := string(p.Status.Phase)
		if p.DeletionTimestamp != nil {
			s = "Terminating"
		}
		out[p.Name] = s
	}
	return out
}

// getPod reads one pod; ok is false when it does not exist.
func getPod(ctx context.Context, c client.Client, ns, name string) (corev1.Pod, bool) {
	var p corev1.Pod
	err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &p)
	return p, err == nil
}

// waitPodRunning waits until pod name runs and returns it. Note: a job's phase turns Running with
// its first pod, so a test that acts on one named pod waits for that pod itself.
func waitPodRunning(ctx context.Context, t *testing.T, c client.Client, ns, name string) corev1.Pod {
	t.Helper()
	var p corev1.Pod
	eventually(t, 60*time.Second, name+" runs", func() (bool, string) {
		var ok bool
		p, ok = getPod(ctx, c, ns, name)
		return ok && p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil, string(p.Status.Phase)
	})
	return p
}

// annotatePod sets a simulation annotation on a live pod: the fake kubelet acts on it.
func annotatePod(ctx context.Context, t *testing.T, c client.Client, ns, pod, key, value string) {
	t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, key, value)
	if err := c.Patch(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: pod}}, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatalf("annotating %s: %v", pod, err)
	}
}

func condition(st batch.TrainingJobStatus, typ string) string {
	for _, c := range st.Conditions {
		if c.Type == typ {
			return string(c.Status) + "/" + c.Reason
		}
	}
	return ""
}

func keys(m map[string]string) string {
	var out []string
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	return strings.Join(out, ",")
}

func ptr[T any](v T) *T { return &v }

func objectMeta(ns, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: ns, Name: name}
}
