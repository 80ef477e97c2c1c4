package status

import (
	"errors"
	"k8s.io/apimachinery/pkg/api/equality"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
	"github.com/trainyard/trainyard/apis/kueue"
	"github.com/trainyard/trainyard/render"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// jobBuilder makes PyTorch jobs for tests: newJob(3).Policy(batch.RestartPolicyExitCode).Obj().
type jobBuilder struct{ job batch.PyTorchTrainingJob }

func newJob(workers int32) *jobBuilder {
	tmpl := batch.ReplicaTemplate{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "pytorch", Image: "train"}},
	}}}
	master, worker := tmpl, *tmpl.DeepCopy()
	master.Replicas, worker.Replicas = ptr(int32(1)), ptr(workers)
	return &jobBuilder{job: batch.PyTorchTrainingJob{
		TypeMeta:   metav1.TypeMeta{APIVersion: batch.GroupVersion.String(), Kind: "PyTorchTrainingJob"},
		ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "ns", UID: "job-uid", Generation: 2},
		Spec: batch.PyTorchTrainingJobSpec{ReplicaSpecs: []batch.PyTorchReplicaSpec{
			{Type: "master", ReplicaTemplate: master},
			{Type: "worker", ReplicaTemplate: worker},
		}},
	}}
}

func (b *jobBuilder) Policy(p batch.RestartPolicy) *jobBuilder {
	b.job.Spec.ReplicaSpecs[1].RestartPolicy = p
	return b
}

// Queue labels the job for Kueue's LocalQueue q.
func (b *jobBuilder) Queue(q string) *jobBuilder {
	b.job.Labels = map[string]string{kueue.LabelQueueName: q}
	return b
}

func (b *jobBuilder) Scope(s batch.RestartScope) *jobBuilder {
	b.job.Spec.RunPolicy = &batch.RunPolicy{RestartScope: s}
	return b
}

func (b *jobBuilder) Status(s batch.TrainingJobStatus) *jobBuilder {
	b.job.Status = s
	return b
}

func (b *jobBuilder) Obj() render.Job { return render.FromPyTorchTrainingJob(&b.job) }

// podOf is pod index of type typ of job j in the given phase; exit sets a terminated container.
func podOf(typ string, index int32, phase corev1.PodPhase, exit ...int32) corev1.Pod {
	p := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: render.PodName("j", typ, index), Namespace: "ns", UID: types.UID(typ + strconv.Itoa(int(index))),
			Labels: map[string]string{batch.LabelReplicaType: typ, batch.LabelReplicaIndex: strconv.Itoa(int(index))},
		},
		Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "pytorch"}}},
		Status: corev1.PodStatus{Phase: phase},
	}
	if len(exit) > 0 {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "pytorch", State: corev1.ContainerState{
			Terminated: &corev1.ContainerStateTerminated{ExitCode: exit[0]},
		}}}
	}
	return p
}

// derive renders j over pods at now and derives its status, as the controller does.
func derive(t *testing.T, j render.Job, pods []corev1.Pod, now time.Time) (batch.TrainingJobStatus, *render.Output) {
	t.Helper()
	observed := make([]corev1.Pod, len(pods))
	for i := range pods {
		pods[i].DeepCopyInto(&observed[i])
	}
	out, err := render.Render(render.Input{Job: j, Pods: ptrs(pods), Now: now})
	if err != nil {
		t.Fatal(err)
	}
	st := Derive(Input{Job: &j, Generation: 2, Current: j.Status, Pods: ptrs(pods), Out: out, Now: now})
	// The controller hands status the cache's own pods: Derive must leave them as they were.
	if !equality.Semantic.DeepEqual(observed, pods) {
		t.Fatal("render or Derive changed the observed pods")
	}
	return st, out
}

// ptrs points at each pod, as render's and status's inputs hold them.
func ptrs(pods []corev1.Pod) []*corev1.Pod {
	out := make([]*corev1.Pod, len(pods))
	for i := range pods {
		out[i] = &pods[i]
	}
	return out
}

func evicted(p corev1.Pod) corev1.Pod {
	p.Status.Reason = "Evicted"
	return p
}

