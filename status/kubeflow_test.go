package status

import (
	"strings"
	"testing"
	"time"

	"strconv"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
	kubeflowv1 "github.com/trainyard/trainyard/apis/kubeflow/v1"
	"github.com/trainyard/trainyard/apis/kueue"
	"github.com/trainyard/trainyard/render"
)

func kubeflowTemplate(n int32, container string) *kubeflowv1.ReplicaSpec {
	return &kubeflowv1.ReplicaSpec{Replicas: &n, RestartPolicy: kubeflowv1.RestartPolicyNever, Template: corev1.PodTemplateSpec{
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: container, Image: "train"}}},
	}}
}

func kubeflowJob(suspend bool, st kubeflowv1.JobStatus) render.Job {
	tmpl := func(n int32) *kubeflowv1.ReplicaSpec { return kubeflowTemplate(n, "pytorch") }
	return render.FromPyTorchJob(&kubeflowv1.PyTorchJob{
		ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "ns", UID: "job-uid", Generation: 2},
		Spec: kubeflowv1.PyTorchJobSpec{
			RunPolicy:           &kubeflowv1.RunPolicy{Suspend: &suspend},
			PyTorchReplicaSpecs: map[kubeflowv1.ReplicaType]*kubeflowv1.ReplicaSpec{"Master": tmpl(1), "Worker": tmpl(2)},
		},
		Status: st,
	})
}

