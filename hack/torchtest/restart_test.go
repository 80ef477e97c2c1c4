//go:build torch

package torchtest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
	"github.com/trainyard/trainyard/render"
)

// restartVictim is the replica whose container dies mid-training, unless a case names another.
const restartVictim = "restart-worker-1"

// restartCase is a torchrun job and what render must restart when its worker-1 dies.
type restartCase struct {
	file string
	// victim is the pod killed, restartVictim when empty.
	victim string
	// restarted are the pods render deletes and creates again, each once.
	restarted []string
	// survivorsRestartWorkers: the pods not restarted see their torchrun agents restart their
	// workers to take the new member in: their training starts again (step 0 printed twice).
	// Note: TORCHELASTIC_RESTART_COUNT does not say it. The agent counts a restart only when its
	// own worker failed first; when it sees the new member waiting before that, it restarts its
	// workers as a membership change, which torch does not count (elastic/agent/server/api.py,
	// "membership changes do not count as retries"), and the count stays 0. Which comes first is
	// a race.
	survivorsRestartWorkers bool
}

var restartCases = map[string]restartCase{
	"with maxRestarts 3, worker-1 alone: the survivors' agents take the new one in": {
		file: "ptj-torchrun-restart.yaml", restarted: []string{restartVictim}, survivorsRestartWorkers: true,
	},
	"with maxRestarts 3, the master killed: it hosts the rendezvous store, the gang, counted once": {
		file: "ptj-torchrun-restart.yaml", victim: "restart-master-0", restarted: []string{"restart-master-0", "restart-worker-0", restartVictim},
	},
	"without maxRestarts, the gang, counted once: the survivors' agents may not restart": {
		file: "ptj-torchrun-restart-gang.yaml", restarted: []string{"restart-master-0", "restart-worker-0", restartVictim},
	},
}

// TestAFailedReplicaRecoversAsRenderDecides plays render's restart decisions on real processes:
// the test stands in for the kubelet (a pod's processes run and end) and for the controller (it
// reports each pod's end to render and carries out render's deletions and creations, nothing
// else). A torchrun job's worker is killed mid-training, as an out-of-memory kill or a crash would
// end its container. What render restarts must be what recovers: the job then finishes with no
// other pod ended and every rank training to the end, and the backoff counted once.
func TestAFailedReplicaRecoversAsRenderDecides(t *testing.T) {
	underEachRuntime(t, restartCases, 100, playRestart)
}

// podRun is one pod as the test's kubelet runs it: its latest process, the pod it started from
// and whether render has been told of the process's end.
type podRun struct {
	pod      *corev1.Pod
	proc     *process
	starts   int
	reported bool
	// ended are its earlier processes, for the log of a failed run.
	ended []*process
}

func playRestart(t *testing.T, tc restartCase, rt runtime, workdir string, n int) {
	job := readJob(t, tc.file)
	out := renderJob(t, tc.file)
	net, runs, start := launch(t, out, rt, workdir, n)
	deadline := time.Now().Add(jobTimeout)
	defer logRunsOnFailure(t, runs)

	if !waitForSteps(t, runs, 3, deadline) {
		t.Fatalf("training did not reach step 3 on every pod within %s", jobTimeout)
	}
	began := time.Now()
	victim := tc.victim
	if victim == "" {
		victim = restartVictim
	}
	net.killPod(t, victim)
	<-runs[victim].proc.done
	t.Logf("%s killed at step 3 or later", victim)

	restarted, backoff := playController(t, &job, runs, net, start, began, "the kill", deadline, func(round int, dec *render.Output) {
		if round > 0 {
			return
		}
		var deleted []string
		for _, d := range dec.Decisions.Delete {
			deleted = append(deleted, d.Name)
		}
		slices.Sort(deleted)
		if diff := cmp.Diff(tc.restarted, deleted); diff != "" {
			t.Fatalf("render's answer to the killed worker: delete (-want +got):\n%s", diff)
		}
	})
	// The master has succeeded; the workers end beside it (their last step is the same barrier).
	for name, r := range runs {
		select {
		case <-r.proc.done:
		case <-time.After(time.Until(deadline)):
			t.Fatalf("%s still runs after the job succeeded", name)
		}
	}

	slices.Sort(restarted)
	if diff := cmp.Diff(tc.restarted, restarted); diff != "" {
		t.Errorf("pods restarted (-want +got):\n%s", diff)
	}
	if backoff != 1 {
		t.Errorf("backoffCount %d after one failure, want 1", backoff)
	}
	checkTheWorldFinished(t, runs, func(name string, trainings int) {
		if tc.survivorsRestartWorkers && !slices.Contains(tc.restarted, name) && trainings < 2 {
			t.Errorf("%s: its training started %d times in its pod: its agent did not restart its workers for the new member", name, trainings)
		}
	})
}

