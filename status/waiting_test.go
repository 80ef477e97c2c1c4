package status

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
	"github.com/trainyard/trainyard/render"
)

// unschedulable is a pending pod the scheduler could not place, with its words.
func unschedulable(typ string, index int32, words string) corev1.Pod {
	p := podOf(typ, index, corev1.PodPending)
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: words}}
	return p
}

// gated is a pending pod the scheduler leaves alone while it has scheduling gates, with its words.
func gated(typ string, index int32) corev1.Pod {
	p := podOf(typ, index, corev1.PodPending)
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonSchedulingGated, Message: "Scheduling is blocked due to non-empty scheduling gates"}}
	return p
}

// waitingContainer is a pod bound to a node whose training container waits with reason.
func waitingContainer(typ string, index int32, reason, words string) corev1.Pod {
	p := podOf(typ, index, corev1.PodPending)
	p.Spec.NodeName = "node-1"
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "pytorch", State: corev1.ContainerState{
		Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: words},
	}}}
	return p
}

// evictedFrom is a running worker on node that the taint manager is deleting (gracefully: no
// kubelet confirms it while the node is not ready).
func evictedFrom(node string) corev1.Pod {
	p := bound(podOf("worker", 0, corev1.PodRunning))
	p.Spec.NodeName = node
	p.DeletionTimestamp = &metav1.Time{Time: t0.Add(-10 * time.Second)}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "DeletionByTaintManager"}}
	return p
}

// bound is a pod a kubelet reports on.
func bound(p corev1.Pod) corev1.Pod {
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "pytorch"}}
	return p
}

// kubePodGroup is a scheduling.k8s.io PodGroup at version with the kube-scheduler's condition of
// that version: PodGroupScheduled (v1alpha2, Kubernetes 1.36), PodGroupInitiallyScheduled (v1beta1,
// 1.37).
func kubePodGroup(version, condition string, scheduled metav1.ConditionStatus, words string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"conditions": []any{
		map[string]any{"type": condition, "status": string(scheduled), "reason": "Unschedulable", "message": words},
	}}}}
	u.SetAPIVersion(render.KubernetesGangGroup + "/" + version)
	u.SetKind("PodGroup")
	return u
}