// TestKubeflowStatusRoundTrip follows a Kubeflow job through its phases. At each step the status
// Derive gives is written in Kubeflow's shape and read back as the next step's input, as the
// controller does: the phase must survive the trip (Kubeflow's status has none; it is read from
// the conditions), and reading back what was written must change nothing (else every reconcile
// would write).
func TestKubeflowStatusRoundTrip(t *testing.T) {
	running := []corev1.Pod{podOf("master", 0, corev1.PodRunning), podOf("worker", 0, corev1.PodRunning), podOf("worker", 1, corev1.PodRunning)}
	steps := []struct {
		name    string
		suspend bool
		pods    []corev1.Pod
		want    batch.JobPhase
		// wantCounts: per Kubeflow replica type, active/succeeded/failed.
		wantCounts map[kubeflowv1.ReplicaType][3]int32
		// wantConditions: per Kubeflow condition type, "status/reason/message" as written.
		wantConditions map[kubeflowv1.JobConditionType]string
	}{
		{name: "created, pods pending", pods: []corev1.Pod{podOf("master", 0, corev1.PodPending)}, want: batch.JobPending,
			wantConditions: map[kubeflowv1.JobConditionType]string{kubeflowv1.JobCreated: "True/PyTorchJobCreated/PyTorchJob j is created."}},
		{name: "every pod running", pods: running, want: batch.JobRunning,
			wantCounts: map[kubeflowv1.ReplicaType][3]int32{"Master": {1, 0, 0}, "Worker": {2, 0, 0}}},
		// Kubeflow says Suspended (and Running False) once it has asked for the pods' deletion.
		{name: "suspended, pods still there", suspend: true, pods: running, want: batch.JobPaused,
			wantConditions: map[kubeflowv1.JobConditionType]string{
				kubeflowv1.JobRunning:   "False/PyTorchJobSuspended/PyTorchJob j is suspended.",
				kubeflowv1.JobSuspended: "True/PyTorchJobSuspended/PyTorchJob j is suspended.",
			}},
		{name: "suspended, no pod left", suspend: true, want: batch.JobPaused,
			wantConditions: map[kubeflowv1.JobConditionType]string{
				kubeflowv1.JobCreated:   "True/PyTorchJobCreated/PyTorchJob j is created.",
				kubeflowv1.JobRunning:   "False/PyTorchJobSuspended/PyTorchJob j is suspended.",
				kubeflowv1.JobSuspended: "True/PyTorchJobSuspended/PyTorchJob j is suspended.",
			}},
		{name: "resumed, pods pending", pods: []corev1.Pod{podOf("master", 0, corev1.PodPending)}, want: batch.JobResuming,
			wantConditions: map[kubeflowv1.JobConditionType]string{kubeflowv1.JobSuspended: "False/PyTorchJobResumed/PyTorchJob j is resumed."}},
		{name: "running again", pods: running, want: batch.JobRunning},
		{name: "master succeeded", pods: []corev1.Pod{podOf("master", 0, corev1.PodSucceeded, 0), podOf("worker", 0, corev1.PodRunning), podOf("worker", 1, corev1.PodSucceeded, 0)},
			// As Kubeflow's operator (v1.8.1) counts a success: the replicas still running as succeeded.
			want: batch.JobSucceeded, wantCounts: map[kubeflowv1.ReplicaType][3]int32{"Master": {0, 1, 0}, "Worker": {0, 2, 0}}},
		// The clean-up deleted the running worker, then the rest: the counts stay those the job
		// finished with, as Kubeflow's, which counts no pod once the job has finished.
		{name: "cleaned up", pods: []corev1.Pod{podOf("master", 0, corev1.PodSucceeded, 0)},
			want: batch.JobSucceeded, wantCounts: map[kubeflowv1.ReplicaType][3]int32{"Master": {0, 1, 0}, "Worker": {0, 2, 0}}},
		{name: "no pod left", want: batch.JobSucceeded, wantCounts: map[kubeflowv1.ReplicaType][3]int32{"Master": {0, 1, 0}, "Worker": {0, 2, 0}}},
	}
	var stored kubeflowv1.JobStatus
	now := t0
	for _, step := range steps {
		now = now.Add(10 * time.Second)
		j := kubeflowJob(step.suspend, stored)
		st, _ := derive(t, j, step.pods, now)
		if st.Phase != step.want {
			t.Fatalf("%s: Derive gave phase %s; want %s", step.name, st.Phase, step.want)
		}
		written := ToKubeflow(&st, &j)
		back := render.FromKubeflowStatus(&written)
		if back.Phase != step.want {
			t.Errorf("%s: phase %s read back as %s from conditions %+v", step.name, step.want, back.Phase, written.Conditions)
		}
		if diff := cmp.Diff(ProjectKubeflow(&st, &j), ProjectKubeflow(&back, &j)); diff != "" {
			t.Errorf("%s: reading back what was written changes it (-written +again):\n%s", step.name, diff)
		}
		last := written.Conditions[len(written.Conditions)-1]
		for _, c := range written.Conditions {
			if last.LastTransitionTime.Before(&c.LastTransitionTime) {
				t.Errorf("%s: last condition %s changed at %s, before %s (the State column shows the last one)", step.name, last.Type, last.LastTransitionTime, c.Type)
			}
		}
		for typ, want := range step.wantConditions {
			if got := kubeflowCondition(written, typ); got != want {
				t.Errorf("%s: condition %s = %q; want %q", step.name, typ, got, want)
			}
		}
		for typ, want := range step.wantCounts {
			rs := written.ReplicaStatuses[typ]
			if got := [3]int32{rs.Active, rs.Succeeded, rs.Failed}; got != want {
				t.Errorf("%s: replicaStatuses[%s] active/succeeded/failed = %v; want %v", step.name, typ, got, want)
			}
		}
		stored = written
	}
	if sel := stored.ReplicaStatuses["Worker"].Selector; sel != "training.kubeflow.org/job-name=j,training.kubeflow.org/operator-name=pytorchjob-controller,training.kubeflow.org/replica-type=worker" {
		t.Errorf("replicaStatuses.Worker.selector = %q", sel)
	}
}

// kubeflowCondition is condition typ of st as "status/reason/message", or "" when st has none.
func kubeflowCondition(st kubeflowv1.JobStatus, typ kubeflowv1.JobConditionType) string {
	for _, c := range st.Conditions {
		if c.Type == typ {
			return string(c.Status) + "/" + c.Reason + "/" + c.Message
		}
	}
	return ""
}