// checkTheWorldFinished checks that every pod's last process exited 0 with one result, all in
// one world of the pods, ranks 0 to n-1, and logs each; perPod, when set, checks more of each pod
// from how many times its training started in its last process.
func checkTheWorldFinished(t *testing.T, runs map[string]*podRun, perPod func(name string, trainings int)) {
	t.Helper()
	checkTheRanksFinished(t, runs, 1, perPod)
}

// checkTheRanksFinished is checkTheWorldFinished for pods of perPodRanks ranks each (torchrun's
// procPerNode): each pod's last process reports that many results, the world their total.
func checkTheRanksFinished(t *testing.T, runs map[string]*podRun, perPodRanks int, perPod func(name string, trainings int)) {
	t.Helper()
	n := len(runs) * perPodRanks
	var ranks []int
	for name, r := range runs {
		if code := exitCode(r.proc); code != 0 {
			t.Errorf("%s's last process exited %d", name, code)
			continue
		}
		got := r.proc.results(t)
		if len(got) != perPodRanks {
			t.Errorf("%s: %d results, want %d", name, len(got), perPodRanks)
			continue
		}
		for _, res := range got {
			ranks = append(ranks, res.Rank)
			if res.World != n || res.Sum != n*(n-1)/2 {
				t.Errorf("%s: world %d, sum %d; want %d, %d", name, res.World, res.Sum, n, n*(n-1)/2)
			}
		}
		trainings := trainingStarts(t, r.proc)
		if perPod != nil {
			perPod(name, trainings)
		}
		t.Logf("%s: ranks from %d, pod started %d times, training started %d times in the last, TORCHELASTIC_RESTART_COUNT %s", name, got[0].Rank, r.starts, trainings, str(got[0].RestartCount))
	}
	slices.Sort(ranks)
	want := make([]int, n)
	for i := range want {
		want[i] = i
	}
	if diff := cmp.Diff(want, ranks); diff != "" {
		t.Errorf("ranks (-want +got):\n%s", diff)
	}
}

// launch gives every pod of out its network namespace and name resolution, and starts them as
// the kubelet would; start starts a pod again (or a new one) under its name.
func launch(t *testing.T, out *render.Output, rt runtime, workdir string, n int) (*network, map[string]*podRun, func(*corev1.Pod)) {
	t.Helper()
	net := newNetwork(t, fmt.Sprintf("trainyard-torch-%d-%d", os.Getpid(), n))
	for _, pod := range out.Pods {
		net.addPod(t, pod)
	}
	net.writeResolution(t, out)
	runs := map[string]*podRun{}
	start := func(pod *corev1.Pod) {
		r := runs[pod.Name]
		if r == nil {
			r = &podRun{}
			runs[pod.Name] = r
		}
		if r.proc != nil {
			r.ended = append(r.ended, r.proc)
		}
		r.pod, r.proc, r.reported = pod, net.start(t, pod, rt, workdir), false
		r.starts++
	}
	for _, pod := range out.Pods {
		start(pod)
	}
	return net, runs, start
}

// logRunsOnFailure logs every process of every pod when the test failed.
func logRunsOnFailure(t *testing.T, runs map[string]*podRun) {
	if !t.Failed() {
		return
	}
	for name, r := range runs {
		for i, p := range append(r.ended, r.proc) {
			t.Logf("%s, process %d of %d, output:\n%s", name, i+1, r.starts, p.output())
		}
	}
}