func TestWaiting(t *testing.T) {
	started := &metav1.Time{Time: t0.Add(-time.Minute)}
	running := batch.TrainingJobStatus{Phase: batch.JobRunning, StartTime: started}
	const noGPU = "0/20 nodes are available: 20 Insufficient nvidia.com/gpu."
	cases := map[string]struct {
		job         render.Job
		pods        []corev1.Pod
		gang        *unstructured.Unstructured
		refused     error
		gangRefused string
		queued      *render.Blocked
		kueue       *render.KueueDecisions
		renderErr   bool
		maxWaiting  int // render's MaxUnscheduledPods
		nodes       map[string]render.NodeState
		wantReason  string // empty: no Waiting condition
		wantMessage string
	}{
		"pods the scheduler cannot place are Unschedulable, counted, in the scheduler's words": {
			job:        newJob(3).Status(running).Obj(),
			pods:       []corev1.Pod{bound(podOf("master", 0, corev1.PodRunning)), unschedulable("worker", 0, noGPU), unschedulable("worker", 1, noGPU), unschedulable("worker", 2, noGPU)},
			wantReason: batch.ReasonUnschedulable, wantMessage: "3 of 4 pods: " + noGPU,
		},
		"a container waiting on its image passes the kubelet's reason on": {
			job: newJob(1).Status(running).Obj(),
			pods: []corev1.Pod{bound(podOf("master", 0, corev1.PodRunning)),
				waitingContainer("worker", 0, "ImagePullBackOff", `Back-off pulling image "example.invalid/train:1"`)},
			wantReason: "ImagePullBackOff", wantMessage: `1 of 2 pods: Back-off pulling image "example.invalid/train:1"`,
		},
		"a missing Secret key is CreateContainerConfigError": {
			job:        newJob(1).Status(running).Obj(),
			pods:       []corev1.Pod{waitingContainer("master", 0, "CreateContainerConfigError", `secret "token" not found`), bound(podOf("worker", 0, corev1.PodRunning))},
			wantReason: "CreateContainerConfigError", wantMessage: `1 of 2 pods: secret "token" not found`,
		},
		"a missing PersistentVolumeClaim is named as such, before other scheduling causes": {
			job: newJob(1).Status(running).Obj(),
			pods: []corev1.Pod{unschedulable("master", 0, `0/4 nodes are available: persistentvolumeclaim "data" not found.`),
				unschedulable("worker", 0, noGPU)},
			wantReason: batch.ReasonPVCNotFound, wantMessage: `1 of 2 pods: 0/4 nodes are available: persistentvolumeclaim "data" not found.`,
		},
		"pods held by scheduling gates are SchedulingGated, naming Kueue's topology gate": {
			job:        newJob(2).Status(running).Obj(),
			pods:       []corev1.Pod{bound(podOf("master", 0, corev1.PodRunning)), gated("worker", 0), gated("worker", 1)},
			wantReason: batch.ReasonSchedulingGated, wantMessage: "2 of 3 pods: held by scheduling gates, which the scheduler waits to see removed (a job Kueue places by topology: kueue.x-k8s.io/topology, until Kueue gives each pod its node; is Kueue running?)",
		},
		"pods Kueue holds while it finds nodes in place of failed ones of the topology assignment name those nodes": {
			job:        newJob(2).Status(running).Obj(),
			pods:       []corev1.Pod{bound(podOf("master", 0, corev1.PodRunning)), bound(podOf("worker", 0, corev1.PodRunning)), gated("worker", 1)},
			kueue:      &render.KueueDecisions{Admitted: true, UnhealthyNodes: []string{"node-b4", "node-b5"}},
			wantReason: batch.ReasonSchedulingGated, wantMessage: "1 of 3 pods: held by Kueue's topology gate (kueue.x-k8s.io/topology) while Kueue finds other nodes for the pods it placed on node-b4, node-b5, which failed (tainted, not ready or gone)",
		},
		"scheduling comes before the kubelet": {
			job:        newJob(2).Status(running).Obj(),
			pods:       []corev1.Pod{waitingContainer("master", 0, "ErrImagePull", "pull failed"), waitingContainer("worker", 0, "ErrImagePull", "pull failed"), unschedulable("worker", 1, noGPU)},
			wantReason: batch.ReasonUnschedulable, wantMessage: "1 of 3 pods: " + noGPU,
		},
		"a gang object refused by the API server says so in its words": {
			job:         newJob(1).Obj(),
			gangRefused: `workloads.scheduling.k8s.io "j" is forbidden: ValidatingAdmissionPolicy 'no-gangs' with binding 'no-gangs' denied request: gang scheduling is not allowed here`,
			wantReason:  batch.ReasonCreateFailed, wantMessage: `the API server refused the job's gang object, so no pod is created: workloads.scheduling.k8s.io "j" is forbidden: ValidatingAdmissionPolicy 'no-gangs' with binding 'no-gangs' denied request: gang scheduling is not allowed here`,
		},
		"a pod the API server finds invalid is traced to the job's template": {
			// The API server names the pod's field; the job's is under the template of its type.
			job: newJob(1).Obj(),
			refused: apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "j-worker-0", field.ErrorList{field.Invalid(
				field.NewPath("spec", "containers").Index(0).Child("resources", "requests"), "4", "must be less than or equal to cpu limit of 2")}),
			wantReason: batch.ReasonCreateFailed, wantMessage: `the API server refused to create pods: Pod "j-worker-0" is invalid: spec.containers[0].resources.requests: Invalid value: "4": must be less than or equal to cpu limit of 2 (pod j-worker-0 is made from spec.replicaSpecs[1].template: its spec is spec.replicaSpecs[1].template.spec)`,
		},
		"pod creation refused by the API server says so in its words": {
			job: newJob(1).Status(running).Obj(),
			refused: apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "j-worker-0",
				errors.New("exceeded quota: gpus, requested: requests.nvidia.com/gpu=8, used: requests.nvidia.com/gpu=0, limited: requests.nvidia.com/gpu=4")),
			wantReason: batch.ReasonCreateFailed, wantMessage: `the API server refused to create pods: pods "j-worker-0" is forbidden: exceeded quota: gpus, requested: requests.nvidia.com/gpu=8, used: requests.nvidia.com/gpu=0, limited: requests.nvidia.com/gpu=4`,
		},
		"a gang the kube-scheduler cannot place is GangWaiting with its PodGroup's words": {
			job:        newJob(1).Status(running).Obj(),
			pods:       []corev1.Pod{podOf("master", 0, corev1.PodPending), podOf("worker", 0, corev1.PodPending)},
			gang:       kubePodGroup("v1alpha2", "PodGroupScheduled", metav1.ConditionFalse, "0/1 placements are available, first placement status: pod group is unschedulable"),
			wantReason: batch.ReasonGangWaiting, wantMessage: "2 of 2 pods held by the gang scheduler: 0/1 placements are available, first placement status: pod group is unschedulable",
		},
		"on Kubernetes 1.37 the kube-scheduler's words are in PodGroupInitiallyScheduled": {
			job:        newJob(1).Status(running).Obj(),
			pods:       []corev1.Pod{podOf("master", 0, corev1.PodPending), podOf("worker", 0, corev1.PodPending)},
			gang:       kubePodGroup("v1beta1", "PodGroupInitiallyScheduled", metav1.ConditionFalse, "0/4 nodes are available: 4 Insufficient example.com/gpu."),
			wantReason: batch.ReasonGangWaiting, wantMessage: "2 of 2 pods held by the gang scheduler: 0/4 nodes are available: 4 Insufficient example.com/gpu.",
		},
		"a coscheduling gang, whose PodGroup has no conditions, quotes the scheduler's words on its pods": {
			job:  newJob(1).Status(running).Obj(),
			pods: []corev1.Pod{unschedulable("master", 0, "0/4 nodes are available: resource gap nvidia.com/gpu"), unschedulable("worker", 0, "0/4 nodes are available: resource gap nvidia.com/gpu")},
			gang: func() *unstructured.Unstructured {
				u := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"phase": "Scheduling"}}}
				u.SetAPIVersion("scheduling.x-k8s.io/v1alpha1")
				u.SetKind("PodGroup")
				return u
			}(),
			wantReason:  batch.ReasonGangWaiting,
			wantMessage: "2 of 2 pods held by the gang scheduler (PodGroup Scheduling); the scheduler says of 2 of 2 pods: 0/4 nodes are available: resource gap nvidia.com/gpu",
		},
		"a queue's word comes before the pods'": {
			job:        newJob(1).Obj(),
			queued:     &render.Blocked{Reason: batch.ReasonQueued, Message: "insufficient unused quota for nvidia.com/gpu in flavor default, 4 more needed"},
			wantReason: batch.ReasonQueued, wantMessage: "insufficient unused quota for nvidia.com/gpu in flavor default, 4 more needed",
		},
		"a spec render refuses is InvalidSpec": {
			job:        newJob(1).Obj(),
			renderErr:  true,
			wantReason: ReasonInvalidSpec, wantMessage: "spec.replicaSpecs: bad",
		},
		"a restarted replica that is not back yet keeps the restart as the cause": {
			job: newJob(1).Status(batch.TrainingJobStatus{Phase: batch.JobRunning, StartTime: started, Conditions: []metav1.Condition{
				{Type: batch.ConditionReplicaFailure, Status: metav1.ConditionTrue, Reason: batch.ReasonRestarting, Message: "j-worker-0 exited with code 137"},
			}}).Obj(),
			pods:       []corev1.Pod{bound(podOf("master", 0, corev1.PodRunning)), podOf("worker", 0, corev1.PodPending)},
			wantReason: batch.ReasonRestarting, wantMessage: "restarting: j-worker-0 exited with code 137",
		},
		"a restart waiting for its back-off is Restarting, saying when": {
			job: newJob(1).Policy(batch.RestartPolicyOnFailure).Status(batch.TrainingJobStatus{Phase: batch.JobPending, StartTime: started, BackoffCount: 1}).Obj(),
			pods: []corev1.Pod{bound(podOf("master", 0, corev1.PodRunning)), func() corev1.Pod {
				p := podOf("worker", 0, corev1.PodFailed, 1)
				p.Status.ContainerStatuses[0].State.Terminated.StartedAt = metav1.NewTime(t0.Add(-20 * time.Second))
				p.Status.ContainerStatuses[0].State.Terminated.FinishedAt = metav1.NewTime(t0.Add(-2 * time.Second))
				return p
			}()},
			wantReason:  batch.ReasonRestarting,
			wantMessage: "j-worker-0 exited with code 1; restarting the job's pods at " + t0.Add(8*time.Second).UTC().Format(time.RFC3339) + ", 10s after it ended (each restart by exit code after the first waits, from 10s doubling up to 5m0s)",
		},
		"a pod the taint manager evicted from a node not ready within the bound says when it is replaced": {
			job:        newJob(1).Status(running).Obj(),
			pods:       []corev1.Pod{bound(podOf("master", 0, corev1.PodRunning)), evictedFrom("node-2")},
			nodes:      map[string]render.NodeState{"node-2": {Ready: corev1.ConditionFalse, Since: t0.Add(-15 * time.Second)}},
			wantReason: batch.ReasonNodeLost,
			wantMessage: "1 of 2 pods were evicted from a node that is not ready; they are replaced at " + t0.Add(45*time.Second).UTC().Format(time.RFC3339) +
				", when it has been not ready for the operator's --node-lost-after, unless it is Ready before",
		},
		"pods held while the scheduler catches up are PodsPaced, counted": {
			job:        newJob(3).Status(running).Obj(),
			pods:       []corev1.Pod{bound(podOf("master", 0, corev1.PodRunning)), podOf("worker", 0, corev1.PodPending)},
			maxWaiting: 1,
			wantReason: batch.ReasonPodsPaced, wantMessage: "2 of 4 pods not created yet: they follow as the scheduler binds the pods created before them",
		},
		"every pod running leaves no Waiting condition": {
			job:  newJob(1).Status(running).Obj(),
			pods: []corev1.Pod{bound(podOf("master", 0, corev1.PodRunning)), bound(podOf("worker", 0, corev1.PodRunning))},
		},
		"pods still starting without a cause leave no Waiting condition": {
			job:  newJob(1).Status(running).Obj(),
			pods: []corev1.Pod{bound(podOf("master", 0, corev1.PodPending)), bound(podOf("worker", 0, corev1.PodRunning))},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := Input{Job: &tc.job, Generation: 2, Current: tc.job.Status, Pods: ptrs(tc.pods), Gang: tc.gang,
				CreateRefused: refusalOf(tc.refused), GangRefused: tc.gangRefused, Now: t0}
			if tc.renderErr {
				in.RenderErr = errors.New("spec.replicaSpecs: bad")
			} else {
				out, err := render.Render(render.Input{Job: tc.job, Pods: ptrs(tc.pods), Now: t0, MaxUnscheduledPods: tc.maxWaiting, Nodes: tc.nodes})
				if err != nil {
					t.Fatal(err)
				}
				in.Out = out
				in.Out.Decisions.Queued = tc.queued
				in.Out.Decisions.Kueue = tc.kueue
			}
			st := Derive(in)
			c := meta.FindStatusCondition(st.Conditions, batch.ConditionWaiting)
			var got [2]string
			if c != nil {
				got = [2]string{c.Reason, c.Message}
			}
			if diff := cmp.Diff([2]string{tc.wantReason, tc.wantMessage}, got); diff != "" {
				t.Errorf("Waiting reason and message (-want +got):\n%s", diff)
			}
		})
	}
}

