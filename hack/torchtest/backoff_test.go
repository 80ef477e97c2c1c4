//go:build torch

package torchtest

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trainyard/trainyard/render"
)

// backoffCase is a job whose worker's first starts fail, and the back-off render must play.
type backoffCase struct {
	file string
	// failing is the pod whose first fails starts exit 1.
	failing string
	fails   int
	// skip, when set and it says why, skips the case under a runtime.
	skip func(rt runtime) string
	// quoted is how each held restart's message must quote the failure; lastWordsQuoted unless set.
	quoted *regexp.Regexp
	// ranksPerPod is torchrun's procPerNode, 1 unless set.
	ranksPerPod int
}

// torch1ExitBarrier skips a case of torchrun without maxRestarts under torch 1.x. Seen: no pod
// ended within 4 minutes. torch 1.13's agent, its worker failed and no restart to spare, waits at
// the exit barrier (300 s) for the master's agent, whose worker waits for the failed rank (api.py
// _invoke_run); 2.x returns at once.
func torch1ExitBarrier(rt runtime) string {
	if strings.HasPrefix(rt.version, "1.") {
		return "torch 1.x under torchrun without maxRestarts: a failed rank's agent waits 300 s at its exit barrier before its container ends"
	}
	return ""
}

var backoffCases = map[string]backoffCase{
	"a worker failing twice: the gang restarts at once, then after 10 s": {
		file: "ptj-backoff.yaml", failing: "backoff-worker-0", fails: 2,
	},
	"under torchrun without maxRestarts, a worker failing twice: the same, its rank's exception quoted past torchrun's summary": {
		file: "ptj-torchrun-backoff.yaml", failing: "backoff-worker-0", fails: 2,
		skip: torch1ExitBarrier,
	},
	"under torchrun without maxRestarts, 4 local ranks failing twice: the same, quoting torchrun's root cause": {
		file: "ptj-torchrun-backoff-4-ranks.yaml", failing: "backoff-worker-0", fails: 2,
		skip: torch1ExitBarrier, ranksPerPod: 4,
		// torch 2.6's traceback of torchrun itself and its summary take 1.7 of the kubelet's
		// 2 KiB: 4 ranks' tracebacks and torchrun's log lines before them do not fit.
		quoted: regexp.MustCompile(`exited with code 1 after logging "torchrun: rank [0-9]+ \(local_rank: [0-3]\) failed first with exitcode 1"`),
	},
}

// backoffSlack is how much later than its back-off's end a held restart may come: the harness
// wakes render when it asked to run again, then stops the old gang and starts the new one.
const backoffSlack = 3 * time.Second

// TestARestartWaitsForItsBackoff plays render's restart back-off (render/backoff.go) on real
// processes, the test standing in for the kubelet and the controller as in the restart test; the
// pods' containers report the processes' start and end as their startedAt and finishedAt. A
// worker's first starts exit 1: the first restart must come at once, the second no sooner than
// RestartBackoffBase after the failed container's finishedAt (the job Restarting meanwhile, its
// other pod left running), then the job must succeed with backoffCount the restarts made.
func TestARestartWaitsForItsBackoff(t *testing.T) {
	underEachRuntime(t, backoffCases, 300, playBackoff)
}

func playBackoff(t *testing.T, tc backoffCase, rt runtime, workdir string, n int) {
	if tc.skip != nil {
		if why := tc.skip(rt); why != "" {
			t.Skip(why)
		}
	}
	// The worker's starts are counted in the shared working directory, under its hostname.
	counts, err := filepath.Glob(filepath.Join(workdir, "fail-count-"+tc.failing+"*"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range counts {
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
	}
	quoted := lastWordsQuoted
	if tc.quoted != nil {
		quoted = tc.quoted
	}
	job := readJob(t, tc.file)
	out := renderJob(t, tc.file)
	net, runs, start := launch(t, out, rt, workdir, n)
	deadline := time.Now().Add(jobTimeout)
	defer logRunsOnFailure(t, runs)
	began := time.Now()

	held := 0
	restarted, backoff := playController(t, &job, runs, net, start, began, "the start", deadline, func(round int, dec *render.Output) {
		if at := dec.Decisions.RestartAt; at != nil {
			if held++; held == 1 {
				t.Logf("held: %s", dec.Decisions.Message)
			}
			if len(dec.Decisions.Delete) > 0 || dec.Decisions.Reason != "Restarting" || !strings.Contains(dec.Decisions.Message, at.UTC().Format(time.RFC3339)) {
				t.Errorf("a held restart: deletes %d pods, reason %q, message %q; want none deleted, Restarting, the message naming %s",
					len(dec.Decisions.Delete), dec.Decisions.Reason, dec.Decisions.Message, at.UTC().Format(time.RFC3339))
			}
			// The failed container's log is gone with its pod; the kubelet's copy of its tail
			// (FallbackToLogsOnError, which render sets) names the Python exception it died of.
			if !quoted.MatchString(dec.Decisions.Message) {
				t.Errorf("a held restart's message %q does not quote why the failed start ended (%s)", dec.Decisions.Message, quoted)
			}
			for name, r := range runs {
				if name != tc.failing && isDone(r.proc) {
					t.Errorf("%s ended while the restart waited; want it left running", name)
				}
			}
		}
	})
	for name, r := range runs {
		select {
		case <-r.proc.done:
		case <-time.After(time.Until(deadline)):
			t.Fatalf("%s still runs after the job succeeded", name)
		}
	}

	f := runs[tc.failing]
	procs := append(slices.Clone(f.ended), f.proc)
	if len(procs) != tc.fails+1 {
		t.Fatalf("%s started %d times, want %d", tc.failing, len(procs), tc.fails+1)
	}
	for i := 1; i < len(procs); i++ {
		ended := kubeletTime(procs[i-1].finished).Time
		waited := procs[i].started.Sub(ended)
		want := restartBackoffAfter(int32(i - 1))
		t.Logf("restart %d: %s started again %.1f s after its failed container's finishedAt (back-off %s)", i, tc.failing, waited.Seconds(), want)
		if waited < want || waited > want+backoffSlack {
			t.Errorf("restart %d came %.1f s after the failure's finishedAt, want %s to %s", i, waited.Seconds(), want, want+backoffSlack)
		}
	}
	if held == 0 {
		t.Errorf("render never held a restart (no restartAt in any answer)")
	}
	if want := int32(tc.fails); backoff != want {
		t.Errorf("backoffCount %d after %d failures, want %d", backoff, tc.fails, want)
	}
	// Every restart is the gang's: plain PyTorch's ranks cannot rejoin a formed group.
	if len(restarted) != 2*tc.fails {
		t.Errorf("pods restarted %v, want the gang of 2 each time, %d times", restarted, tc.fails)
	}
	checkTheRanksFinished(t, runs, max(tc.ranksPerPod, 1), nil)
}

// lastWordsQuoted is how the message of a restart of train.py --fail-first quotes its exception.
var lastWordsQuoted = regexp.MustCompile(`exited with code 1 after logging "RuntimeError: start [0-9]+ fails as asked \(--fail-first\)"`)

// restartBackoffAfter is the wait of a restart after restarts counted ones: none for the first,
// then render.RestartBackoffBase doubling.
func restartBackoffAfter(restarts int32) time.Duration {
	if restarts == 0 {
		return 0
	}
	return render.RestartBackoffBase << (restarts - 1)
}

func isDone(p *process) bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}