// TestKubeflowJobSuspendedFromTheStart: a job created suspended never runs a pod, and still gets
// Created as Kubeflow's operator writes it, then Suspended, the latest last (the State column).
func TestKubeflowJobSuspendedFromTheStart(t *testing.T) {
	cases := map[string]struct {
		job  func(st kubeflowv1.JobStatus) render.Job
		want []string
	}{
		"a PyTorchJob suspended before it ran is Created and Suspended, with no Running": {
			job: func(st kubeflowv1.JobStatus) render.Job { return kubeflowJob(true, st) },
			want: []string{
				"Created True/PyTorchJobCreated/PyTorchJob j is created.",
				"Suspended True/PyTorchJobSuspended/PyTorchJob j is suspended.",
			},
		},
		"a TFJob suspended before it ran says TFJob in its reasons and messages": {
			job: func(st kubeflowv1.JobStatus) render.Job {
				return render.FromTFJob(&kubeflowv1.TFJob{
					ObjectMeta: metav1.ObjectMeta{Name: "dist", Namespace: "ns", UID: "tf-uid", Generation: 1},
					Spec: kubeflowv1.TFJobSpec{
						RunPolicy: &kubeflowv1.RunPolicy{Suspend: ptr(true)},
						TFReplicaSpecs: map[kubeflowv1.ReplicaType]*kubeflowv1.ReplicaSpec{
							"Chief": kubeflowTemplate(1, "tensorflow"), "Worker": kubeflowTemplate(2, "tensorflow"),
						},
					},
					Status: st,
				})
			},
			want: []string{
				"Created True/TFJobCreated/TFJob dist is created.",
				"Suspended True/TFJobSuspended/TFJob dist is suspended.",
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var stored kubeflowv1.JobStatus
			// Twice: the second round reads the first's status back and must write the same.
			for round := 1; round <= 2; round++ {
				j := tc.job(stored)
				st, out := derive(t, j, nil, t0)
				if len(out.Decisions.Create) > 0 || st.Phase != batch.JobPaused {
					t.Fatalf("round %d: phase %s, creating %v; want Paused, no pod", round, st.Phase, out.Decisions.Create)
				}
				written := ToKubeflow(&st, &j)
				var got []string
				for _, c := range written.Conditions {
					got = append(got, string(c.Type)+" "+string(c.Status)+"/"+c.Reason+"/"+c.Message)
				}
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("round %d: conditions (-want +got):\n%s", round, diff)
				}
				stored = written
			}
		})
	}
}