// playController stands in for the controller until render says the job finished: it reports
// every pod's end to render, carries out its deletions (the kubelet stopping each pod) and
// creations, and waits for the next end, or for when render asked to run again (a restart's
// back-off). each, when set, sees every answer of render's to what it observed, numbered from 0.
// It returns the pods deleted, in order, and the job's last backoffCount; since and what word its
// log line ("job Succeeded 18.2 s after the kill").
func playController(t *testing.T, job *render.Job, runs map[string]*podRun, net *network, start func(*corev1.Pod),
	since time.Time, what string, deadline time.Time, each func(round int, dec *render.Output)) (restarted []string, backoff int32) {
	t.Helper()
	for round := 0; ; round++ {
		observed := observe(runs)
		dec := decide(t, job, observed)
		if each != nil {
			each(round, dec)
		}
		backoff = dec.Decisions.BackoffCount
		if p := dec.Decisions.Phase; p == batch.JobSucceeded || p == batch.JobFailed {
			t.Logf("job %s %.1f s after %s, backoffCount %d", p, time.Since(since).Seconds(), what, backoff)
			if p != batch.JobSucceeded {
				t.Fatalf("the job failed: %s: %s", dec.Decisions.Reason, dec.Decisions.Message)
			}
			return restarted, backoff
		}
		for _, d := range dec.Decisions.Delete {
			net.killPod(t, d.Name)
			<-runs[d.Name].proc.done
			restarted = append(restarted, d.Name)
			observed = slices.DeleteFunc(observed, func(p *corev1.Pod) bool { return p.Name == d.Name })
		}
		if len(dec.Decisions.Delete) > 0 {
			dec = decide(t, job, observed)
			for _, name := range dec.Decisions.Create {
				start(podNamed(t, dec, name))
			}
		}
		// Note: the controller requeues the job when render asks it to, as for a restart held by
		// its back-off, with nothing else changing meanwhile.
		wake := deadline
		if d := dec.Decisions.RequeueAfter; d != nil && time.Now().Add(d.Duration).Before(wake) {
			wake = time.Now().Add(d.Duration)
		}
		if !waitForAnEnd(runs, wake) && !time.Now().Before(deadline) {
			t.Fatalf("no pod ended within %s of the start and the job did not finish", jobTimeout)
		}
	}
}

