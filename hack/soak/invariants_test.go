package main

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
)

// The invariants are checks: each must fire on a world that breaks it, and stay quiet on one that
// keeps it. The worlds are built by hand, as the watches would have recorded them.

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// pyTorchSpec is a PyTorch job of a master and n workers, every type under policy.
func pyTorchSpec(workers int32, policy batch.RestartPolicy) jobSpec {
	s := jobSpec{replicas: map[string]int32{}, policy: map[string]batch.RestartPolicy{}, leader: "master",
		backoffLimit: ptrTo(int32(3)), cleanUp: batch.CleanUpPolicyUnfinished}
	s.add("master", 1, policy, "")
	if workers > 0 {
		s.add("worker", workers, policy, "")
	}
	return s
}

type worldBuilder struct {
	w   *world
	job *jobRecord
}

func aJob(spec jobSpec, phase, reason string) *worldBuilder {
	w := newWorld()
	j := &jobRecord{kind: kindPTJ, name: "j", uid: "job-uid", created: t0, spec: spec, st: jobStatus{phase: phase, reason: reason},
		specChanged: t0, pauseChanged: t0}
	if terminalPhase(phase) {
		j.terminal, j.terminalAt, j.st.completion = phase, t0.Add(time.Minute), t0.Add(time.Minute)
	}
	w.jobs[j.uid] = j
	return &worldBuilder{w: w, job: j}
}

// pod adds a pod of the job, created at offset from t0; code < 0 means it still runs.
func (b *worldBuilder) pod(typ string, index int, created time.Duration, code int32) *podRecord {
	p := &podRecord{uid: types.UID(fmt.Sprintf("%s-%d-%s", typ, index, created)), jobUID: b.job.uid, name: "j-" + typ + "-" + string(rune('0'+index)),
		typ: typ, index: index, created: t0.Add(created), phase: corev1.PodRunning}
	if code >= 0 {
		p.phase, p.exitCode, p.terminatedAt = corev1.PodSucceeded, &code, t0.Add(created+10*time.Second)
		if code != 0 {
			p.phase = corev1.PodFailed
		}
	}
	b.w.pods[p.uid] = p
	return p
}

func (b *worldBuilder) fired(now time.Time) []string {
	c := newChecker(b.w, 45*time.Second, time.Minute, func(string, ...any) {})
	c.round(now, operatorState{up: true, readySince: t0})
	var out []string
	for _, v := range c.all() {
		out = append(out, v.invariant)
	}
	return out
}