// TestKubeflowRestartingWhileARestartIsUnderWay: Kubeflow's Restarting is True from a restart (here
// a TFJob worker's, which with a PS restarts alone) until the job runs again, and the State column (the last condition) says Restarting, then Running
// again, as Kubeflow's operator (v1.8.1) writes them; a job that fails at a replica's first
// failure says Failed and never Restarting. Each status, read back, writes the same again.
func TestKubeflowRestartingWhileARestartIsUnderWay(t *testing.T) {
	tfJob := func(policy kubeflowv1.RestartPolicy, stored kubeflowv1.JobStatus) render.Job {
		tmpl := func(n int32) *kubeflowv1.ReplicaSpec {
			r := kubeflowTemplate(n, "tensorflow")
			r.RestartPolicy = policy
			return r
		}
		return render.FromTFJob(&kubeflowv1.TFJob{
			ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "ns", UID: "job-uid", Generation: 2},
			Spec:       kubeflowv1.TFJobSpec{TFReplicaSpecs: map[kubeflowv1.ReplicaType]*kubeflowv1.ReplicaSpec{"Chief": tmpl(1), "PS": tmpl(1), "Worker": tmpl(2)}},
			Status:     stored,
		})
	}
	pod := func(typ string, i int32, phase corev1.PodPhase, exit ...int32) corev1.Pod {
		p := podOf(typ, i, phase, exit...)
		p.Spec.Containers[0].Name = "tensorflow"
		for k := range p.Status.ContainerStatuses {
			p.Status.ContainerStatuses[k].Name = "tensorflow"
		}
		return p
	}
	chief, ps, worker0 := pod("chief", 0, corev1.PodRunning), pod("ps", 0, corev1.PodRunning), pod("worker", 0, corev1.PodRunning)
	replacement := pod("worker", 1, corev1.PodRunning)
	replacement.UID, replacement.CreationTimestamp = "worker1-again", metav1.NewTime(t0.Add(35*time.Second))
	type step struct {
		name       string
		pods       []corev1.Pod
		restarting bool
		state      kubeflowv1.JobConditionType // the last condition's type
	}
	for _, c := range []struct {
		policy kubeflowv1.RestartPolicy
		steps  []step
	}{
		{kubeflowv1.RestartPolicyOnFailure, []step{
			{"running", []corev1.Pod{chief, ps, worker0, pod("worker", 1, corev1.PodRunning)}, false, kubeflowv1.JobRunning},
			{"worker-1 exits 1: restarted alone", []corev1.Pod{chief, ps, worker0, pod("worker", 1, corev1.PodFailed, 1)}, true, kubeflowv1.JobRestarting},
			{"worker-1 gone", []corev1.Pod{chief, ps, worker0}, true, kubeflowv1.JobRestarting},
			{"worker-1 runs again", []corev1.Pod{chief, ps, worker0, replacement}, false, kubeflowv1.JobRunning},
		}},
		{kubeflowv1.RestartPolicyNever, []step{
			{"running", []corev1.Pod{chief, ps, worker0, pod("worker", 1, corev1.PodRunning)}, false, kubeflowv1.JobRunning},
			{"worker-1 exits 1 under Never: the job fails", []corev1.Pod{chief, ps, worker0, pod("worker", 1, corev1.PodFailed, 1)}, false, kubeflowv1.JobFailed},
		}},
	} {
		var stored kubeflowv1.JobStatus
		now := t0
		for _, step := range c.steps {
			now = now.Add(10 * time.Second)
			j := tfJob(c.policy, stored)
			st, _ := derive(t, j, step.pods, now)
			written := ToKubeflow(&st, &j)
			got := kubeflowCondition(written, kubeflowv1.JobRestarting)
			if (got != "") != step.restarting || (step.restarting && got[:4] != "True") {
				t.Errorf("%s, %s: Restarting = %q; want it only while restarting (%v)", c.policy, step.name, got, step.restarting)
			}
			if last := written.Conditions[len(written.Conditions)-1]; last.Type != step.state || last.Status != corev1.ConditionTrue {
				t.Errorf("%s, %s: the State column shows %s %s; want %s", c.policy, step.name, last.Type, last.Status, step.state)
			}
			back := render.FromKubeflowStatus(&written)
			if diff := cmp.Diff(ProjectKubeflow(&st, &j), ProjectKubeflow(&back, &j)); diff != "" {
				t.Errorf("%s, %s: reading back what was written changes it (-written +again):\n%s", c.policy, step.name, diff)
			}
			stored = written
		}
	}
}

// TestKubeflowJobHeldByKueueSaysQueued: a PyTorchJob labelled kueue.x-k8s.io/queue-name is held by
// Kueue's own integration through runPolicy.suspend. With Kueue installed its Waiting condition
// says Queued (the Reason column), while Kubeflow's conditions and State column stay Suspended, as
// Kubeflow's operator writes them; read back, the status writes the same again. Without Kueue the
// suspend is the user's, and says nothing more.
func TestKubeflowJobHeldByKueueSaysQueued(t *testing.T) {
	for _, installed := range []bool{true, false} {
		var stored kubeflowv1.JobStatus
		for round := 1; round <= 2; round++ {
			j := kubeflowJob(true, stored)
			j.Kubeflow.KueueQueue = "lq"
			out, err := render.Render(render.Input{Job: j, Now: t0, InstalledCRDs: map[string]bool{kueue.WorkloadCRD: installed}})
			if err != nil {
				t.Fatal(err)
			}
			st := Derive(Input{Job: &j, Generation: 2, Current: j.Status, Out: out, Now: t0})
			written := ToKubeflow(&st, &j)
			var got []string
			for _, c := range written.Conditions {
				got = append(got, string(c.Type)+" "+string(c.Status)+"/"+c.Reason)
			}
			want := []string{"Created True/PyTorchJobCreated", "Suspended True/PyTorchJobSuspended"}
			if installed {
				want = append([]string{"Waiting True/Queued"}, want...)
				if c := meta.FindStatusCondition(st.Conditions, batch.ConditionWaiting); c == nil || !strings.Contains(c.Message, "Kueue holds the job in LocalQueue lq") {
					t.Errorf("round %d: Waiting %v; want Kueue's hold, naming the LocalQueue", round, c)
				}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Kueue installed %v, round %d: conditions (-want +got):\n%s", installed, round, diff)
			}
			stored = written
		}
	}
}