func conditionStatus(st batch.TrainingJobStatus) map[string]string {
	out := map[string]string{}
	for _, c := range st.Conditions {
		out[c.Type] = string(c.Status) + "/" + c.Reason
	}
	return out
}

func TestDerive(t *testing.T) {
	started := &metav1.Time{Time: t0.Add(-time.Minute)}
	running := batch.TrainingJobStatus{Phase: batch.JobRunning, StartTime: started}
	cases := map[string]struct {
		job            render.Job
		pods           []corev1.Pod
		wantPhase      batch.JobPhase
		wantAggregate  batch.Aggregate
		wantConditions map[string]string
		wantRestarts   map[string]int32
		wantBackoff    int32
		// wantDisruptions and wantGangRestarts are status.disruptionCount and gangRestarts.
		wantDisruptions, wantGangRestarts int32
	}{
		"a new job counts every replica as creating and is Initialized": {
			job:            newJob(3).Obj(),
			wantPhase:      batch.JobPending,
			wantAggregate:  batch.Aggregate{Creating: 4},
			wantConditions: map[string]string{"Initialized": "True/Created"},
			wantRestarts:   map[string]int32{"master": 0, "worker": 0},
		},
		"running and pending pods are counted and the job is Running": {
			job: newJob(2).Status(running).Obj(),
			pods: []corev1.Pod{podOf("master", 0, corev1.PodRunning), podOf("worker", 0, corev1.PodRunning),
				podOf("worker", 1, corev1.PodPending)},
			wantPhase:      batch.JobRunning,
			wantAggregate:  batch.Aggregate{Running: 2, Pending: 1},
			wantConditions: map[string]string{"Initialized": "True/Created", "Running": "True/PodsRunning"},
			wantRestarts:   map[string]int32{"master": 0, "worker": 0},
		},
		"a worker exiting 137 under ExitCode with restartScope Replica is restarted alone and counted": {
			job: newJob(1).Policy(batch.RestartPolicyExitCode).Scope(batch.RestartScopeReplica).Status(running).Obj(),
			pods: []corev1.Pod{podOf("master", 0, corev1.PodRunning),
				podOf("worker", 0, corev1.PodFailed, 137)},
			wantPhase:      batch.JobRunning,
			wantAggregate:  batch.Aggregate{Running: 1, Deleted: 1},
			wantConditions: map[string]string{"Initialized": "True/Created", "Running": "True/PodsRunning", "ReplicaFailure": "True/Restarting", "Waiting": "True/Restarting"},
			wantRestarts:   map[string]int32{"master": 0, "worker": 1},
			wantBackoff:    1,
		},
		"a worker exiting 1 under OnFailure restarts the plain PyTorch gang, counted once, every task once": {
			job: newJob(2).Policy(batch.RestartPolicyOnFailure).Status(running).Obj(),
			pods: []corev1.Pod{podOf("master", 0, corev1.PodRunning), podOf("worker", 0, corev1.PodRunning),
				podOf("worker", 1, corev1.PodFailed, 1)},
			wantPhase:        batch.JobPending,
			wantAggregate:    batch.Aggregate{Deleted: 3},
			wantConditions:   map[string]string{"Initialized": "True/Created", "ReplicaFailure": "True/Restarting", "Waiting": "True/Restarting"},
			wantRestarts:     map[string]int32{"master": 1, "worker": 1},
			wantBackoff:      1,
			wantGangRestarts: 1,
		},
		"an evicted worker is restarted as a disruption, not counted in backoffCount": {
			job:             newJob(1).Policy(batch.RestartPolicyOnFailure).Scope(batch.RestartScopeReplica).Status(running).Obj(),
			pods:            []corev1.Pod{podOf("master", 0, corev1.PodRunning), evicted(podOf("worker", 0, corev1.PodFailed))},
			wantPhase:       batch.JobRunning,
			wantAggregate:   batch.Aggregate{Running: 1, Deleted: 1},
			wantConditions:  map[string]string{"Initialized": "True/Created", "Running": "True/PodsRunning", "ReplicaFailure": "True/Restarting", "Waiting": "True/Restarting"},
			wantRestarts:    map[string]int32{"master": 0, "worker": 1},
			wantDisruptions: 1,
		},
		"the master succeeding completes the job and the running worker counts as deleted": {
			job:            newJob(1).Status(running).Obj(),
			pods:           []corev1.Pod{podOf("master", 0, corev1.PodSucceeded, 0), podOf("worker", 0, corev1.PodRunning)},
			wantPhase:      batch.JobSucceeded,
			wantAggregate:  batch.Aggregate{Succeeded: 1, Deleted: 1},
			wantConditions: map[string]string{"Initialized": "True/Created", "Completed": "True/Succeeded"},
			wantRestarts:   map[string]int32{"master": 0, "worker": 0},
		},
		"a worker exiting 1 under Never fails the job": {
			job:            newJob(1).Status(running).Obj(),
			pods:           []corev1.Pod{podOf("master", 0, corev1.PodRunning), podOf("worker", 0, corev1.PodFailed, 1)},
			wantPhase:      batch.JobFailed,
			wantAggregate:  batch.Aggregate{Deleted: 1, Failed: 1},
			wantConditions: map[string]string{"Initialized": "True/Created", "Failed": "True/ReplicaFailed", "ReplicaFailure": "True/ReplicaFailed"},
			wantRestarts:   map[string]int32{"master": 0, "worker": 0},
		},
		"a running job held by Kueue's queue is Pending, Initialized=False naming the queue, its pods deleted and no restart counted": {
			job:            newJob(1).Queue("research").Status(running).Obj(),
			pods:           []corev1.Pod{podOf("master", 0, corev1.PodRunning), podOf("worker", 0, corev1.PodRunning)},
			wantPhase:      batch.JobPending,
			wantAggregate:  batch.Aggregate{Deleted: 2},
			wantConditions: map[string]string{"Initialized": "False/KueueNotInstalled", "Waiting": "True/KueueNotInstalled"},
			wantRestarts:   map[string]int32{"master": 0, "worker": 0},
		},
		"pods of a finished job removed by the clean-up policy count as deleted": {
			job:            newJob(2).Status(batch.TrainingJobStatus{Phase: batch.JobSucceeded, StartTime: started}).Obj(),
			pods:           []corev1.Pod{podOf("master", 0, corev1.PodSucceeded, 0)},
			wantPhase:      batch.JobSucceeded,
			wantAggregate:  batch.Aggregate{Succeeded: 1, Deleted: 2},
			wantConditions: map[string]string{"Initialized": "True/Created", "Completed": "True/Succeeded"},
			wantRestarts:   map[string]int32{"master": 0, "worker": 0},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			st, _ := derive(t, tc.job, tc.pods, t0)
			if st.Phase != tc.wantPhase {
				t.Errorf("phase = %s; want %s", st.Phase, tc.wantPhase)
			}
			if diff := cmp.Diff(tc.wantAggregate, st.Aggregate); diff != "" {
				t.Errorf("aggregate (-want +got):\n%s", diff)
			}
			a := st.Aggregate
			if sum := a.Creating + a.Pending + a.Running + a.Succeeded + a.Failed + a.Unknown + a.Deleted; sum != st.DesiredReplicas {
				t.Errorf("aggregate adds up to %d; desiredReplicas is %d", sum, st.DesiredReplicas)
			}
			if diff := cmp.Diff(tc.wantConditions, conditionStatus(st)); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
			restarts := map[string]int32{}
			for _, task := range st.Tasks {
				restarts[task.Type] = task.RestartCount
			}
			if diff := cmp.Diff(tc.wantRestarts, restarts); diff != "" {
				t.Errorf("tasks' restartCount (-want +got):\n%s", diff)
			}
			if st.BackoffCount != tc.wantBackoff || st.DisruptionCount != tc.wantDisruptions || st.GangRestarts != tc.wantGangRestarts {
				t.Errorf("backoffCount, disruptionCount, gangRestarts = %d, %d, %d; want %d, %d, %d",
					st.BackoffCount, st.DisruptionCount, st.GangRestarts, tc.wantBackoff, tc.wantDisruptions, tc.wantGangRestarts)
			}
			if st.ObservedGeneration != 2 {
				t.Errorf("observedGeneration = %d; want 2", st.ObservedGeneration)
			}
		})
	}
}