// Pods no scheduler looks at (a template's schedulerName naming one that is not running) get no
// condition at all: after notScheduledAfter the job says so, naming the scheduler; before, it
// asks to be looked at again.
func TestPodsNoSchedulerLooksAtAreNotScheduled(t *testing.T) {
	b := newJob(1)
	b.job.Spec.ReplicaSpecs[1].Template.Spec.SchedulerName = "volcano"
	j := b.Status(batch.TrainingJobStatus{Phase: batch.JobRunning, StartTime: &metav1.Time{Time: t0.Add(-time.Minute)}}).Obj()
	master := podOf("master", 0, corev1.PodRunning)
	master.Spec.NodeName = "node-1"
	worker := podOf("worker", 0, corev1.PodPending)
	for _, tc := range []struct {
		age         time.Duration
		wantReason  string
		wantRecheck bool
	}{{10 * time.Second, "", true}, {40 * time.Second, ReasonNotScheduled, false}} {
		worker.CreationTimestamp = metav1.NewTime(t0.Add(-tc.age))
		pods := []corev1.Pod{master, worker}
		st, _ := derive(t, j, pods, t0)
		c := meta.FindStatusCondition(st.Conditions, batch.ConditionWaiting)
		got := ""
		if c != nil {
			got = c.Reason
			if !strings.Contains(c.Message, "1 of 2 pods: no scheduler has looked at them in 30s (schedulerName volcano)") {
				t.Errorf("message %q", c.Message)
			}
		}
		if got != tc.wantReason {
			t.Errorf("a worker waiting %s for its scheduler: Waiting %q; want %q", tc.age, got, tc.wantReason)
		}
		if recheck := AwaitsScheduler(ptrs(pods), t0); recheck != tc.wantRecheck {
			t.Errorf("a worker waiting %s: AwaitsScheduler %v; want %v", tc.age, recheck, tc.wantRecheck)
		}
	}
}