// TestKubeflowStateOfTransitionsInOneSecond: conditions have a second's precision; a job resumed
// and running within one second has Suspended False and Running True at the same time, and its
// State column (the last condition) says Running.
func TestKubeflowStateOfTransitionsInOneSecond(t *testing.T) {
	j := kubeflowJob(false, kubeflowv1.JobStatus{})
	at := metav1.NewTime(t0)
	st := batch.TrainingJobStatus{Phase: batch.JobRunning, Conditions: []metav1.Condition{
		{Type: batch.ConditionInitialized, Status: metav1.ConditionTrue, Reason: batch.ReasonCreated, LastTransitionTime: metav1.NewTime(t0.Add(-time.Minute))},
		{Type: batch.ConditionRunning, Status: metav1.ConditionTrue, Reason: batch.ReasonPodsRunning, LastTransitionTime: at},
		{Type: batch.ConditionPaused, Status: metav1.ConditionFalse, Reason: batch.ReasonResuming, LastTransitionTime: at},
	}}
	written := ToKubeflow(&st, &j)
	if last := written.Conditions[len(written.Conditions)-1]; last.Type != kubeflowv1.JobRunning || last.Status != corev1.ConditionTrue {
		t.Errorf("the last condition (the State column) is %s %s; want Running True. Conditions: %+v", last.Type, last.Status, written.Conditions)
	}
}

// TestKubeflowStateOfARunningJobEditedIntoInvalidSpec: an edit render refuses turns Created False
// (InvalidSpec) while the pods run on; the State column (the last condition) still says Running,
// and the Reason column says InvalidSpec.
func TestKubeflowStateOfARunningJobEditedIntoInvalidSpec(t *testing.T) {
	j := kubeflowJob(false, kubeflowv1.JobStatus{})
	st := batch.TrainingJobStatus{Phase: batch.JobRunning, Conditions: []metav1.Condition{
		{Type: batch.ConditionWaiting, Status: metav1.ConditionTrue, Reason: ReasonInvalidSpec, LastTransitionTime: metav1.NewTime(t0)},
		{Type: batch.ConditionRunning, Status: metav1.ConditionTrue, Reason: batch.ReasonPodsRunning, LastTransitionTime: metav1.NewTime(t0.Add(-time.Minute))},
		{Type: batch.ConditionInitialized, Status: metav1.ConditionFalse, Reason: ReasonInvalidSpec, LastTransitionTime: metav1.NewTime(t0)},
	}}
	written := ToKubeflow(&st, &j)
	if last := written.Conditions[len(written.Conditions)-1]; last.Type != kubeflowv1.JobRunning || last.Status != corev1.ConditionTrue {
		t.Errorf("the last condition (the State column) is %s %s; want Running True. Conditions: %+v", last.Type, last.Status, written.Conditions)
	}
	if first := written.Conditions[0]; first.Type != kubeflowv1.JobWaiting || first.Reason != ReasonInvalidSpec {
		t.Errorf("the first condition is %s %s; want Waiting InvalidSpec", first.Type, first.Reason)
	}
	if back := render.FromKubeflowStatus(&written); back.Phase != batch.JobRunning {
		t.Errorf("read back, the phase is %q; want Running", back.Phase)
	}
}