func TestDeriveKeepsLastTransitionTimeOfUnchangedConditions(t *testing.T) {
	pods := []corev1.Pod{podOf("master", 0, corev1.PodRunning), podOf("worker", 0, corev1.PodRunning)}
	first, _ := derive(t, newJob(1).Status(batch.TrainingJobStatus{Phase: batch.JobPending, StartTime: &metav1.Time{Time: t0}}).Obj(), pods, t0)
	later, _ := derive(t, newJob(1).Status(first).Obj(), pods, t0.Add(time.Hour))
	for _, typ := range []string{batch.ConditionInitialized, batch.ConditionRunning} {
		a, b := meta.FindStatusCondition(first.Conditions, typ), meta.FindStatusCondition(later.Conditions, typ)
		if a == nil || b == nil || !a.LastTransitionTime.Equal(&b.LastTransitionTime) {
			t.Errorf("%s: lastTransitionTime moved from %v to %v though the condition did not change", typ, a, b)
		}
	}
	if changed, _ := Changed(&first, &later); changed {
		t.Errorf("an hour of nothing happening changed the status:\n%s", cmp.Diff(first, later))
	}
}

func TestDeriveOfARefusedJob(t *testing.T) {
	j := newJob(1).Obj()
	st := Derive(Input{Job: &j, Generation: 2, RenderErr: errors.New("spec.torchrunConfig.procPerNode: gpu needs a GPU limit"), Now: t0})
	c := meta.FindStatusCondition(st.Conditions, batch.ConditionInitialized)
	if st.Phase != batch.JobPending || c == nil || c.Status != metav1.ConditionFalse || c.Reason != ReasonInvalidSpec || c.Message == "" {
		t.Errorf("phase %s, Initialized %+v; want Pending and Initialized False/%s naming the field", st.Phase, c, ReasonInvalidSpec)
	}
}

