package render

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
)

// trainingTemplate is a realistic replica template: a training container with GPUs, a port,
// user environment and a volume, plus a sidecar.
func trainingTemplate(container string, port int32) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"team": "vision"}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name:  container,
				Image: "example/train:1",
				Args:  []string{"/workspace/train.py", "--epochs=90"},
				Ports: []corev1.ContainerPort{{Name: container, ContainerPort: port}},
				Env:   []corev1.EnvVar{{Name: "NCCL_DEBUG", Value: "INFO"}},
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("64Gi"),
					GPUResource: resource.MustParse("8"),
				}},
				VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
			}, {
				Name: "log-shipper", Image: "example/shipper:1",
			}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "imagenet"},
			}}},
		},
	}
}

func pytorchJob(workers int32) Job {
	master, worker := trainingTemplate("pytorch", 23456), trainingTemplate("pytorch", 23456)
	return FromPyTorchTrainingJob(&batch.PyTorchTrainingJob{
		ObjectMeta: metav1.ObjectMeta{Name: "big", Namespace: "bench", UID: "uid-1"},
		Spec: batch.PyTorchTrainingJobSpec{
			TorchrunConfig: &batch.TorchrunConfig{Enabled: ptr(true), ProcPerNode: "gpu"},
			Scheduler:      &batch.SchedulePolicy{Volcano: &batch.VolcanoScheduler{Queue: "research"}},
			ReplicaSpecs: []batch.PyTorchReplicaSpec{
				{Type: "master", ReplicaTemplate: batch.ReplicaTemplate{Replicas: ptr(int32(1)), Template: master, RestartPolicy: batch.RestartPolicyExitCode}},
				{Type: "worker", ReplicaTemplate: batch.ReplicaTemplate{Replicas: ptr(workers), Template: worker, RestartPolicy: batch.RestartPolicyExitCode}},
			},
		},
	})
}

func tensorflowJob(chief, ps, workers int32) Job {
	spec := func(t batch.TensorFlowReplicaType, n int32) batch.TensorFlowReplicaSpec {
		return batch.TensorFlowReplicaSpec{Type: t, ReplicaTemplate: batch.ReplicaTemplate{Replicas: ptr(n), Template: trainingTemplate("tensorflow", 2222), RestartPolicy: batch.RestartPolicyOnFailure}}
	}
	return FromTensorFlowTrainingJob(&batch.TensorFlowTrainingJob{
		ObjectMeta: metav1.ObjectMeta{Name: "tf", Namespace: "bench", UID: "uid-2"},
		Spec: batch.TensorFlowTrainingJobSpec{ReplicaSpecs: []batch.TensorFlowReplicaSpec{
			spec(batch.TensorFlowReplicaChief, chief), spec(batch.TensorFlowReplicaPS, ps), spec(batch.TensorFlowReplicaWorker, workers),
		}},
	})
}

// runningPods are the pods of a rendered job, all Running: the steady state a reconcile sees.
func runningPods(b *testing.B, in Input) []*corev1.Pod {
	out, err := Render(in)
	if err != nil {
		b.Fatal(err)
	}
	pods := make([]*corev1.Pod, len(out.Pods))
	for i, p := range out.Pods {
		pods[i] = p.DeepCopy()
		pods[i].Status.Phase = corev1.PodRunning
	}
	return pods
}

func BenchmarkRender(b *testing.B) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	crds := map[string]bool{"podgroups.scheduling.volcano.sh": true}
	cases := []struct {
		name    string
		job     Job
		running bool
		// onlyToCreate renders as the controller does (Input.OnlyPodsToCreate).
		onlyToCreate bool
	}{
		{"pytorch-1000-workers/create", pytorchJob(1000), false, false},
		{"pytorch-1000-workers/running", pytorchJob(1000), true, false},
		{"pytorch-1000-workers/running-only-pods-to-create", pytorchJob(1000), true, true},
		{"tensorflow-64-pods/create", tensorflowJob(1, 8, 55), false, false},
		{"tensorflow-64-pods/running", tensorflowJob(1, 8, 55), true, false},
	}
	for _, tc := range cases {
		in := Input{Job: tc.job, Now: now, InstalledCRDs: crds}
		if tc.running {
			in.Pods = runningPods(b, in)
		}
		in.OnlyPodsToCreate = tc.onlyToCreate
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				out, err := Render(in)
				if err != nil {
					b.Fatal(err)
				}
				want := int(tc.job.PodCount())
				if tc.onlyToCreate {
					want = len(out.Decisions.Create)
				}
				if got := len(out.Pods); got != want {
					b.Fatalf("rendered %d pods, want %d", got, want)
				}
			}
		})
	}
}