// TestKubeflowCarriesTheLastScaleDown: status.lastScaleDownTime, which decides whether a failure
// soon after a scale-down counts toward backoffLimit, is written to a Kubeflow job's status and
// read back from it, or a PyTorchJob's scale-down would spend its backoffLimit.
func TestKubeflowCarriesTheLastScaleDown(t *testing.T) {
	at := metav1.NewTime(t0.Add(time.Minute))
	st := batch.TrainingJobStatus{Phase: batch.JobRunning, LastScaleDownTime: &at}
	j := kubeflowJob(false, kubeflowv1.JobStatus{})
	written := ToKubeflow(&st, &j)
	if written.LastScaleDownTime == nil || !written.LastScaleDownTime.Equal(&at) {
		t.Fatalf("written lastScaleDownTime %v, want %v", written.LastScaleDownTime, at)
	}
	if back := render.FromKubeflowStatus(&written); back.LastScaleDownTime == nil || !back.LastScaleDownTime.Equal(&at) {
		t.Errorf("read back lastScaleDownTime %v, want %v", back.LastScaleDownTime, at)
	}
}

// TestKubeflowOutcomeReasons: Running, Restarting, Succeeded and Failed, when True, carry the
// reason Kubeflow's operator writes (PyTorchJobSucceeded: tools read the last condition's reason
// to tell how a job ended), their message render's, led by render's reason where the type does not
// say it; read back, render sees its own reason again, and the next round writes the same.
func TestKubeflowOutcomeReasons(t *testing.T) {
	job := func(policy kubeflowv1.RestartPolicy, st kubeflowv1.JobStatus) render.Job {
		j := kubeflowJob(false, st)
		for i := range j.Replicas {
			j.Replicas[i].RestartPolicy = batch.RestartPolicy(policy)
		}
		return j
	}
	m, w0 := podOf("master", 0, corev1.PodRunning), podOf("worker", 0, corev1.PodRunning)
	for _, c := range []struct {
		name   string
		policy kubeflowv1.RestartPolicy
		pods   []corev1.Pod
		want   string // the last condition, "type status/reason/message"
		render string // render's reason of that condition, read back
	}{
		{"running", kubeflowv1.RestartPolicyNever, []corev1.Pod{m, w0, podOf("worker", 1, corev1.PodRunning)},
			"Running True/PyTorchJobRunning/PyTorchJob j is running.", batch.ReasonPodsRunning},
		{"succeeded", kubeflowv1.RestartPolicyNever, []corev1.Pod{podOf("master", 0, corev1.PodSucceeded, 0), w0, podOf("worker", 1, corev1.PodSucceeded, 0)},
			"Succeeded True/PyTorchJobSucceeded/j-master-0 succeeded", batch.ReasonSucceeded},
		{"failed", kubeflowv1.RestartPolicyNever, []corev1.Pod{m, w0, podOf("worker", 1, corev1.PodFailed, 1)},
			"Failed True/PyTorchJobFailed/ReplicaFailed: j-worker-1 exited with code 1 and restartPolicy Never does not restart it", batch.ReasonFailed},
		{"restarting", kubeflowv1.RestartPolicyOnFailure, []corev1.Pod{m, w0, podOf("worker", 1, corev1.PodFailed, 1)},
			"Restarting True/PyTorchJobRestarting/j-worker-1 exited with code 1; every pod of the job is restarted", batch.ReasonRestarting},
	} {
		var stored kubeflowv1.JobStatus
		for round := 1; round <= 2; round++ {
			// Round 1 from a running job's status, round 2 from what round 1 wrote.
			if round == 1 {
				j := job(c.policy, kubeflowv1.JobStatus{})
				st, _ := derive(t, j, []corev1.Pod{m, w0, podOf("worker", 1, corev1.PodRunning)}, t0.Add(10*time.Second))
				stored = ToKubeflow(&st, &j)
			}
			j := job(c.policy, stored)
			st, _ := derive(t, j, c.pods, t0.Add(time.Duration(10+10*round)*time.Second))
			written := ToKubeflow(&st, &j)
			last := written.Conditions[len(written.Conditions)-1]
			if got := string(last.Type) + " " + string(last.Status) + "/" + last.Reason + "/" + last.Message; !strings.HasPrefix(got, c.want) {
				t.Errorf("%s, round %d: last condition %q; want %q", c.name, round, got, c.want)
			}
			back := render.FromKubeflowStatus(&written)
			for _, pair := range render.KubeflowConditions {
				if pair.Kubeflow != last.Type {
					continue
				}
				msg := strings.TrimPrefix(last.Message, c.render+": ")
				if last.Type == kubeflowv1.JobRunning {
					msg = "" // render's running job has none
				}
				if bc := meta.FindStatusCondition(back.Conditions, pair.Status); bc == nil || bc.Reason != c.render || bc.Message != msg {
					t.Errorf("%s, round %d: read back as %+v; want render's reason %s and message %q", c.name, round, bc, c.render, msg)
				}
			}
			if diff := cmp.Diff(ProjectKubeflow(&st, &j), ProjectKubeflow(&back, &j)); diff != "" {
				t.Errorf("%s, round %d: reading back what was written changes it (-written +again):\n%s", c.name, round, diff)
			}
			stored = written
		}
	}
}

