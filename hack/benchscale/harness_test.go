package main

import (
	"slices"
	"testing"
	"time"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
	kubeflowv1 "github.com/trainyard/trainyard/apis/kubeflow/v1"
)

// TestParseFlagsHarness: the flags that change what is played (the jobs' clean-up, KWOK's pod
// workers).
func TestParseFlagsHarness(t *testing.T) {
	type harness struct {
		keepPods bool
		kwok     int
		priority int32
	}
	cases := map[string]struct {
		args    []string
		want    harness
		wantErr bool
	}{
		"issue 19's harness by default":            {},
		"clean-up none keeps the pods":             {args: []string{"--clean-up=none"}, want: harness{keepPods: true}},
		"clean-up default said":                    {args: []string{"--clean-up=default"}},
		"another clean-up is refused":              {args: []string{"--clean-up=All"}, wantErr: true},
		"KWOK's pod workers asked":                 {args: []string{"--kwok-pod-parallelism=20"}, want: harness{kwok: 20}},
		"KWOK's pod workers below 0 refused":       {args: []string{"--kwok-pod-parallelism=-1"}, wantErr: true},
		"a mixed size's second part at a priority": {args: []string{"--sizes=1x5000+50x8", "--then-priority=1000"}, want: harness{priority: 1000}},
		"a priority with no mixed size refused":    {args: []string{"--sizes=50x8", "--then-priority=1000"}, wantErr: true},
		"a system priority refused":                {args: []string{"--sizes=1x5000+50x8", "--then-priority=2000000000"}, wantErr: true},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			o, parsed := parsedFlags(t, c.args, c.wantErr)
			if got := (harness{keepPods: o.keepPods, kwok: o.kwokPodParallelism, priority: o.thenPriority}); parsed && got != c.want {
				t.Errorf("got %+v, want %+v", got, c.want)
			}
		})
	}
}

// parsedFlags parses args, failing the test unless it errs exactly when wantErr; parsed reports
// that options came out (no error).
func parsedFlags(t *testing.T, args []string, wantErr bool) (o options, parsed bool) {
	t.Helper()
	o, err := parseFlags(args)
	if (err != nil) != wantErr {
		t.Fatalf("err = %v, want error %v", err, wantErr)
	}
	return o, err == nil
}

func TestJobsKeepTheirPodsOnlyWhenAsked(t *testing.T) {
	s := size{jobs: 2, podsPerJob: 8}
	for _, keep := range []bool{false, true} {
		kf := jobOf(apiKubeflow, "ns", "j", s, time.Second, keep).(*kubeflowv1.PyTorchJob)
		t9k := jobOf(apiT9k, "ns", "j", s, time.Second, keep).(*batch.PyTorchTrainingJob)
		if !keep {
			if kf.Spec.RunPolicy != nil || t9k.Spec.RunPolicy != nil {
				t.Errorf("default: run policies %+v, %+v; want none (the operator's defaults)", kf.Spec.RunPolicy, t9k.Spec.RunPolicy)
			}
			continue
		}
		if p := kf.Spec.RunPolicy; p == nil || p.CleanPodPolicy == nil || *p.CleanPodPolicy != kubeflowv1.CleanPodPolicyNone {
			t.Errorf("kubeflow.org run policy %+v, want cleanPodPolicy None", p)
		}
		if p := t9k.Spec.RunPolicy; p == nil || p.CleanUpPolicy != batch.CleanUpPolicyNone {
			t.Errorf("T9k run policy %+v, want cleanUpPolicy None", p)
		}
	}
}

func TestParseFlagsPeer(t *testing.T) {
	o, err := parseFlags([]string{"--peer", "--operator-flags=--controller-threads=16"})
	if err != nil {
		t.Fatal(err)
	}
	if !o.keepPods || o.operatorBin != peerBin || o.operatorAgent() != peerAgent {
		t.Errorf("--peer: keepPods %v, operator %q, agent %q; want true, %q, %q", o.keepPods, o.operatorBin, o.operatorAgent(), peerBin, peerAgent)
	}
	if len(o.apis) != 1 || o.apis[0] != apiKubeflow {
		t.Errorf("--peer: apis %v, want kubeflow alone", o.apis)
	}
	if want := []string{peerSchemes, "--controller-threads=16"}; !slices.Equal(o.operatorFlags, want) {
		t.Errorf("--peer: operator flags %q, want %q", o.operatorFlags, want)
	}
	if o, err := parseFlags(nil); err != nil || o.peer || o.operatorAgent() != trainyardAgent || o.operatorBin != "bin/trainyard" {
		t.Errorf("default: %v, peer %v, agent %q, operator %q; want Trainyard", err, o.peer, o.operatorAgent(), o.operatorBin)
	}
	for _, args := range [][]string{
		{"--peer", "--apis=t9k,kubeflow"},
		{"--peer", "--clean-up=default"},
		{"--peer", "--operator=bin/other"},
		{"--peer", "--scenarios=burst"},
	} {
		if _, err := parseFlags(args); err == nil {
			t.Errorf("%q: no error, want one", args)
		}
	}
}

func TestWithPriorityClassReachesEveryTemplate(t *testing.T) {
	s := size{jobs: 2, podsPerJob: 8}
	kf := jobOf(apiKubeflow, "ns", "j", s, time.Second, false).(*kubeflowv1.PyTorchJob)
	t9k := jobOf(apiT9k, "ns", "j", s, time.Second, false).(*batch.PyTorchTrainingJob)
	withPriorityClass(kf, "high")
	withPriorityClass(t9k, "high")
	var got []string
	for _, r := range kf.Spec.PyTorchReplicaSpecs {
		got = append(got, r.Template.Spec.PriorityClassName)
	}
	for _, r := range t9k.Spec.ReplicaSpecs {
		got = append(got, r.Template.Spec.PriorityClassName)
	}
	if want := []string{"high", "high", "high", "high"}; !slices.Equal(got, want) {
		t.Errorf("the templates' priority classes: %q, want %q (master and worker of both kinds)", got, want)
	}
}