func TestInvariants(t *testing.T) {
	later := t0.Add(10 * time.Minute)
	cases := map[string]struct {
		build func() *worldBuilder
		want  []string
		at    time.Time // when the checker looks; later unless set
	}{
		"a job Succeeded after its master exited 0 breaks nothing": {
			build: func() *worldBuilder {
				b := aJob(pyTorchSpec(1, batch.RestartPolicyNever), "Succeeded", "Succeeded")
				b.pod("master", 0, 0, 0)
				b.pod("worker", 0, 0, 0)
				return b
			},
		},
		"a job Succeeded while only a worker succeeded is caught": {
			build: func() *worldBuilder {
				b := aJob(pyTorchSpec(1, batch.RestartPolicyNever), "Succeeded", "Succeeded")
				b.pod("master", 0, 0, 137).gone = t0.Add(time.Minute)
				b.pod("worker", 0, 0, 0)
				return b
			},
			want: []string{invSucceeded},
		},
		"ReplicaFailed under OnFailure, whose failures all restart, is caught": {
			build: func() *worldBuilder {
				b := aJob(pyTorchSpec(1, batch.RestartPolicyOnFailure), "Failed", batch.ReasonFailed)
				b.pod("worker", 0, 0, 1).gone = t0.Add(time.Minute)
				return b
			},
			want: []string{invFailed},
		},
		"ReplicaFailed after a worker exited 1 under ExitCode is right": {
			build: func() *worldBuilder {
				b := aJob(pyTorchSpec(1, batch.RestartPolicyExitCode), "Failed", batch.ReasonFailed)
				b.pod("worker", 0, 0, 1).gone = t0.Add(time.Minute)
				return b
			},
		},
		"BackoffLimitExceeded with fewer restartable ends than the limit is caught": {
			build: func() *worldBuilder {
				b := aJob(pyTorchSpec(1, batch.RestartPolicyOnFailure), "Failed", batch.ReasonBackoffLimitExceeded)
				b.pod("worker", 0, 0, 137).gone = t0.Add(time.Minute)
				b.pod("worker", 0, 20*time.Second, 137).gone = t0.Add(time.Minute)
				return b
			},
			want: []string{invFailed},
		},
		"a finished job that creates a pod afterwards is caught": {
			build: func() *worldBuilder {
				b := aJob(pyTorchSpec(1, batch.RestartPolicyNever), "Failed", batch.ReasonFailed)
				b.pod("worker", 0, 0, 2).gone = t0.Add(time.Minute)
				b.pod("master", 0, 0, 0)
				b.pod("worker", 0, 2*time.Minute, -1).gone = t0.Add(3 * time.Minute)
				return b
			},
			want: []string{invNoPodAfterOutcome},
		},
		"a finished job with clean-up Unfinished that keeps a running pod is caught": {
			build: func() *worldBuilder {
				b := aJob(pyTorchSpec(1, batch.RestartPolicyNever), "Succeeded", "Succeeded")
				b.pod("master", 0, 0, 0)
				b.pod("worker", 0, 0, -1)
				return b
			},
			want: []string{invCleanUp},
		},
		"a running job whose master succeeded long ago is caught": {
			build: func() *worldBuilder {
				b := aJob(pyTorchSpec(1, batch.RestartPolicyNever), "Running", "")
				b.pod("master", 0, 0, 0)
				b.pod("worker", 0, 0, -1)
				return b
			},
			want: []string{invOutcomeReached},
		},
		"a failed worker that OnFailure restarts but that stays is caught": {
			build: func() *worldBuilder {
				b := aJob(pyTorchSpec(1, batch.RestartPolicyOnFailure), "Running", "")
				b.pod("master", 0, 0, -1)
				b.pod("worker", 0, 0, 1)
				return b
			},
			want: []string{invRestartDone},
		},
		"a failed worker whose restart waits its back-off (backoffCount 4: 80 s) is not caught": {
			build: func() *worldBuilder {
				b := aJob(pyTorchSpec(1, batch.RestartPolicyOnFailure), "Pending", batch.ReasonRestarting)
				b.job.st.backoffCount = 4
				b.job.spec.backoffLimit = ptrTo(int32(10))
				b.pod("master", 0, 0, -1)
				b.pod("worker", 0, 0, 1) // ended at 10 s
				return b
			},
			at: t0.Add(10*time.Second + 80*time.Second + 44*time.Second),
		},
		"a failed worker still there after its back-off and the grace is caught": {
			build: func() *worldBuilder {
				b := aJob(pyTorchSpec(1, batch.RestartPolicyOnFailure), "Pending", batch.ReasonRestarting)
				b.job.st.backoffCount = 4
				b.job.spec.backoffLimit = ptrTo(int32(10))
				b.pod("master", 0, 0, -1)
				b.pod("worker", 0, 0, 1)
				return b
			},
			at:   t0.Add(10*time.Second + 80*time.Second + 46*time.Second),
			want: []string{invRestartDone},
		},
		"a replica whose pod went and never came back is caught": {
			build: func() *worldBuilder {
				b := aJob(pyTorchSpec(2, batch.RestartPolicyNever), "Running", "")
				b.pod("master", 0, 0, -1)
				b.pod("worker", 0, 0, -1)
				b.pod("worker", 1, 0, -1).gone = t0.Add(time.Minute)
				return b
			},
			want: []string{invSlotsFilled},
		},
		"a pod beyond a scaled-down count is caught": {
			build: func() *worldBuilder {
				b := aJob(pyTorchSpec(1, batch.RestartPolicyNever), "Running", "")
				b.pod("master", 0, 0, -1)
				b.pod("worker", 0, 0, -1)
				b.pod("worker", 1, 0, -1)
				return b
			},
			want: []string{invSlots},
		},
		"a paused job that keeps a pod is caught": {
			build: func() *worldBuilder {
				spec := pyTorchSpec(0, batch.RestartPolicyNever)
				spec.paused = true
				b := aJob(spec, "Running", "")
				b.pod("master", 0, 0, -1)
				return b
			},
			want: []string{invPaused},
		},
		"a backoffCount above the restarts seen is caught": {
			build: func() *worldBuilder {
				b := aJob(pyTorchSpec(1, batch.RestartPolicyOnFailure), "Running", "")
				b.pod("master", 0, 0, -1)
				b.pod("worker", 0, 0, 1).gone = t0.Add(time.Minute)
				b.pod("worker", 0, 2*time.Minute, -1)
				b.job.backoff = []countSeen{{n: 2, at: t0.Add(3 * time.Minute)}}
				return b
			},
			want: []string{invBackoff},
		},
		"a gang restart for one exit, counted once while every pod came back, breaks nothing": {
			build: func() *worldBuilder {
				b := aJob(pyTorchSpec(1, batch.RestartPolicyOnFailure), "Running", "")
				b.pod("master", 0, 0, -1).gone = t0.Add(time.Minute)
				b.pod("worker", 0, 0, 1).gone = t0.Add(time.Minute)
				b.pod("master", 0, 2*time.Minute, -1)
				b.pod("worker", 0, 2*time.Minute, -1)
				b.job.backoff = []countSeen{{n: 1, at: t0.Add(3 * time.Minute)}}
				return b
			},
		},
		"a disruption counted in backoffCount is caught": {
			build: func() *worldBuilder {
				b := aJob(pyTorchSpec(1, batch.RestartPolicyOnFailure), "Running", "")
				b.pod("master", 0, 0, -1)
				hand := b.pod("worker", 0, 0, -1)
				hand.byHand, hand.gone = true, t0.Add(time.Minute)
				b.pod("worker", 0, 2*time.Minute, -1)
				b.job.backoff = []countSeen{{n: 1, at: t0.Add(3 * time.Minute)}}
				return b
			},
			want: []string{invBackoff},
		},
		"a pod deleted by hand, counted once as a disruption, breaks nothing": {
			build: func() *worldBuilder {
				b := aJob(pyTorchSpec(1, batch.RestartPolicyOnFailure), "Running", "")
				b.pod("master", 0, 0, -1)
				hand := b.pod("worker", 0, 0, -1)
				hand.byHand, hand.gone = true, t0.Add(time.Minute)
				b.pod("worker", 0, 2*time.Minute, -1)
				b.job.disruptions = []countSeen{{n: 1, at: t0.Add(3 * time.Minute)}}
				return b
			},
		},
		"a worker's exit 1 under ExitCode right after a scale-down, restarted as a disruption, breaks nothing": {
			build: func() *worldBuilder { return scaledDownThenFailed(t0.Add(time.Minute)) },
		},
		"a worker's exit 1 under ExitCode restarted as a disruption with no scale-down before is caught": {
			build: func() *worldBuilder { return scaledDownThenFailed(time.Time{}) },
			want:  []string{invDisruptions},
		},
		"a disruptionCount above the disruptions seen is caught": {
			build: func() *worldBuilder {
				b := aJob(pyTorchSpec(1, batch.RestartPolicyOnFailure), "Running", "")
				b.pod("master", 0, 0, -1)
				hand := b.pod("worker", 0, 0, -1)
				hand.byHand, hand.gone = true, t0.Add(time.Minute)
				b.pod("worker", 0, 2*time.Minute, -1)
				b.job.disruptions = []countSeen{{n: 2, at: t0.Add(3 * time.Minute)}}
				return b
			},
			want: []string{invDisruptions},
		},
		"ReplicaFailed after a worker was deleted by hand under Never is right": {
			build: func() *worldBuilder {
				b := aJob(pyTorchSpec(1, batch.RestartPolicyNever), "Failed", batch.ReasonFailed)
				hand := b.pod("worker", 0, 0, -1)
				hand.byHand, hand.gone = true, t0.Add(time.Minute)
				return b
			},
		},
		"a job seen Succeeded and then Running is caught": {
			build: func() *worldBuilder {
				b := aJob(pyTorchSpec(0, batch.RestartPolicyNever), "Succeeded", "Succeeded")
				b.pod("master", 0, 0, 0)
				b.job.leftTerminal = "seen Succeeded, then Running"
				return b
			},
			want: []string{invTerminalSticky},
		},
		"a pod whose job is long gone is caught, and one created after the deletion": {
			build: func() *worldBuilder {
				b := aJob(pyTorchSpec(0, batch.RestartPolicyNever), "Running", "")
				b.job.deleted, b.job.gone = t0.Add(time.Minute), t0.Add(time.Minute)
				b.pod("master", 0, 2*time.Minute, -1)
				return b
			},
			want: []string{invNothingForDeleted, invOrphans},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			at := later
			if !tc.at.IsZero() {
				at = tc.at
			}
			got := tc.build().fired(at)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("violations (-want +got):\n%s", diff)
			}
		})
	}
}