func TestWaitingGoesWhenTheCauseDoes(t *testing.T) {
	started := &metav1.Time{Time: t0.Add(-time.Minute)}
	j := newJob(1).Status(batch.TrainingJobStatus{Phase: batch.JobRunning, StartTime: started}).Obj()
	stuck := []corev1.Pod{bound(podOf("master", 0, corev1.PodRunning)), unschedulable("worker", 0, "no room")}
	st, _ := derive(t, j, stuck, t0)
	if !meta.IsStatusConditionTrue(st.Conditions, batch.ConditionWaiting) {
		t.Fatalf("no Waiting condition for an unschedulable pod: %v", conditionStatus(st))
	}
	j.Status = st
	st, _ = derive(t, j, []corev1.Pod{bound(podOf("master", 0, corev1.PodRunning)), bound(podOf("worker", 0, corev1.PodRunning))}, t0.Add(time.Minute))
	if c := meta.FindStatusCondition(st.Conditions, batch.ConditionWaiting); c != nil {
		t.Errorf("Waiting %s/%s stays after every pod runs", c.Reason, c.Message)
	}
}

func TestWaitingEventOnlyWhenTheReasonChanges(t *testing.T) {
	waiting := func(reason, msg string) *batch.TrainingJobStatus {
		return &batch.TrainingJobStatus{Phase: batch.JobRunning, Conditions: []metav1.Condition{
			{Type: batch.ConditionWaiting, Status: metav1.ConditionTrue, Reason: reason, Message: msg},
		}}
	}
	none := &batch.TrainingJobStatus{Phase: batch.JobRunning}
	out := &render.Output{Decisions: render.Decisions{Phase: batch.JobRunning}}
	cases := map[string]struct {
		prev, next *batch.TrainingJobStatus
		written    bool
		want       []Event
	}{
		"a reason that appears gets one Warning": {
			prev: none, next: waiting("Unschedulable", "3 of 8 pods: no room"), written: true,
			want: []Event{{corev1.EventTypeWarning, "Unschedulable", "3 of 8 pods: no room"}},
		},
		"a count that changes under the same reason gets none": {
			prev: waiting("Unschedulable", "3 of 8 pods: no room"), next: waiting("Unschedulable", "2 of 8 pods: no room"), written: true,
		},
		"a reason that changes gets one": {
			prev: waiting("Unschedulable", "3 of 8 pods: no room"), next: waiting("ImagePullBackOff", "1 of 8 pods: back-off"), written: true,
			want: []Event{{corev1.EventTypeWarning, "ImagePullBackOff", "1 of 8 pods: back-off"}},
		},
		"nothing is said before the status that records it is written": {
			prev: none, next: waiting("Unschedulable", "3 of 8 pods: no room"),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := Events(Round{Prev: tc.prev, Next: tc.next, Out: out, Written: tc.written})
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

func TestKubeflowWaitingIsNeverTheStateColumn(t *testing.T) {
	j := render.FromPyTorchTrainingJob(&newJob(1).job)
	j.Kubeflow = &render.Kubeflow{}
	j.Kind = "PyTorchJob"
	now := metav1.NewTime(t0)
	later := metav1.NewTime(t0.Add(time.Minute))
	st := &batch.TrainingJobStatus{Conditions: []metav1.Condition{
		{Type: batch.ConditionInitialized, Status: metav1.ConditionTrue, Reason: "Created", LastTransitionTime: now},
		{Type: batch.ConditionWaiting, Status: metav1.ConditionTrue, Reason: batch.ReasonUnschedulable, Message: "2 of 2 pods: no room", LastTransitionTime: later},
	}}
	ks := ToKubeflow(st, &j)
	if n := len(ks.Conditions); n != 2 || ks.Conditions[n-1].Type != "Created" || ks.Conditions[0].Type != "Waiting" {
		t.Fatalf("conditions %v: want Waiting first and Created last (the State column)", ks.Conditions)
	}
	back := render.FromKubeflowStatus(&ks)
	if c := meta.FindStatusCondition(back.Conditions, batch.ConditionWaiting); c == nil || c.Reason != batch.ReasonUnschedulable || c.Message != "2 of 2 pods: no room" {
		t.Errorf("Waiting read back as %v", c)
	}
}

// refusalOf is err as the controller remembers it, none for nil.
func refusalOf(err error) Refusal {
	if err == nil {
		return Refusal{}
	}
	return RefusalOf(err)
}

// TestRefusalOfReadsThePodFromTheAnswersDetails: the pod a refusal found invalid is read from the
// API server's details, not from its words: a webhook's denial quoting another refusal's text
// names no pod, and an Invalid answer in other words still does.
func TestRefusalOfReadsThePodFromTheAnswersDetails(t *testing.T) {
	quoted := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "j-worker-0",
		errors.New(`admission webhook "audit.example.com" denied the request: last seen: Pod "j-worker-1" is invalid: spec.containers`))
	worded := &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 422, Reason: metav1.StatusReasonInvalid,
		Message: "spec.containers[0].image: Required value", Details: &metav1.StatusDetails{Kind: "Pod", Name: "j-worker-0"}}}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{quoted, ""},
		{worded, "j-worker-0"},
		{fmt.Errorf("creating Pod ns/j-worker-0: %w", worded), "j-worker-0"},
		{errors.New(`Pod "j-worker-0" is invalid: not from the API server`), ""},
	} {
		if got := RefusalOf(tc.err); got.InvalidPod != tc.want {
			t.Errorf("RefusalOf(%q).InvalidPod = %q, want %q", tc.err, got.InvalidPod, tc.want)
		}
	}
}