// TestKubeflowSelectorNamesKubeflowsController: replicaStatuses' selector, like the pods' labels,
// says operator-name as Kubeflow's operator does, per kind, so selectors written for it find them.
func TestKubeflowSelectorNamesKubeflowsController(t *testing.T) {
	tf := render.FromTFJob(&kubeflowv1.TFJob{ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "ns"},
		Spec: kubeflowv1.TFJobSpec{TFReplicaSpecs: map[kubeflowv1.ReplicaType]*kubeflowv1.ReplicaSpec{"PS": kubeflowTemplate(1, "tensorflow")}}})
	pt := kubeflowJob(false, kubeflowv1.JobStatus{})
	for _, c := range []struct {
		job  render.Job
		typ  kubeflowv1.ReplicaType
		want string
	}{
		{pt, "Master", "training.kubeflow.org/job-name=j,training.kubeflow.org/operator-name=pytorchjob-controller,training.kubeflow.org/replica-type=master"},
		{tf, "PS", "training.kubeflow.org/job-name=j,training.kubeflow.org/operator-name=tfjob-controller,training.kubeflow.org/replica-type=ps"},
	} {
		st, _ := derive(t, c.job, nil, t0)
		rs := ToKubeflow(&st, &c.job).ReplicaStatuses[c.typ]
		if rs == nil || rs.Selector != c.want || rs.LabelSelector.MatchLabels[kubeflowv1.LabelOperatorName] != strings.ToLower(c.job.Kind)+"-controller" {
			t.Errorf("%s %s: replicaStatus %+v; want selector %s", c.job.Kind, c.typ, rs, c.want)
		}
	}
}

// TestKubeflowRestartingDuringABackoff: a restart held for its back-off (every restart by exit
// code after the first) is under way too: Kubeflow's Restarting is True, and last, for the State
// column, until the restarted pods run, as for a restart made at once.
func TestKubeflowRestartingDuringABackoff(t *testing.T) {
	job := func(st kubeflowv1.JobStatus) render.Job {
		j := kubeflowJob(false, st)
		for i := range j.Replicas {
			j.Replicas[i].RestartPolicy = batch.RestartPolicyOnFailure
		}
		return j
	}
	gang := func(p corev1.Pod, n int, ended time.Time) corev1.Pod {
		p.UID = types.UID(string(p.UID) + "-" + strconv.Itoa(n))
		p.Annotations = map[string]string{batch.AnnotationGangRestarts: strconv.Itoa(n)}
		for i := range p.Status.ContainerStatuses {
			p.Status.ContainerStatuses[i].State.Terminated.FinishedAt = metav1.NewTime(ended)
			p.Status.ContainerStatuses[i].State.Terminated.StartedAt = metav1.NewTime(ended.Add(-2 * time.Second)) // a short run: the back-off applies
		}
		return p
	}
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	running := func(n int) []corev1.Pod {
		return []corev1.Pod{gang(podOf("master", 0, corev1.PodRunning), n, at(0)), gang(podOf("worker", 0, corev1.PodRunning), n, at(0)), gang(podOf("worker", 1, corev1.PodRunning), n, at(0))}
	}
	failed := func(n int, s int) []corev1.Pod {
		pods := running(n)
		pods[2] = gang(podOf("worker", 1, corev1.PodFailed, 1), n, at(s))
		return pods
	}
	var stored kubeflowv1.JobStatus
	for _, step := range []struct {
		name       string
		now        int
		pods       []corev1.Pod
		restarting bool
	}{
		{"running", 10, running(0), false},
		{"worker-1 exits 1: the first restart, at once", 20, failed(0, 20), true},
		{"the old pods gone", 21, nil, true},
		{"running again", 30, running(1), false},
		{"worker-1 exits 1 again: the restart waits for its back-off", 40, failed(1, 40), true},
		{"still waiting", 45, failed(1, 40), true},
	} {
		j := job(stored)
		st, _ := derive(t, j, step.pods, at(step.now))
		written := ToKubeflow(&st, &j)
		got := kubeflowCondition(written, kubeflowv1.JobRestarting)
		if (got != "") != step.restarting || step.restarting && !strings.HasPrefix(got, "True/PyTorchJobRestarting/") {
			t.Errorf("%s: Restarting = %q; want it True while restarting (%v)", step.name, got, step.restarting)
		}
		if last := written.Conditions[len(written.Conditions)-1]; step.restarting && (last.Type != kubeflowv1.JobRestarting || last.Status != corev1.ConditionTrue) {
			t.Errorf("%s: the State column shows %s %s; want Restarting", step.name, last.Type, last.Status)
		}
		back := render.FromKubeflowStatus(&written)
		if diff := cmp.Diff(ProjectKubeflow(&st, &j), ProjectKubeflow(&back, &j)); diff != "" {
			t.Errorf("%s: reading back what was written changes it (-written +again):\n%s", step.name, diff)
		}
		stored = written
	}
}

