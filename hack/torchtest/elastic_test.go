//go:build torch

package torchtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/trainyard/trainyard/render"
)

// scaleCase is an elastic job scaled while it trains: from 2 pods to 3, then back to 2.
type scaleCase struct {
	file string
	// edit changes the manifest before it is read (a setting removed, another added).
	edit func(string) string
	// afterScaleDown is what follows the scale-down under a runtime.
	afterScaleDown func(rt runtime) scaleDownOutcome
	// skip, when set and it says why, skips the case under a runtime.
	skip func(rt runtime) string
	// withoutRestarts: the agents have no restart to spare, so a scale-up races them (see
	// survivorGaveUp).
	withoutRestarts bool
}

// scaleDownOutcome is what the scale-down leads to: the pods render deletes and creates again
// (the survivors' agents ended), each once, and the job's disruptionCount at the end (its
// backoffCount must stay 0: the user asked for the scale-down, render/scaledown.go); or, with
// stalls, the survivors' agents neither train nor end for stallWindow.
type scaleDownOutcome struct {
	restarted   []string
	disruptions int32
	stalls      bool
	why         string
}

// stallWindow is how long a stalled job is watched: torch 1.x's agents wait out their exit barrier
// (300 s, not settable from torchrun) before they end.
const stallWindow = 40 * time.Second

var survivors = []string{"scale-master-0", "scale-worker-0"}

// scaleHold is the file ptj-elastic-scale.yaml's pods train on while it exists in their working
// directory (train.py --hold).
const scaleHold = "scale-hold"

var scaleCases = map[string]scaleCase{
	"with maxRestarts 3": {
		file: "ptj-elastic-scale.yaml",
		afterScaleDown: func(rt runtime) scaleDownOutcome {
			if rt.leaverClosesRendezvous() {
				// Note: whichever survivor's agent ends first, the gang restarts, once: a worker
				// replaced alone would be refused by the closed rendezvous in the master's store
				// (render/scaledown.go). When it was replaced alone, the outcome depended on the
				// order the agents ended in, and CI failed on one.
				return scaleDownOutcome{restarted: survivors, disruptions: 1,
					why: "the stopped agent closed the rendezvous (pytorch/pytorch#150916): the first survivor to end restarted the gang, once, as the scale-down's consequence, a disruption"}
			}
			return scaleDownOutcome{why: "the survivors' agents restarted their workers in a world of 2"}
		},
	},
	"with maxRestarts 3 and restartScope Gang": {
		file: "ptj-elastic-scale.yaml",
		edit: func(s string) string {
			return strings.Replace(s, "  replicaSpecs:\n", "  runPolicy:\n    restartScope: Gang\n  replicaSpecs:\n", 1)
		},
		afterScaleDown: func(rt runtime) scaleDownOutcome {
			if rt.leaverClosesRendezvous() {
				return scaleDownOutcome{restarted: survivors, disruptions: 1, why: "the stopped agent closed the rendezvous: the first survivor to end restarted the gang, once, as the scale-down's consequence"}
			}
			return scaleDownOutcome{why: "the survivors' agents restarted their workers in a world of 2"}
		},
	},
	"without maxRestarts": {
		file:            "ptj-elastic-scale.yaml",
		edit:            func(s string) string { return strings.Replace(s, "    maxRestarts: 3\n", "", 1) },
		withoutRestarts: true,
		skip: func(rt runtime) string {
			if rt.leaverClosesRendezvous() {
				// Note: seen in CI on 7257807 after two passes: the master's agent restarts its
				// worker for the new member; worker-0's worker fails on the lost peer and its
				// agent, with no restart to spare, may see that before the membership change:
				// it ends and closes the rendezvous (RendezvousClosedError), so the world of 3
				// is never formed. A race of torch's, not a decision of render's.
				return "torch 2.4-2.7 without maxRestarts: a scale-up races the survivors' agents, which may end and close the rendezvous (the ElasticWithoutRestarts warning asks for maxRestarts)"
			}
			return ""
		},
		afterScaleDown: func(rt runtime) scaleDownOutcome {
			if strings.HasPrefix(rt.version, "1.") {
				return scaleDownOutcome{stalls: true, why: "the survivors' workers failed and their agents, with no restart to spare, wait at the exit barrier for the agent that left"}
			}
			return scaleDownOutcome{restarted: survivors, disruptions: 1, why: "the survivors' agents, with no restart to spare, ended: the gang was restarted as the scale-down's consequence"}
		},
	},
}