func TestARefusalTooLongForAConditionIsCutShort(t *testing.T) {
	j := newJob(1).Obj()
	long := "spec.replicaSpecs[0].template.metadata.labels: " + strings.Repeat("é", 40000)
	st := Derive(Input{Job: &j, RenderErr: errors.New(long), Now: t0})
	c := meta.FindStatusCondition(st.Conditions, batch.ConditionInitialized)
	if c == nil || len(c.Message) > maxConditionMessage || !strings.HasPrefix(c.Message, "spec.replicaSpecs[0].template.metadata.labels: é") ||
		!strings.HasSuffix(c.Message, "é...") {
		t.Errorf("condition %+v; want the refusal cut to %d bytes at a character, marked", c, maxConditionMessage)
	}
}

func TestChanged(t *testing.T) {
	base := batch.TrainingJobStatus{Phase: batch.JobPending, DesiredReplicas: 4, Aggregate: batch.Aggregate{Running: 2, Pending: 2},
		Tasks: []batch.TaskStatus{{Type: "worker", ReplicaStatus: []batch.ReplicaStatus{{Name: "j-worker-0", Phase: corev1.PodPending}}}}}
	cases := map[string]struct {
		edit                    func(*batch.TrainingJobStatus)
		wantChanged, wantUrgent bool
	}{
		"nothing": {edit: func(*batch.TrainingJobStatus) {}},
		"one more pod running can wait": {edit: func(s *batch.TrainingJobStatus) { s.Aggregate.Running, s.Aggregate.Pending = 3, 1 },
			wantChanged: true},
		"a replica's phase can wait": {edit: func(s *batch.TrainingJobStatus) { s.Tasks[0].ReplicaStatus[0].Phase = corev1.PodRunning },
			wantChanged: true},
		"Pending to Running can wait": {edit: func(s *batch.TrainingJobStatus) { s.Phase = batch.JobRunning },
			wantChanged: true},
		"success is urgent":          {edit: func(s *batch.TrainingJobStatus) { s.Phase = batch.JobSucceeded }, wantChanged: true, wantUrgent: true},
		"failure is urgent":          {edit: func(s *batch.TrainingJobStatus) { s.Phase = batch.JobFailed }, wantChanged: true, wantUrgent: true},
		"a restart is urgent":        {edit: func(s *batch.TrainingJobStatus) { s.BackoffCount = 1 }, wantChanged: true, wantUrgent: true},
		"a disruption is urgent":     {edit: func(s *batch.TrainingJobStatus) { s.DisruptionCount = 1 }, wantChanged: true, wantUrgent: true},
		"a gang restart is urgent":   {edit: func(s *batch.TrainingJobStatus) { s.GangRestarts = 1 }, wantChanged: true, wantUrgent: true},
		"a task's restart is urgent": {edit: func(s *batch.TrainingJobStatus) { s.Tasks[0].RestartCount = 1 }, wantChanged: true, wantUrgent: true},
		// The remaining replicas may end seconds after a scale-down: render must read its time.
		"a scale-down's time is urgent": {edit: func(s *batch.TrainingJobStatus) { s.LastScaleDownTime = &metav1.Time{Time: time.Unix(1, 0)} },
			wantChanged: true, wantUrgent: true},
		"a new task without restarts can wait": {edit: func(s *batch.TrainingJobStatus) { s.Tasks = append(s.Tasks, batch.TaskStatus{Type: "master"}) },
			wantChanged: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			next := base.DeepCopy()
			tc.edit(next)
			changed, urgent := Changed(&base, next)
			if changed != tc.wantChanged || urgent != tc.wantUrgent {
				t.Errorf("Changed = %v, %v; want %v, %v", changed, urgent, tc.wantChanged, tc.wantUrgent)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// TestAFailedJobKeepsSayingWhy: the Failed condition's message (which pod failed, how) survives the
// rounds after the failure, which render decides nothing new in.
func TestAFailedJobKeepsSayingWhy(t *testing.T) {
	running := batch.TrainingJobStatus{Phase: batch.JobRunning, StartTime: &metav1.Time{Time: t0.Add(-time.Minute)}}
	failed, _ := derive(t, newJob(1).Status(running).Obj(), []corev1.Pod{podOf("master", 0, corev1.PodRunning), podOf("worker", 0, corev1.PodFailed, 1)}, t0)
	later, _ := derive(t, newJob(1).Status(failed).Obj(), []corev1.Pod{podOf("worker", 0, corev1.PodFailed, 1)}, t0.Add(time.Minute))
	c := meta.FindStatusCondition(later.Conditions, batch.ConditionFailed)
	if c == nil || c.Message != "j-worker-0 exited with code 1 and restartPolicy Never does not restart it" {
		t.Errorf("Failed condition a minute later: %+v; want its message kept", c)
	}
}

// TestAJobThatSucceededBeforeItsPauseIsNotPaused: the master succeeded before the pause took its
// pods, so the job Succeeds, and no Paused condition says otherwise.
func TestAJobThatSucceededBeforeItsPauseIsNotPaused(t *testing.T) {
	b := newJob(1)
	b.job.Spec.RunMode = &batch.RunMode{Pause: &batch.PauseMode{Enabled: ptr(true)}}
	b.Status(batch.TrainingJobStatus{Phase: batch.JobRunning, StartTime: &metav1.Time{Time: t0}})
	st, _ := derive(t, b.Obj(), []corev1.Pod{
		podOf("master", 0, corev1.PodSucceeded, 0), podOf("worker", 0, corev1.PodRunning),
	}, t0.Add(time.Minute))
	if st.Phase != batch.JobSucceeded {
		t.Errorf("phase %s; want Succeeded: the master succeeded before the pause", st.Phase)
	}
	if c := meta.FindStatusCondition(st.Conditions, batch.ConditionPaused); c != nil {
		t.Errorf("condition Paused %s/%s on a job that succeeded; want none", c.Status, c.Reason)
	}
}

// TestATensorBoardWhosePodCannotBeCreatedSaysWhy: the TensorBoard's ReplicaSet could not create
// its pod (Pod Security refused it): status.tensorboard says so in the API server's words rather
// than Progressing.
func TestATensorBoardWhosePodCannotBeCreatedSaysWhy(t *testing.T) {
	b := newJob(1)
	b.job.Spec.TensorboardSpec = &batch.TensorBoardSpec{Image: "tensorboard", TrainingLogFilesets: []batch.FilesetURI{"t9k://pvc/logs/tb"}}
	j := b.Obj()
	refused := `pods "j-tensorboard-5d-x" is forbidden: violates PodSecurity "restricted:latest": runAsNonRoot != true`
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "j-tensorboard", Namespace: "ns"}, Status: appsv1.DeploymentStatus{
		Conditions: []appsv1.DeploymentCondition{
			{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionFalse, Reason: "MinimumReplicasUnavailable"},
			{Type: appsv1.DeploymentReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedCreate", Message: refused},
		},
	}}
	got := tensorBoard(&j, d, nil, "", "")
	if got.Ready || got.Type != corev1.EventTypeWarning || got.Reason != batch.ReasonCreateFailed || got.Note != refused {
		t.Errorf("status.tensorboard = %+v; want Warning CreateFailed with the refusal", *got)
	}
}

// TestATensorBoardTheAPIServerRefusedSaysWhy: the API server refused the TensorBoard Deployment
// itself (a quota on Deployments): status.tensorboard says so in its words rather than Creating
// for ever.
func TestATensorBoardTheAPIServerRefusedSaysWhy(t *testing.T) {
	b := newJob(1)
	b.job.Spec.TensorboardSpec = &batch.TensorBoardSpec{Image: "tensorboard", TrainingLogFilesets: []batch.FilesetURI{"t9k://pvc/logs/tb"}}
	j := b.Obj()
	refused := `deployments.apps "j-tensorboard" is forbidden: exceeded quota: dq, requested: count/deployments.apps=1, used: count/deployments.apps=0, limited: count/deployments.apps=0`
	out, err := render.Render(render.Input{Job: j, Now: t0})
	if err != nil {
		t.Fatal(err)
	}
	st := Derive(Input{Job: &j, Generation: 1, Current: j.Status, Out: out, TensorBoardRefused: refused, Now: t0})
	got := st.Tensorboard
	if got == nil || got.Ready || got.Type != corev1.EventTypeWarning || got.Reason != batch.ReasonCreateFailed || got.Note != refused {
		t.Errorf("status.tensorboard = %+v; want Warning CreateFailed with the refusal", got)
	}
}

// A round in which thousands of replicas end names a few in its conditions and counts the rest:
// a condition's message over 32,768 bytes would fail every status write of the job.
func TestManyEndedReplicasKeepConditionsWritable(t *testing.T) {
	const workers = 2000
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	lastLog := "Traceback (most recent call last):\nRuntimeError: " + strings.Repeat("x", 190) + "\n"
	for name, build := range map[string]func() (render.Job, []corev1.Pod){
		"every worker evicted, restarted alone": func() (render.Job, []corev1.Pod) {
			pods := []corev1.Pod{podOf("master", 0, corev1.PodRunning)}
			for i := range int32(workers) {
				pods = append(pods, evicted(podOf("worker", i, corev1.PodFailed)))
			}
			return newJob(workers).Policy(batch.RestartPolicyOnFailure).Scope(batch.RestartScopeReplica).Obj(), pods
		},
		"every worker failing past backoffLimit, each quoted": func() (render.Job, []corev1.Pod) {
			pods := []corev1.Pod{podOf("master", 0, corev1.PodRunning)}
			for i := range int32(workers) {
				p := podOf("worker", i, corev1.PodFailed, 1)
				p.Status.ContainerStatuses[0].State.Terminated.Message = lastLog
				pods = append(pods, p)
			}
			b := newJob(workers).Policy(batch.RestartPolicyOnFailure).Scope(batch.RestartScopeReplica)
			b.job.Spec.RunPolicy.BackoffLimit = ptr(int32(10))
			return b.Obj(), pods
		},
	} {
		j, pods := build()
		st, _ := derive(t, j, pods, now)
		seen := false
		for _, c := range st.Conditions {
			if len(c.Message) > maxConditionMessage {
				t.Errorf("%s: condition %s has a message of %d bytes; want at most %d", name, c.Type, len(c.Message), maxConditionMessage)
			}
			if c.Type == batch.ConditionReplicaFailure {
				seen = true
				if !strings.Contains(c.Message, "j-worker-0 ") || !strings.Contains(c.Message, " more") {
					t.Errorf("%s: ReplicaFailure %q; want the first worker named and the rest counted", name, shorten(c.Message, 300))
				}
			}
		}
		if !seen {
			t.Errorf("%s: no ReplicaFailure condition: %v", name, conditionStatus(st))
		}
	}
}