// TestKubeflowRunningMessageAsV181: a running job's Running message is worded as Kubeflow's
// operator (v1.8.1) words it, which names the namespace too except for a PyTorchJob with a Master
// (hack/parity found "TFJob tf-full is running." where v1.8.1 writes "TFJob parity/tf-full ...").
func TestKubeflowRunningMessageAsV181(t *testing.T) {
	meta := metav1.ObjectMeta{Name: "j", Namespace: "ns", UID: "job-uid"}
	running := func(types ...string) []corev1.Pod {
		var pods []corev1.Pod
		for _, typ := range types {
			pods = append(pods, podOf(typ, 0, corev1.PodRunning))
		}
		return pods
	}
	for _, c := range []struct {
		name string
		job  render.Job
		pods []corev1.Pod
		want string
	}{
		{"PyTorchJob with a Master", kubeflowJob(false, kubeflowv1.JobStatus{}),
			append(running("master", "worker"), podOf("worker", 1, corev1.PodRunning)), "PyTorchJob j is running."},
		{"PyTorchJob of Workers", render.FromPyTorchJob(&kubeflowv1.PyTorchJob{ObjectMeta: meta, Spec: kubeflowv1.PyTorchJobSpec{
			PyTorchReplicaSpecs: map[kubeflowv1.ReplicaType]*kubeflowv1.ReplicaSpec{"Worker": kubeflowTemplate(1, "pytorch")}}}),
			running("worker"), "PyTorchJob ns/j is running."},
		{"TFJob", render.FromTFJob(&kubeflowv1.TFJob{ObjectMeta: meta, Spec: kubeflowv1.TFJobSpec{
			TFReplicaSpecs: map[kubeflowv1.ReplicaType]*kubeflowv1.ReplicaSpec{"Chief": kubeflowTemplate(1, "tensorflow"), "Worker": kubeflowTemplate(1, "tensorflow")}}}),
			running("chief", "worker"), "TFJob ns/j is running."},
	} {
		st, _ := derive(t, c.job, c.pods, t0.Add(10*time.Second))
		written := ToKubeflow(&st, &c.job)
		var got string
		for _, cond := range written.Conditions {
			if cond.Type == kubeflowv1.JobRunning && cond.Status == corev1.ConditionTrue {
				got = cond.Message
			}
		}
		if got != c.want {
			t.Errorf("%s: Running message %q; want %q", c.name, got, c.want)
		}
		if back := render.FromKubeflowStatus(&written); cmp.Diff(ProjectKubeflow(&st, &c.job), ProjectKubeflow(&back, &c.job)) != "" {
			t.Errorf("%s: reading the written status back changes it", c.name)
		}
	}
}