// TestAnElasticJobScalesWhileItTrains plays `kubectl scale` on an elastic job with real torchrun:
// the test stands in for the kubelet and the controller as in the restart test, and changes
// expectedReplicas as the scale subresource does. Scaled up, the new pod's agent must join and the
// training go on in a world of 3; scaled down, the highest worker is deleted (SIGTERM, as the
// kubelet stops a deleted pod's container) and the survivors must go on in a world of 2 and
// finish, with the pods and backoff the case names.
func TestAnElasticJobScalesWhileItTrains(t *testing.T) {
	underEachRuntime(t, scaleCases, 200, playScale)
}

func playScale(t *testing.T, tc scaleCase, rt runtime, workdir string, n int) {
	if tc.skip != nil {
		if why := tc.skip(rt); why != "" {
			t.Skip(why)
		}
	}
	data, err := os.ReadFile("testdata/" + tc.file)
	if err != nil {
		t.Fatal(err)
	}
	manifest := string(data)
	if tc.edit != nil {
		manifest = tc.edit(manifest)
	}
	scaled := func(expected int) render.Job {
		text := strings.Replace(manifest, "expectedReplicas: 2", "expectedReplicas: "+strconv.Itoa(expected), 1)
		job, err := render.ReadJob([]byte(text))
		if err != nil {
			t.Fatal(err)
		}
		job.UID = "5e1f0000-0000-4000-8000-00000000000b"
		return job
	}
	job := scaled(2)
	out, err := render.Render(render.Input{Job: job, Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	// Note: the pods train while the hold file exists (train.py --hold), until the scale-down.
	// With a fixed 40 steps the first pods finished before worker-1's agent joined when the
	// machine was busy (its torchrun took longer to start than the steps left), so the world of
	// 3 could not form, whatever render did.
	hold := filepath.Join(workdir, scaleHold)
	if err := os.WriteFile(hold, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(hold) })
	net, runs, start := launch(t, out, rt, workdir, n)
	var removed []*process
	deadline := time.Now().Add(jobTimeout)
	defer func() {
		logRunsOnFailure(t, runs)
		if t.Failed() {
			for _, p := range removed {
				t.Logf("%s (scaled away) output:\n%s", p.pod, p.output())
			}
		}
	}()
	began := time.Now()
	if !waitForWorld(t, runs, 2, 3, deadline) {
		t.Fatalf("2 pods did not train in a world of 2 within %s", jobTimeout)
	}
	t.Logf("2 pods train in a world of 2, %.1f s after the start", time.Since(began).Seconds())

	// Scale up to 3: render creates worker-1, nothing is deleted.
	job = rescale(t, &job, runs, scaled(3))
	dec := decide(t, &job, observe(runs))
	if len(dec.Decisions.Delete) > 0 || !slices.Equal(dec.Decisions.Create, []string{"scale-worker-1"}) {
		t.Fatalf("scaled to 3: render creates %v and deletes %v, want scale-worker-1 created alone", dec.Decisions.Create, dec.Decisions.Delete)
	}
	added := podNamed(t, dec, "scale-worker-1")
	net.addPod(t, added)
	net.writeResolution(t, dec)
	up := time.Now()
	start(added)
	for !waitForWorld(t, runs, 3, 3, earliest(deadline, time.Now().Add(time.Second))) {
		if tc.withoutRestarts {
			if name := survivorGaveUp(t, runs); name != "" {
				t.Skipf("torch %s without maxRestarts, scaled to 3: %s's worker failed on its peer's restart for worker-1 before its agent saw worker-1 waiting, and the agent, with no restart to spare, gave up (a race of torch's agents, which look every --monitor_interval, 5 s in 1.x, 0.1 s in 2.x; worker-1 did reach the rendezvous; the ElasticWithoutRestarts warning asks for maxRestarts)", rt.version, name)
			}
		}
		if !time.Now().Before(deadline) {
			t.Fatalf("scaled to 3: the pods did not train in a world of 3 within %s of the start", jobTimeout)
		}
	}
	t.Logf("scaled to 3: every pod trains in a world of 3, %.1f s after worker-1 started", time.Since(up).Seconds())

	// Scale down to 2: render deletes worker-1, the highest index; the kubelet stops it.
	job = rescale(t, &job, runs, scaled(2))
	dec = decide(t, &job, observe(runs))
	var deleted []string
	for _, d := range dec.Decisions.Delete {
		deleted = append(deleted, d.Name)
	}
	if !slices.Equal(deleted, []string{"scale-worker-1"}) || len(dec.Decisions.Create) > 0 {
		t.Fatalf("scaled to 2: render deletes %v and creates %v, want scale-worker-1 deleted alone", deleted, dec.Decisions.Create)
	}
	down := time.Now()
	net.terminatePod(t, "scale-worker-1", runs["scale-worker-1"].proc, 30*time.Second)
	removed = append(removed, runs["scale-worker-1"].proc)
	t.Logf("scaled to 2: worker-1 stopped %.1f s after its SIGTERM, exit %d", time.Since(down).Seconds(), exitCode(runs["scale-worker-1"].proc))
	delete(runs, "scale-worker-1")
	// Released only once worker-1 is stopped: the world of 3 cannot finish without it, and the
	// survivors' training in a world of 2 ends after its 40 steps.
	if err := os.Remove(hold); err != nil {
		t.Fatal(err)
	}
	want := tc.afterScaleDown(rt)
	if want.stalls {
		steps := map[string]int{}
		time.Sleep(5 * time.Second)
		for name, r := range runs {
			steps[name] = len(r.proc.tagged(t, "TRAINYARD_STEP "))
		}
		time.Sleep(stallWindow)
		for name, r := range runs {
			select {
			case <-r.proc.done:
				t.Fatalf("%s ended %.1f s after the scale-down; want it stalled", name, time.Since(down).Seconds())
			default:
			}
			if n := len(r.proc.tagged(t, "TRAINYARD_STEP ")); n != steps[name] {
				t.Fatalf("%s trained on after the scale-down (%d step lines, then %d); want it stalled", name, steps[name], n)
			}
		}
		t.Logf("scaled to 2: the survivors stalled %.0f s without training or ending: %s", stallWindow.Seconds(), want.why)
		return
	}

	restarted, backoff := playController(t, &job, runs, net, start, down, "the scale-down", deadline, nil)
	disruptions := job.Status.DisruptionCount
	for name, r := range runs {
		select {
		case <-r.proc.done:
		case <-time.After(time.Until(deadline)):
			t.Fatalf("%s still runs after the job succeeded", name)
		}
	}
	slices.Sort(restarted)
	if diff := cmp.Diff(want.restarted, restarted); diff != "" {
		t.Errorf("pods restarted after the scale-down (-want +got):\n%s", diff)
	}
	if backoff != 0 || disruptions != want.disruptions {
		t.Errorf("backoffCount %d and disruptionCount %d after the scale-down, want 0 and %d", backoff, disruptions, want.disruptions)
	}
	t.Logf("after the scale-down (backoffCount %d, disruptionCount %d): %s", backoff, disruptions, want.why)
	if len(runs) != 2 {
		t.Errorf("%d pods after the scale-down, want 2", len(runs))
	}
	checkTheWorldFinished(t, runs, nil)
}

// survivorGaveUp names the first pod whose torchrun agent reported its worker failed (torch's
// "failed (exitcode: N) local_rank: ..." line, printed only when a worker ends non-zero on its
// own, not when its agent stops it for a restart), or "". Note: without restarts to spare, a
// scale-up races the survivors' agents: the first to see the new pod waiting restarts its worker,
// the other's worker fails on the lost peer, and unless its agent looked at the rendezvous
// first, it gives up (torch 1.13 waits at its exit barrier, 2.x ends and closes the rendezvous).
// Seen on torch 1.13 under load (its agents look every 5 s, and a busy machine spreads their
// phases): worker-1 trained as rank 1 in a world of 2 beside worker-0, the master's worker failed
// with "Connection closed by peer". A worker fails so only once the new pod is in the
// rendezvous: a pod render left unable to join makes none fail, and the test times out.
func survivorGaveUp(t *testing.T, runs map[string]*podRun) string {
	for _, name := range survivors {
		if r := runs[name]; r != nil && strings.Contains(r.proc.output(), "failed (exitcode: ") {
			return name
		}
	}
	return ""
}

func earliest(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// leaverClosesRendezvous reports whether the runtime's torchrun agent closes the rendezvous for
// every agent when it is stopped by a signal, as a scaled-away pod's is: the torch 2.x releases
// between pytorch/pytorch#117066 and #152525 do (local_elastic_agent.py's _shutdown calls the
// rendezvous handler's shutdown; pytorch/pytorch#150916), Debian's 2.6 among them; torch 1.x does not.
func (r runtime) leaverClosesRendezvous() bool {
	data, err := os.ReadFile(filepath.Join(r.root, "/usr/lib/python3/dist-packages/torch/distributed/elastic/agent/server/local_elastic_agent.py"))
	return err == nil && strings.Contains(string(data), "self._rdzv_handler.shutdown()")
}

// rescale is next, the job with its new expectedReplicas, carrying the status the controller
// would have written for the pods as they run.
func rescale(t *testing.T, job *render.Job, runs map[string]*podRun, next render.Job) render.Job {
	t.Helper()
	decide(t, job, observe(runs))
	next.Status = job.Status
	return next
}

// waitForWorld waits until every pod's process trains in a world of world, at step step or later,
// or the deadline.
func waitForWorld(t *testing.T, runs map[string]*podRun, world, step int, deadline time.Time) bool {
	t.Helper()
	return waitForEvery(runs, deadline, func(p *process) bool {
		s, w := lastStepAndWorld(t, p)
		return w == world && s >= step
	})
}

// lastStepAndWorld is the last TRAINYARD_STEP line's step and world size, or -1, -1.
func lastStepAndWorld(t *testing.T, p *process) (int, int) {
	step, world := -1, -1
	for _, line := range p.tagged(t, "TRAINYARD_STEP ") {
		var rank, s, w int
		if _, err := fmt.Sscanf(line, "%d %d %d", &rank, &s, &w); err == nil {
			step, world = s, w
		}
	}
	return step, world
}

// terminatePod stops a deleted pod as the kubelet does: SIGTERM to every process in the pod, then
// SIGKILL once the grace period has passed.
func (n *network) terminatePod(t *testing.T, name string, p *process, grace time.Duration) {
	out, err := exec.Command("ip", "netns", "pids", n.pods[name].netns).Output()
	if err != nil {
		t.Fatalf("ip netns pids %s: %v", n.pods[name].netns, err)
	}
	for _, field := range strings.Fields(string(out)) {
		if pid, err := strconv.Atoi(field); err == nil {
			_ = syscall.Kill(pid, syscall.SIGTERM)
		}
	}
	select {
	case <-p.done:
	case <-time.After(grace):
		n.killPod(t, name)
		<-p.done
	}
}
