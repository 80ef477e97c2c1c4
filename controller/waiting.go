package controller

import (
	"context"
	"errors"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
	"github.com/trainyard/trainyard/render"
	"github.com/trainyard/trainyard/status"
)

// waitingRecheck is how often a job is looked at again while its cause lives in an object the
// operator does not watch (a gang's PodGroup, a TensorBoard's pod).
const waitingRecheck = 5 * time.Second

// waitingInputs are the observations the Waiting condition needs beside the job's pods: the live
// gang object while pods wait unbound, the TensorBoard's pods while it is not available, and the
// API server's refusal of the last pod creation or gang object. recheck is set when the answer can
// change without an event the operator watches.
type waitingInputs struct {
	gang          *unstructured.Unstructured
	tensorBoard   []*corev1.Pod
	createRefused status.Refusal
	gangRefused   string
	nameTaken     string
	// tensorBoardTaken: who holds the name of the TensorBoard Deployment.
	tensorBoardTaken string
	// tensorBoardRefused: the API server's refusal of the TensorBoard Deployment.
	tensorBoardRefused string
	recheck            bool
}

func (r *jobReconciler) waitingInputs(ctx context.Context, job client.Object, model *render.Job, out *render.Output, pods []*corev1.Pod, tb *appsv1.Deployment) waitingInputs {
	var w waitingInputs
	r.mu.Lock()
	w.createRefused = r.memory(job.GetUID()).createRefused
	w.gangRefused = r.memory(job.GetUID()).gangRefused
	w.nameTaken = r.memory(job.GetUID()).nameTaken
	w.tensorBoardTaken = r.memory(job.GetUID()).tensorBoardTaken
	w.tensorBoardRefused = r.memory(job.GetUID()).tensorBoardRefused
	r.mu.Unlock()
	if out == nil {
		return w
	}
	// The TensorBoard outlives the job's success: why it cannot start is read then too.
	if out.TensorBoard != nil && !available(tb) {
		var list corev1.PodList
		if err := r.reader.List(ctx, &list, client.InNamespace(job.GetNamespace()),
			client.MatchingLabels{batch.LabelTensorBoard: job.GetName()}); err == nil {
			w.tensorBoard = pointers(list.Items)
		}
		w.recheck = true
	}
	if out.Decisions.Blocked != nil || model.Finished() || model.Pause {
		return w
	}
	if status.AwaitsScheduler(pods, r.now()) {
		w.recheck = true // it may turn NotScheduled with no event
	}
	kinds := render.GangKinds(model, r.crds.installed())
	if len(kinds) > 0 && anyUnbound(pods) {
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(kinds[len(kinds)-1]) // the PodGroup, after any Workload
		if err := r.client.Get(ctx, types.NamespacedName{Namespace: job.GetNamespace(), Name: job.GetName()}, live); err == nil {
			w.gang = live
		}
		w.recheck = true
	}
	return w
}

// rememberCreate records the API server's refusal of a pod creation, or clears it once pods are
// created again. A round that created nothing leaves the last answer standing, whether it tried
// nothing or failed for a passing reason (a timeout, the API server unreachable): a quota's
// refusal is not forgotten because the next try timed out, as rememberGang does for the gang.
func (r *jobReconciler) rememberCreate(uid types.UID, created []string, err error) {
	var refused status.Refusal
	switch {
	case err != nil && refusal(err):
		refused = status.RefusalOf(err)
	case len(created) == 0:
		return
	}
	r.mu.Lock()
	r.memory(uid).createRefused = refused
	r.mu.Unlock()
}

// rememberNameTaken records that an object of the job could not be made because another holds
// its name (nameTakenError), or clears it once a round's writes all went through. Another failure
// leaves the last answer standing.
func (r *jobReconciler) rememberNameTaken(uid types.UID, err error) {
	var job, tensorBoard string
	other := false
	var walk func(error)
	walk = func(err error) {
		if joined, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range joined.Unwrap() {
				walk(e)
			}
			return
		}
		var taken *nameTakenError
		switch {
		case err == nil:
		case !errors.As(err, &taken):
			other = true
		case taken.tensorBoard:
			tensorBoard = taken.msg
		case job == "":
			job = taken.msg
		}
	}
	walk(err)
	if other && job == "" && tensorBoard == "" {
		return
	}
	r.mu.Lock()
	r.memory(uid).nameTaken = job
	// A TensorBoard is not what the job waits for: its own status says why it is missing.
	r.memory(uid).tensorBoardTaken = tensorBoard
	r.mu.Unlock()
}

// refusalNote is what to remember of an apply's answer: the API server's refusal (a reason
// someone must fix), or "" once an apply went through; ok is false for another failure (the API
// server unreachable, say), which leaves the last answer standing.
func refusalNote(err error) (note string, ok bool) {
	switch {
	case err == nil:
		return "", true
	case refusal(err):
		return status.RefusalOf(err).Message, true
	}
	return "", false
}

// rememberTensorBoard records the API server's refusal of the job's TensorBoard Deployment, or
// clears it once an apply goes through. Another failure leaves the last answer standing.
func (r *jobReconciler) rememberTensorBoard(uid types.UID, err error) {
	if refused, ok := refusalNote(err); ok {
		r.mu.Lock()
		r.memory(uid).tensorBoardRefused = refused
		r.mu.Unlock()
	}
}

// rememberGang records the API server's refusal of the job's gang object, or clears it once an
// apply goes through (or none is wanted). Another failure (the API server unreachable, say)
// leaves the last answer standing.
func (r *jobReconciler) rememberGang(uid types.UID, err error) {
	if refused, ok := refusalNote(err); ok {
		r.mu.Lock()
		r.memory(uid).gangRefused = refused
		r.mu.Unlock()
	}
}

// refusal: the API server refused the pod for a reason someone must fix (a ResourceQuota, a
// LimitRange, Pod Security, an invalid pod, or an admission webhook's denial, which comes back as
// an internal error naming the webhook), not a passing failure.
func refusal(err error) bool {
	return apierrors.IsForbidden(err) || apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) ||
		apierrors.IsInternalError(err) && strings.Contains(err.Error(), "admission webhook")
}

// anyUnbound: some pod waits for a node. Note: the cache keeps no nodeName (a bind would wake a
// reconcile); a pending pod that no kubelet has reported a container of is taken as unbound.
func anyUnbound(pods []*corev1.Pod) bool {
	for _, p := range pods {
		if status.Unbound(p) {
			return true
		}
	}
	return false
}

func available(d *appsv1.Deployment) bool {
	if d == nil {
		return false
	}
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentAvailable && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}