// observe is each pod as the API server would show it: Running while its process runs, then
// Succeeded or Failed with the training container's exit code; the container's startedAt and
// finishedAt are the process's start and end, in the kubelet's whole seconds. Each start is a new
// pod (UID).
func observe(runs map[string]*podRun) []*corev1.Pod {
	var out []*corev1.Pod
	for name, r := range runs {
		p := r.pod.DeepCopy()
		p.UID = types.UID(fmt.Sprintf("%s-%d", name, r.starts))
		status := corev1.ContainerStatus{Name: "pytorch"}
		started := kubeletTime(r.proc.started)
		select {
		case <-r.proc.done:
			r.reported = true
			code := exitCode(r.proc)
			status.State.Terminated = &corev1.ContainerStateTerminated{ExitCode: code, StartedAt: started, FinishedAt: kubeletTime(r.proc.finished)}
			p.Status.Phase = corev1.PodFailed
			if code == 0 {
				p.Status.Phase = corev1.PodSucceeded
				status.State.Terminated.Reason = "Completed"
			} else {
				status.State.Terminated.Reason = "Error"
				if trainingContainerOf(p).TerminationMessagePolicy == corev1.TerminationMessageFallbackToLogsOnError {
					status.State.Terminated.Message = logTail(r.proc.output())
				}
			}
		default:
			status.State.Running = &corev1.ContainerStateRunning{StartedAt: started}
			p.Status.Phase = corev1.PodRunning
		}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{status}
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// logTail is what the kubelet (v1.37, kuberuntime's readLastStringFromContainerLogs) makes a
// failed container's termination message of under terminationMessagePolicy
// FallbackToLogsOnError, when the program wrote none: the log's last 80 lines, of which the last
// 2,048 bytes. The process's output stands for the container's log (stdout and stderr, in order).
func logTail(log string) string {
	const maxLines, maxBytes = 80, 2048
	lines := strings.SplitAfter(log, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	tail := strings.Join(lines[max(0, len(lines)-maxLines):], "")
	return tail[max(0, len(tail)-maxBytes):]
}

// trainingContainerOf is the pod's training container: the one named pytorch, as render names it.
func trainingContainerOf(p *corev1.Pod) *corev1.Container {
	for i := range p.Spec.Containers {
		if p.Spec.Containers[i].Name == "pytorch" {
			return &p.Spec.Containers[i]
		}
	}
	return &corev1.Container{}
}

// kubeletTime is t as a pod's status carries it: RFC 3339, whole seconds.
func kubeletTime(t time.Time) metav1.Time {
	return metav1.NewTime(t).Rfc3339Copy()
}

// decide renders the job for the pods observed and carries its decisions into the job's status,
// as the controller's status write would, for the next round to build on.
func decide(t *testing.T, job *render.Job, pods []*corev1.Pod) *render.Output {
	t.Helper()
	out, err := render.Render(render.Input{Job: *job, Pods: pods, Now: time.Now(), OnlyPodsToCreate: true})
	if err != nil {
		t.Fatal(err)
	}
	d := out.Decisions
	st := &job.Status
	st.Phase, st.BackoffCount, st.DisruptionCount, st.GangRestarts = d.Phase, d.BackoffCount, d.DisruptionCount, d.GangRestarts
	st.StartTime, st.CompletionTime, st.LastScaleDownTime = d.StartTime, d.CompletionTime, d.LastScaleDownTime
	return out
}

func podNamed(t *testing.T, out *render.Output, name string) *corev1.Pod {
	t.Helper()
	for _, p := range out.Pods {
		if p.Name == name {
			return p
		}
	}
	t.Fatalf("render decided to create %s but did not render it", name)
	return nil
}

// waitForAnEnd waits until a process render has not been told of ends (true), or the deadline.
func waitForAnEnd(runs map[string]*podRun, deadline time.Time) bool {
	for time.Now().Before(deadline) {
		for _, r := range runs {
			select {
			case <-r.proc.done:
				if !r.reported {
					return true
				}
			default:
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}

// waitForSteps waits until every pod's process has printed training step step, or the deadline.
func waitForSteps(t *testing.T, runs map[string]*podRun, step int, deadline time.Time) bool {
	t.Helper()
	return waitForEvery(runs, deadline, func(p *process) bool { return lastStep(t, p) >= step })
}

// waitForEvery waits until ok holds for every pod's current process, or the deadline.
func waitForEvery(runs map[string]*podRun, deadline time.Time, ok func(*process) bool) bool {
	for time.Now().Before(deadline) {
		all := true
		for _, r := range runs {
			if !ok(r.proc) {
				all = false
				break
			}
		}
		if all {
			return true
		}
		time.Sleep(100 * time.Millisecond)
	}
	return false
}

// trainingStarts counts the times the process's training script started: each start prints
// step 0 first.
func trainingStarts(t *testing.T, p *process) int {
	n := 0
	for _, line := range p.tagged(t, "TRAINYARD_STEP ") {
		var rank, step int
		if _, err := fmt.Sscanf(line, "%d %d", &rank, &step); err == nil && step == 0 {
			n++
		}
	}
	return n
}

// lastStep is the last TRAINYARD_STEP the process printed, or -1.
func lastStep(t *testing.T, p *process) int {
	last := -1
	for _, line := range p.tagged(t, "TRAINYARD_STEP ") {
		var rank, step int
		if _, err := fmt.Sscanf(line, "%d %d", &rank, &step); err == nil && step > last {
			last = step
		}
	}
	return last
}

// exitCode is the code a container runtime reports for the process: its exit status, or 128 plus
// the signal that ended it.
func exitCode(p *process) int32 {
	if p.err == nil {
		return 0
	}
	var exit *exec.ExitError
	if errors.As(p.err, &exit) {
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int32(ws.Signal())
		}
		return int32(exit.ExitCode())
	}
	return -1
}
