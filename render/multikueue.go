package render

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
	"github.com/trainyard/trainyard/apis/kueue"
)

// This file holds the T9k kinds' side of Kueue's MultiKueue, which dispatches a queued job from a
// manager cluster to one of its worker clusters (Kueue's generic adapter for external frameworks,
// multiKueue.externalFrameworks). Trainyard runs in both clusters.
//
// In the manager cluster, a job whose spec.managedBy is kueue.x-k8s.io/multikueue (Dispatched):
//   - has its Workload, as any queued job, and nothing else: no pod, Service, PodGroup or
//     TensorBoard;
//   - once Kueue reserves quota for that Workload, MultiKueue copies it to the workers, creates a
//     copy of the job (without managedBy) in the first worker that admits it, and copies that
//     copy's status here whole. From then on the status is MultiKueue's: Trainyard writes none
//     while the Workload holds a quota reservation or is finished, and writes its own (Pending in
//     the queue, Paused, or what keeps the job out of the queue) otherwise;
//   - an evicted Workload (preempted, deactivated by a pause) is released at once, as no pod runs
//     here: MultiKueue then deletes the copy, and the worker's Trainyard its pods.
//
// In a worker cluster the copy carries kueue.x-k8s.io/prebuilt-workload-name: the Workload
// MultiKueue made for it before creating it. The job (Queue.Prebuilt) never makes its own: it
// waits for that one, becomes its controller (Adopt), and runs under its admission as any queued
// job does. A prebuilt Workload that does not match the job is marked Finished with reason
// OutOfSync, as Kueue's jobframework does, and MultiKueue dispatches the job again.

// ReasonNotQueued: a job handed to MultiKueue has no LocalQueue, so nothing dispatches it.
const ReasonNotQueued = "NotQueued"

// ReasonNotDispatched: a job handed to MultiKueue is admitted by a ClusterQueue without a
// MultiKueue admission check, so nothing dispatches it.
const ReasonNotDispatched = "NotDispatched"

// dispatch decides for a job handed to MultiKueue that is neither finished nor paused: it waits
// in its queue, and once admitted it runs elsewhere.
func (r *renderer) dispatch() {
	d := &r.out.Decisions
	if r.job.Queue == nil {
		msg := fmt.Sprintf("spec.managedBy is %s but the job has no %s label: MultiKueue dispatches only a job in a LocalQueue; add the label, or create the job anew without managedBy to run it in this cluster",
			kueue.ManagedByMultiKueue, kueue.LabelQueueName)
		d.Blocked = &Blocked{Reason: ReasonNotQueued, Message: msg}
		d.Phase, d.Reason, d.Message = batch.JobPending, ReasonNotQueued, msg
		return
	}
	if r.queueHold() {
		return
	}
	if w := r.in.Kueue.Workload; undispatchable(w) {
		msg := fmt.Sprintf("Workload %s is admitted in ClusterQueue %s, which has no admission check: MultiKueue dispatches only through a ClusterQueue with a MultiKueue admission check, so nothing runs the job (spec.managedBy %s); give the ClusterQueue such a check, or create the job anew without managedBy to run it in this cluster",
			w.Name, w.Status.Admission.ClusterQueue, kueue.ManagedByMultiKueue)
		d.Blocked = &Blocked{Reason: ReasonNotDispatched, Message: msg}
		d.Phase, d.Reason, d.Message = batch.JobPending, ReasonNotDispatched, msg
		return
	}
	// Admitted: MultiKueue has dispatched the job; its copy's pods run in a worker cluster, and
	// the phase is the one MultiKueue copied from there.
	d.Phase = r.job.Status.Phase
}

// dispatched marks, after the decisions, a round whose status is MultiKueue's: a dispatched job's
// whose Workload holds a quota reservation or is finished, or that has finished.
func (r *renderer) dispatched() {
	if !r.job.Dispatched {
		return
	}
	d := &r.out.Decisions
	if r.job.Finished() {
		d.Dispatched = true
		return
	}
	if k := r.in.Kueue; k != nil && k.Workload != nil && r.job.Queue != nil && !undispatchable(k.Workload) {
		w := k.Workload
		d.Dispatched = condition(w, kueue.WorkloadQuotaReserved) || condition(w, kueue.WorkloadFinished)
	}
}

// undispatchable: w is admitted without any admission check, so no MultiKueue check takes it to a
// worker. Note: with a check, Kueue lists it in the Workload's status from the quota reservation
// on, and admits the Workload only once every check is Ready, so an admitted Workload with none
// listed has none.
func undispatchable(w *kueue.Workload) bool {
	return w != nil && w.Status.Admission != nil && condition(w, kueue.WorkloadAdmitted) && len(w.Status.AdmissionChecks) == 0 && !condition(w, kueue.WorkloadFinished)
}

// adopt reports whether the job must become the controller of its prebuilt Workload.
func (r *renderer) adopt(w *kueue.Workload) bool {
	if r.job.Queue == nil || r.job.Queue.Prebuilt == "" {
		return false
	}
	// Note: a Workload controlled by another object never reaches render (the controller refuses
	// to observe it), so one with no controller is all there is to adopt.
	return metav1.GetControllerOfNoCopy(w) == nil
}