func TestElasticSplit(t *testing.T) {
	spec := pyTorchSpec(1, batch.RestartPolicyNever)
	spec.elastic(&batch.ElasticConfig{MinReplicas: ptrTo(int32(2)), MaxReplicas: ptrTo(int32(6)), ExpectedReplicas: ptrTo(int32(5))})
	if diff := cmp.Diff(map[string]int32{"master": 1, "worker": 4}, spec.replicas); diff != "" {
		t.Errorf("replicas (-want +got):\n%s", diff)
	}
}

// scaledDownThenFailed is an elastic job's world under ExitCode where worker-0, running since the
// start, exited 1 five seconds after the job was scaled down at scaledDown (zero: never scaled
// down), and was restarted, counted as a disruption (render/scaledown.go).
func scaledDownThenFailed(scaledDown time.Time) *worldBuilder {
	b := aJob(pyTorchSpec(1, batch.RestartPolicyExitCode), "Running", "")
	b.job.st.lastScaleDown = scaledDown
	b.pod("master", 0, 0, -1)
	w := b.pod("worker", 0, 0, 1)
	w.started, w.finished = t0, t0.Add(time.Minute+5*time.Second)
	w.terminatedAt, w.gone = w.finished, t0.Add(time.Minute+6*time.Second)
	b.pod("worker", 0, 2*time.Minute, -1)
	b.job.disruptions = []countSeen{{n: 1, at: t0.Add(3 * time.Minute)}}
	return b
}
