package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The sizes scenario (issue 19): each API's operator beside Kubeflow's tuned training-operator
// and beside the cluster's floor, at four sizes.

// api is one of the two job APIs the operator serves.
type api string

const (
	// apiT9k is batch.tensorstack.dev/v1beta1 PyTorchTrainingJob.
	apiT9k api = "t9k"
	// apiKubeflow is kubeflow.org/v1 PyTorchJob.
	apiKubeflow api = "kubeflow"
)

func (a api) kind() string {
	if a == apiKubeflow {
		return "kubeflow.org/v1 PyTorchJob"
	}
	return "batch.tensorstack.dev/v1beta1 PyTorchTrainingJob"
}

// size is jobs jobs of podsPerJob pods each: 1 master and podsPerJob-1 workers.
type size struct{ jobs, podsPerJob int }

func (s size) pods() int    { return s.jobs * s.podsPerJob }
func (s size) workers() int { return s.podsPerJob - 1 }

// burst: several jobs created at once, whose masters exit 0 so that their completion is timed.
// One job alone is a big job, which runs until deleted.
func (s size) burst() bool { return s.jobs > 1 }

// String is the flag's spelling: 50x8.
func (s size) String() string { return fmt.Sprintf("%dx%d", s.jobs, s.podsPerJob) }

// title is the report's spelling: "50 jobs x 8 (400 pods)", "1 x 1,000".
func (s size) title() string {
	if !s.burst() {
		return "1 x " + thousands(s.podsPerJob)
	}
	return fmt.Sprintf("%d jobs x %d (%s pods)", s.jobs, s.podsPerJob, thousands(s.pods()))
}

// jobName names job i of the size: s50x8-007, s1x5000.
func (s size) jobName(i int) string {
	if !s.burst() {
		return "s" + s.String()
	}
	return fmt.Sprintf("s%s-%03d", s, i)
}

func parseSize(text string) (size, error) {
	j, p, ok := strings.Cut(strings.TrimSpace(text), "x")
	jobs, err1 := strconv.Atoi(j)
	pods, err2 := strconv.Atoi(p)
	if !ok || err1 != nil || err2 != nil || jobs < 1 || pods < 1 {
		return size{}, fmt.Errorf("size %q: want <jobs>x<pods per job>, e.g. 50x8 or 1x1000", text)
	}
	return size{jobs: jobs, podsPerJob: pods}, nil
}

// sizePresets are the sizes of --scale when --sizes is not given.
var sizePresets = map[string]string{
	// Issue 19's four sizes, those the targets and the peer's figures are for.
	"full": "50x8,1x1000,200x8,1x5000",
	// A light run for a shared machine: checks the harness, not the operator.
	"small": "10x4,1x100,20x4,1x300",
}

// peerFigures are Kubeflow training-operator v1.8.1's figures on issue 19's harness, tuned
// (QPS 1000, burst 2000, 16 threads); zero where none was given.
type peerFigures struct {
	allPodsExist, everyJobRunning, allPodsRunning time.Duration
	completionMedian, completionWorst             time.Duration
	conflicts                                     int // -1: not given
	cpuPer1000                                    float64
	rssMB                                         float64
}

var kubeflowTuned = map[string]peerFigures{
	"50x8": {allPodsExist: 8300 * time.Millisecond, everyJobRunning: 11100 * time.Millisecond,
		completionMedian: 120 * time.Millisecond, completionWorst: 280 * time.Millisecond, conflicts: 0},
	"1x1000": {allPodsExist: 35300 * time.Millisecond, everyJobRunning: 35400 * time.Millisecond, conflicts: -1, cpuPer1000: 6.7},
	"200x8":  {allPodsExist: 31200 * time.Millisecond, everyJobRunning: 40600 * time.Millisecond, conflicts: 0, cpuPer1000: 6.5},
	"1x5000": {allPodsExist: 159900 * time.Millisecond, everyJobRunning: 207 * time.Second, allPodsRunning: 159900 * time.Millisecond,
		conflicts: -1, cpuPer1000: 7.4, rssMB: 228},
}

// peerOf is the peer's figures at s; conflicts -1 when there are none.
func peerOf(s size) peerFigures {
	p, ok := kubeflowTuned[s.String()]
	if !ok {
		return peerFigures{conflicts: -1}
	}
	return p
}

// thousands spells n with thousands separators: 5,000.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
