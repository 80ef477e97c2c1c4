package controller

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
	"github.com/trainyard/trainyard/apis/kueue"
	"github.com/trainyard/trainyard/render"
)

// cacheOptions limit the operator's watches to the objects it owns (those carrying the
// owner-kind label) and keep of each only what render and status read, so memory grows with
// the jobs' pods, not with everything in the cluster.
func cacheOptions() cache.Options {
	owned, err := labels.NewRequirement(batch.LabelOwnerKind, selection.Exists, nil)
	if err != nil {
		panic(err)
	}
	selector := labels.NewSelector().Add(*owned)
	return cache.Options{
		DefaultTransform:         cache.TransformStripManagedFields(),
		DefaultWatchErrorHandler: watchErrors.handle,
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Pod{}:        {Label: selector, Transform: trimPodTransform},
			&corev1.Service{}:    {Label: selector, Transform: trimServiceTransform},
			&appsv1.Deployment{}: {Label: selector, Transform: trimDeploymentTransform},
			// Every node, but only its Ready condition: a job's pods can be on any of them.
			&corev1.Node{}: {Transform: trimNodeTransform},
		},
	}
}

func trimPodTransform(obj any) (any, error) {
	if p, ok := obj.(*corev1.Pod); ok {
		trimPod(p)
	}
	return obj, nil
}

// trimPod keeps what render and status read of a pod: its identity, labels, owners, the run-mode,
// gang-restarts and template-hash annotations, deletion, its containers' names, its node, its
// phase and reason, the DisruptionTarget and Kueue's TerminatedByKueue conditions, the scheduler's
// PodScheduled=False, and how each container is doing. Note: the cached pods are therefore
// partial; nothing may read a pod's spec from the cache for anything else.
func trimPod(p *corev1.Pod) {
	p.ManagedFields = nil
	var kept map[string]string
	for _, k := range []string{batch.AnnotationRunMode, batch.AnnotationGangRestarts, batch.AnnotationTemplateHash} {
		if v, ok := p.Annotations[k]; ok {
			if kept == nil {
				kept = map[string]string{}
			}
			kept[k] = v
		}
	}
	p.Annotations = kept
	containers := make([]corev1.Container, len(p.Spec.Containers))
	for i, c := range p.Spec.Containers {
		containers[i] = corev1.Container{Name: c.Name}
	}
	p.Spec = corev1.PodSpec{Containers: containers, NodeName: p.Spec.NodeName}
	var conds []corev1.PodCondition
	for _, c := range p.Status.Conditions {
		switch {
		case c.Type == corev1.DisruptionTarget || c.Type == kueue.PodConditionTerminatedByKueue:
			conds = append(conds, corev1.PodCondition{Type: c.Type, Status: c.Status, Reason: c.Reason})
		case c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse:
			// The scheduler's words for a pod it cannot place: the Waiting condition quotes them.
			conds = append(conds, corev1.PodCondition{Type: c.Type, Status: c.Status, Reason: c.Reason, Message: c.Message})
		}
	}
	p.Status = corev1.PodStatus{Phase: p.Status.Phase, Reason: p.Status.Reason, Conditions: conds,
		InitContainerStatuses: waitingOnly(p.Status.InitContainerStatuses), ContainerStatuses: trimContainerStatuses(p.Status.ContainerStatuses)}
}

// trimContainerStatuses keeps how each container is doing: its exit code, when it ran (a
// restart's back-off counts from its end) and, when it failed, the line of its termination
// message that says why; or why it waits.
func trimContainerStatuses(in []corev1.ContainerStatus) []corev1.ContainerStatus {
	out := make([]corev1.ContainerStatus, len(in))
	for i, c := range in {
		s := corev1.ContainerStatus{Name: c.Name}
		switch {
		case c.State.Terminated != nil:
			t := c.State.Terminated
			s.State.Terminated = &corev1.ContainerStateTerminated{ExitCode: t.ExitCode, Reason: t.Reason, StartedAt: t.StartedAt, FinishedAt: t.FinishedAt}
			if t.ExitCode != 0 {
				// Of the log's tail the kubelet kept (up to 2 KiB), the one line render quotes.
				s.State.Terminated.Message = render.LastWords(t.Message)
			}
		case c.State.Running != nil:
			s.State.Running = &corev1.ContainerStateRunning{}
		case c.State.Waiting != nil:
			s.State.Waiting = &corev1.ContainerStateWaiting{Reason: c.State.Waiting.Reason, Message: c.State.Waiting.Message}
		}
		out[i] = s
	}
	return out
}

// waitingOnly keeps the init containers that wait (an image that cannot be pulled stops a pod
// there too); nothing else of them is read.
func waitingOnly(in []corev1.ContainerStatus) []corev1.ContainerStatus {
	var out []corev1.ContainerStatus
	for _, c := range in {
		if c.State.Waiting != nil {
			out = append(out, corev1.ContainerStatus{Name: c.Name, State: corev1.ContainerState{
				Waiting: &corev1.ContainerStateWaiting{Reason: c.State.Waiting.Reason, Message: c.State.Waiting.Message}}})
		}
	}
	return out
}

// trimServiceTransform keeps a Service's metadata: a Kubeflow job's thousands of per-replica
// Services are only counted and named, and apply compares the intent annotation.
func trimServiceTransform(obj any) (any, error) {
	if s, ok := obj.(*corev1.Service); ok {
		s.ManagedFields = nil
		s.Spec = corev1.ServiceSpec{}
		s.Status = corev1.ServiceStatus{}
	}
	return obj, nil
}

// trimDeploymentTransform keeps a Deployment's metadata and conditions: the TensorBoard's
// readiness is all status reads, and apply compares the intent annotation.
func trimDeploymentTransform(obj any) (any, error) {
	if d, ok := obj.(*appsv1.Deployment); ok {
		d.ManagedFields = nil
		d.Spec = appsv1.DeploymentSpec{}
		d.Status = appsv1.DeploymentStatus{Conditions: d.Status.Conditions}
	}
	return obj, nil
}
