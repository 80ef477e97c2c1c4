package status

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
	kubeflowv1 "github.com/trainyard/trainyard/apis/kubeflow/v1"
	"github.com/trainyard/trainyard/render"
)

func TestEvents(t *testing.T) {
	pending := &batch.TrainingJobStatus{Phase: batch.JobPending}
	running := &batch.TrainingJobStatus{Phase: batch.JobRunning}
	failed := &batch.TrainingJobStatus{Phase: batch.JobFailed}
	paced := &batch.TrainingJobStatus{Phase: batch.JobRunning, Conditions: []metav1.Condition{
		{Type: batch.ConditionWaiting, Status: metav1.ConditionTrue, Reason: batch.ReasonPodsPaced, Message: "10 of 20 pods not created yet"}}}
	code := int32(137)
	kueueHeld := &batch.TrainingJobStatus{Phase: batch.JobPaused, Conditions: []metav1.Condition{
		{Type: batch.ConditionInitialized, Status: metav1.ConditionTrue, Reason: batch.ReasonCreated},
		{Type: batch.ConditionWaiting, Status: metav1.ConditionTrue, Reason: batch.ReasonQueued, Message: "Kueue holds the job in LocalQueue q"}}}
	trimmed := &batch.TrainingJobStatus{Phase: batch.JobRunning, Selector: "tensorstack.dev/owner-kind=PyTorchTrainingJob,tensorstack.dev/owner-name=j",
		Tasks: []batch.TaskStatus{{Type: "master", ReplicaStatus: make([]batch.ReplicaStatus, 1)}, {Type: "worker", ReplicaStatus: make([]batch.ReplicaStatus, 5799), ReplicaStatusOmitted: 4200}}}
	jobOfTwoTypes := render.FromPyTorchTrainingJob(&newJob(1).job) // master, worker
	kf := kubeflowJob(false, kubeflowv1.JobStatus{})
	kfTF := render.FromTFJob(&kubeflowv1.TFJob{ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "ns"},
		Spec: kubeflowv1.TFJobSpec{TFReplicaSpecs: map[kubeflowv1.ReplicaType]*kubeflowv1.ReplicaSpec{"Worker": kubeflowTemplate(2, "tensorflow")}}})
	cases := map[string]struct {
		round Round
		want  []Event
	}{
		"a pod the API server finds invalid is traced to the job's template": {
			round: Round{Prev: running, Next: running, Job: &jobOfTwoTypes, Out: &render.Output{Decisions: render.Decisions{Phase: batch.JobRunning}},
				CreateErr: fmt.Errorf("creating Pod ns/j-worker-0: %w", apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "j-worker-0",
					field.ErrorList{field.NotFound(field.NewPath("spec", "containers").Index(0).Child("volumeMounts").Index(0).Child("name"), "data")}))},
			want: []Event{{corev1.EventTypeWarning, EventCreateFailed, `creating Pod ns/j-worker-0: Pod "j-worker-0" is invalid: spec.containers[0].volumeMounts[0].name: Not found: "data" (pod j-worker-0 is made from spec.replicaSpecs[1].template: its spec is spec.replicaSpecs[1].template.spec)`}},
		},
		"a refusal that names no pod field is said as it is": {
			round: Round{Prev: running, Next: running, Job: &jobOfTwoTypes, Out: &render.Output{Decisions: render.Decisions{Phase: batch.JobRunning}},
				CreateErr: fmt.Errorf("creating Pod ns/j-worker-0: %w", apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "j-worker-0", errors.New("exceeded quota: gpus")))},
			want: []Event{{corev1.EventTypeWarning, EventCreateFailed, `creating Pod ns/j-worker-0: pods "j-worker-0" is forbidden: exceeded quota: gpus`}},
		},
		"a TensorBoard that cannot start says why, once it is written": {
			round: Round{Prev: running, Next: withTensorBoard(running, "PVCNotFound"), Written: true, Out: &render.Output{Decisions: render.Decisions{Phase: batch.JobRunning}}},
			want:  []Event{{corev1.EventTypeWarning, "PVCNotFound", `TensorBoard j-tensorboard: 1 of 1 pods: persistentvolumeclaim "logs" not found`}},
		},
		"and not again for the same reason": {
			round: Round{Prev: withTensorBoard(running, "PVCNotFound"), Next: withTensorBoard(running, "PVCNotFound"), Written: true, Out: &render.Output{Decisions: render.Decisions{Phase: batch.JobRunning}}},
		},
		"nor for a TensorBoard on its way": {
			round: Round{Prev: running, Next: withTensorBoard(running, ""), Written: true, Out: &render.Output{Decisions: render.Decisions{Phase: batch.JobRunning}}},
		},
		"a job whose status first leaves pods out of its lists says so, once it is written": {
			round: Round{Prev: running, Next: trimmed, Written: true, Out: &render.Output{Decisions: render.Decisions{Phase: batch.JobRunning}}},
			want:  []Event{{corev1.EventTypeNormal, EventStatusTrimmed, "status.tasks[].replicaStatus lists 5800 of the 10000 pods the job has, those neither Running nor Succeeded first: every pod would take the job past the API server's object size limit. status.aggregate counts them all; `kubectl get pods -l tensorstack.dev/owner-kind=PyTorchTrainingJob,tensorstack.dev/owner-name=j` lists them"}},
		},
		"and not again while it does": {
			round: Round{Prev: trimmed, Next: trimmed, Written: true, Out: &render.Output{Decisions: render.Decisions{Phase: batch.JobRunning}}},
		},
		"nor before the write": {
			round: Round{Prev: running, Next: trimmed, Out: &render.Output{Decisions: render.Decisions{Phase: batch.JobRunning}}},
		},
		"a new job's pods are one event, and its first phase none": {
			round: Round{Prev: &batch.TrainingJobStatus{}, Next: pending, Out: &render.Output{Decisions: render.Decisions{Phase: batch.JobPending}},
				Created: []string{"j-master-0", "j-worker-0", "j-worker-1", "j-worker-2", "j-worker-3"}},
			want: []Event{{corev1.EventTypeNormal, EventPodsCreated, "created 5 pods: j-master-0, j-worker-0, j-worker-1 and 2 more"}},
		},
		"a paced job's first batch says the rest follow": {
			round: Round{Prev: running, Next: running, Out: &render.Output{Decisions: render.Decisions{Phase: batch.JobRunning, HeldForScheduler: 4800}},
				Created: []string{"j-master-0", "j-worker-0", "j-worker-1", "j-worker-2"}},
			want: []Event{{corev1.EventTypeNormal, EventPodsCreated, "created 4 pods: j-master-0, j-worker-0, j-worker-1 and 1 more; 4800 more follow as the scheduler binds them"}},
		},
		"its later batches are silent while some are held": {
			round: Round{Prev: paced, Next: paced, Out: &render.Output{Decisions: render.Decisions{Phase: batch.JobRunning, HeldForScheduler: 4600}},
				Created: []string{"j-worker-3", "j-worker-4"}},
		},
		"and its last batch is an event again": {
			round: Round{Prev: paced, Next: running, Out: &render.Output{Decisions: render.Decisions{Phase: batch.JobRunning}},
				Created: []string{"j-worker-5", "j-worker-6"}},
			want: []Event{{corev1.EventTypeNormal, EventPodsCreated, "created 2 pods: j-worker-5, j-worker-6"}},
		},
		"PodsPaced is progress, not a warning": {
			round: Round{Prev: running, Next: paced, Written: true, Out: &render.Output{Decisions: render.Decisions{Phase: batch.JobRunning, HeldForScheduler: 10}}},
		},
		"a phase change is an event": {
			round: Round{Prev: pending, Next: running, Written: true, Out: &render.Output{Decisions: render.Decisions{Phase: batch.JobRunning, Reason: batch.ReasonPodsRunning}}},
			want:  []Event{{corev1.EventTypeNormal, batch.ReasonPodsRunning, "phase Pending -> Running"}},
		},
		"a new job whose first status is Running gets the phase event": {
			round: Round{Prev: &batch.TrainingJobStatus{}, Next: running, Written: true, Out: &render.Output{Decisions: render.Decisions{Phase: batch.JobRunning, Reason: batch.ReasonPodsRunning}}},
			want:  []Event{{corev1.EventTypeNormal, batch.ReasonPodsRunning, "phase Running"}},
		},
		"a phase change whose status is not written yet waits for the write": {
			round: Round{Prev: pending, Next: running, Out: &render.Output{Decisions: render.Decisions{Phase: batch.JobRunning, Reason: batch.ReasonPodsRunning}}},
		},
		"a failure is a warning with the reason and message": {
			round: Round{Prev: running, Next: failed, Written: true, Out: &render.Output{Decisions: render.Decisions{
				Phase: batch.JobFailed, Reason: batch.ReasonBackoffLimitExceeded, Message: "j-worker-0 exited with code 1; restarting it would exceed runPolicy.backoffLimit (3)"}}},
			want: []Event{{corev1.EventTypeWarning, batch.ReasonBackoffLimitExceeded,
				"phase Running -> Failed: j-worker-0 exited with code 1; restarting it would exceed runPolicy.backoffLimit (3)"}},
		},
		// A kubeflow.org job's events have the reasons Kubeflow's operator (v1.8.1) records.
		"a kubeflow.org job's failure is <Kind>Failed, led by Trainyard's reason": {
			round: Round{Prev: running, Next: failed, Written: true, Job: &kf, Out: &render.Output{Decisions: render.Decisions{
				Phase: batch.JobFailed, Reason: batch.ReasonBackoffLimitExceeded, Message: "j-worker-0 exited with code 1; restarting it would exceed runPolicy.backoffLimit (3)"}}},
			want: []Event{{corev1.EventTypeWarning, "PyTorchJobFailed",
				"BackoffLimitExceeded: phase Running -> Failed: j-worker-0 exited with code 1; restarting it would exceed runPolicy.backoffLimit (3)"}},
		},
		"a kubeflow.org job's success is <Kind>Succeeded": {
			round: Round{Prev: running, Next: &batch.TrainingJobStatus{Phase: batch.JobSucceeded}, Written: true, Job: &kfTF, Out: &render.Output{Decisions: render.Decisions{
				Phase: batch.JobSucceeded, Reason: batch.ReasonSucceeded, Message: "j-worker-0 succeeded"}}},
			want: []Event{{corev1.EventTypeNormal, "TFJobSucceeded", "phase Running -> Succeeded: j-worker-0 succeeded"}},
		},
		"a kubeflow.org job's restart is <Kind>Restarting": {
			round: Round{Prev: running, Next: running, Job: &kf, Out: &render.Output{Decisions: render.Decisions{Phase: batch.JobRunning, BackoffCount: 1,
				Restarts: []render.Restart{{Pod: "j-worker-0", Type: "worker", ExitCode: &code}}}}},
			want: []Event{{corev1.EventTypeWarning, "PyTorchJobRestarting", "j-worker-0 exited with code 137; restarting it (backoffCount 1)"}},
		},
		"a kubeflow.org job's suspension and resumption are <Kind>Suspended and <Kind>Resumed": {
			round: Round{Prev: running, Next: &batch.TrainingJobStatus{Phase: batch.JobPaused}, Written: true, Job: &kf, Out: &render.Output{Decisions: render.Decisions{
				Phase: batch.JobPaused, Reason: batch.ReasonPausing}}},
			want: []Event{{corev1.EventTypeNormal, "PyTorchJobSuspended", "phase Running -> Paused"}},
		},
		"and its resumption <Kind>Resumed": {
			round: Round{Prev: &batch.TrainingJobStatus{Phase: batch.JobPaused}, Next: &batch.TrainingJobStatus{Phase: batch.JobResuming}, Written: true, Job: &kf, Out: &render.Output{Decisions: render.Decisions{
				Phase: batch.JobResuming, Reason: batch.ReasonResuming, Message: "0 of 3 replicas running after the pause"}}},
			want: []Event{{corev1.EventTypeNormal, "PyTorchJobResumed", "phase Paused -> Resuming: 0 of 3 replicas running after the pause"}},
		},
		"a kubeflow.org job's running keeps Trainyard's reason (Kubeflow's operator records none)": {
			round: Round{Prev: pending, Next: running, Written: true, Job: &kf, Out: &render.Output{Decisions: render.Decisions{Phase: batch.JobRunning, Reason: batch.ReasonPodsRunning}}},
			want:  []Event{{corev1.EventTypeNormal, batch.ReasonPodsRunning, "phase Pending -> Running"}},
		},
		"a restart names the pod and its exit code": {
			round: Round{Prev: running, Next: running, Out: &render.Output{Decisions: render.Decisions{Phase: batch.JobRunning, BackoffCount: 1,
				Restarts: []render.Restart{{Pod: "j-worker-0", Type: "worker", ExitCode: &code}}}}},
			want: []Event{{corev1.EventTypeWarning, EventRestarting, "j-worker-0 exited with code 137; restarting it (backoffCount 1)"}},
		},
		"a gang restart says every pod is restarted, and how many were deleted": {
			round: Round{Prev: running, Next: running, Out: &render.Output{Decisions: render.Decisions{Phase: batch.JobPending, BackoffCount: 2, GangRestart: true,
				Delete:   []render.Deletion{{Name: "j-master-0", Reason: render.DeleteRestart}, {Name: "j-worker-0", Reason: render.DeleteRestart}},
				Restarts: []render.Restart{{Pod: "j-worker-0", Type: "worker", ExitCode: &code, Cause: "exited with code 137"}}}}},
			want: []Event{{corev1.EventTypeWarning, EventRestarting, "j-worker-0 exited with code 137; restarting every pod of the job, 2 deleted (backoffCount 2)"}},
		},
		"a disruption names its cause and the disruption count": {
			round: Round{Prev: running, Next: running, Out: &render.Output{Decisions: render.Decisions{Phase: batch.JobRunning, DisruptionCount: 1,
				Delete:   []render.Deletion{{Name: "j-worker-0", Reason: render.DeleteRestart}},
				Restarts: []render.Restart{{Pod: "j-worker-0", Type: "worker", Disrupted: true, Cause: "was evicted"}}}}},
			want: []Event{{corev1.EventTypeWarning, EventRestarting, "j-worker-0 was evicted; restarting it (disruptionCount 1, not counted toward backoffLimit)"}},
		},
		"render's warnings are recorded in the first round of a generation": {
			round: Round{Prev: running, Next: running, Warn: true, Out: &render.Output{Decisions: render.Decisions{Phase: batch.JobRunning,
				Warnings: []render.Warning{{Reason: render.WarnEnvOverridden, Message: "RANK is set by Trainyard"}}}}},
			want: []Event{{corev1.EventTypeWarning, render.WarnEnvOverridden, "RANK is set by Trainyard"}},
		},
		"warnings of one reason make one event naming each (the events API keeps a reason's first note)": {
			round: Round{Prev: running, Next: running, Warn: true, Out: &render.Output{Decisions: render.Decisions{Phase: batch.JobRunning,
				Warnings: []render.Warning{{Reason: render.WarnEnvOverridden, Message: "MASTER_ADDR is set by Trainyard"},
					{Reason: render.WarnTorchrunCommand, Message: "the command is replaced"},
					{Reason: render.WarnEnvOverridden, Message: "WORLD_SIZE is set by Trainyard"}}}}},
			want: []Event{{corev1.EventTypeWarning, render.WarnEnvOverridden, "MASTER_ADDR is set by Trainyard; WORLD_SIZE is set by Trainyard"},
				{corev1.EventTypeWarning, render.WarnTorchrunCommand, "the command is replaced"}},
		},
		"and not again in later rounds": {
			round: Round{Prev: running, Next: running, Out: &render.Output{Decisions: render.Decisions{Phase: batch.JobRunning,
				Warnings: []render.Warning{{Reason: render.WarnEnvOverridden, Message: "RANK is set by Trainyard"}}}}},
		},
		"a refusal too long for an event's note is cut to 1 KiB": {
			round: Round{Prev: pending, Next: pending, Warn: true, RenderErr: errors.New("metadata.labels: " + strings.Repeat("x", 2000))},
			want:  []Event{{corev1.EventTypeWarning, ReasonInvalidSpec, "metadata.labels: " + strings.Repeat("x", 1024-17-3) + "..."}},
		},
		"a new job held by Kueue's queue is one Normal event saying so": {
			round: Round{Prev: &batch.TrainingJobStatus{}, Next: pending, Written: true, Out: &render.Output{Decisions: render.Decisions{Phase: batch.JobPending,
				Reason: render.ReasonQueued, Queued: &render.Blocked{Reason: render.ReasonQueued, Message: "waiting for Kueue to admit Workload w in LocalQueue q"}}}},
			want: []Event{{corev1.EventTypeNormal, render.ReasonQueued, "waiting for Kueue to admit Workload w in LocalQueue q"}},
		},
		"a running job Kueue evicts gets the phase event only": {
			round: Round{Prev: running, Next: pending, Written: true, Out: &render.Output{Decisions: render.Decisions{Phase: batch.JobPending,
				Reason: render.ReasonQueued, Message: "Workload w was evicted by Kueue", Queued: &render.Blocked{Reason: render.ReasonQueued, Message: "Workload w was evicted by Kueue"}}}},
			want: []Event{{corev1.EventTypeNormal, render.ReasonQueued, "phase Running -> Pending: Workload w was evicted by Kueue"}},
		},
		"a kubeflow.org job Kueue still holds gets no second Queued event when its status is written again": {
			round: Round{Prev: kueueHeld, Next: kueueHeld, Written: true, Out: &render.Output{Decisions: render.Decisions{Phase: batch.JobPaused,
				Reason: batch.ReasonPaused, Queued: &render.Blocked{Reason: render.ReasonQueued, Message: "Kueue holds the job in LocalQueue q"}}}},
		},
		"a new kubeflow.org job Kueue holds (suspended, so Paused) is one Queued event, no Paused one": {
			round: Round{Prev: &batch.TrainingJobStatus{}, Next: kueueHeld, Written: true, Out: &render.Output{Decisions: render.Decisions{Phase: batch.JobPaused,
				Reason: batch.ReasonPaused, Message: "the job is paused and all its pods are gone", Queued: &render.Blocked{Reason: render.ReasonQueued, Message: "Kueue holds the job in LocalQueue q"}}}},
			want: []Event{{corev1.EventTypeNormal, render.ReasonQueued, "Kueue holds the job in LocalQueue q"}},
		},
		"a running kubeflow.org job Kueue evicts says so in Kueue's words, not Paused": {
			round: Round{Prev: running, Next: kueueHeld, Written: true, Out: &render.Output{Decisions: render.Decisions{Phase: batch.JobPaused,
				Reason: batch.ReasonPaused, Message: "the job is paused and all its pods are gone", Queued: &render.Blocked{Reason: render.ReasonQueued, Message: "Kueue holds the job in LocalQueue q"}}}},
			want: []Event{{corev1.EventTypeNormal, render.ReasonQueued, "Kueue holds the job in LocalQueue q"}},
		},
		"a job held for a missing WorkloadPriorityClass is one Warning event, not a Warning and a Normal of the same words": {
			round: Round{Prev: &batch.TrainingJobStatus{}, Next: &batch.TrainingJobStatus{Phase: batch.JobPending, Conditions: []metav1.Condition{
				{Type: batch.ConditionWaiting, Status: metav1.ConditionTrue, Reason: render.ReasonPriorityClassNotFound, Message: "WorkloadPriorityClass urgent not found"}}},
				Written: true, Out: &render.Output{Decisions: render.Decisions{Phase: batch.JobPending, Reason: render.ReasonPriorityClassNotFound,
					Queued: &render.Blocked{Reason: render.ReasonPriorityClassNotFound, Message: "WorkloadPriorityClass urgent not found"}}}},
			want: []Event{{corev1.EventTypeWarning, render.ReasonPriorityClassNotFound, "WorkloadPriorityClass urgent not found"}},
		},
		"a refused job is one warning per generation": {
			round: Round{Prev: pending, Next: pending, Warn: true, RenderErr: errors.New("metadata.name: too long")},
			want:  []Event{{corev1.EventTypeWarning, ReasonInvalidSpec, "metadata.name: too long"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Events(tc.round)); diff != "" {
				t.Errorf("Events (-want +got):\n%s", diff)
			}
		})
	}
}

// withTensorBoard is st with a TensorBoard not ready for reason (a Warning), or, with no reason,
// one still being made (Normal).
func withTensorBoard(st *batch.TrainingJobStatus, reason string) *batch.TrainingJobStatus {
	out := st.DeepCopy()
	tb := &batch.DependentStatus{Name: "tensorboard", Dependent: &corev1.ObjectReference{Kind: "Deployment", Name: "j-tensorboard"},
		Type: corev1.EventTypeNormal, Reason: "Progressing"}
	if reason != "" {
		tb.Type, tb.Reason, tb.Note = corev1.EventTypeWarning, reason, `1 of 1 pods: persistentvolumeclaim "logs" not found`
	}
	out.Tensorboard = tb
	return out
}
