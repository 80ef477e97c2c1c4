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

// size is jobs jobs of podsPerJob pods each: 1 master and podsPerJob-1 workers. A mixed size
// ("1x5000+50x8") has a second part, a burst of thenJobs jobs of thenPodsPerJob pods, created
// while the first part's pods are being created (once a fifth of them exist): issue 19 asks that
// a big job not starve small ones, and this is how the bench sees whether it does.
type size struct {
	jobs, podsPerJob         int
	thenJobs, thenPodsPerJob int // 0 but in a mixed size
}

// pods is every pod of the size, both parts of a mixed one.
func (s size) pods() int    { return s.jobs*s.podsPerJob + s.thenJobs*s.thenPodsPerJob }
func (s size) workers() int { return s.podsPerJob - 1 }

// burst: several small jobs created at once, whose masters exit 0 so that their completion is
// timed. A big job (one alone, or of bigJobPods pods or more: "3x1500") runs until deleted.
func (s size) burst() bool { return s.jobs > 1 && s.podsPerJob < bigJobPods }

// bigJobPods: a job this big is a big job even beside others of its size. Its master would end
// before its pods were all created (--master-run-duration), ending the job that the size is there
// to watch being created.
const bigJobPods = 1000

// mixed: the size has a second part (then).
func (s size) mixed() bool { return s.thenJobs > 0 }

// first is the size's first part: the size itself unless it is mixed.
func (s size) first() size { return size{jobs: s.jobs, podsPerJob: s.podsPerJob} }

// then is a mixed size's second part.
func (s size) then() (size, bool) {
	return size{jobs: s.thenJobs, podsPerJob: s.thenPodsPerJob}, s.mixed()
}

// parts are the first part and, in a mixed size, the second.
func (s size) parts() []size {
	if then, ok := s.then(); ok {
		return []size{s.first(), then}
	}
	return []size{s}
}

// String is the flag's spelling: 50x8, 1x5000+50x8.
func (s size) String() string {
	if then, ok := s.then(); ok {
		return s.first().String() + "+" + then.String()
	}
	return fmt.Sprintf("%dx%d", s.jobs, s.podsPerJob)
}

// title is the report's spelling: "50 jobs x 8 (400 pods)", "1 x 1,000", "1 x 5,000, then 50
// jobs x 8 (400 pods)".
func (s size) title() string {
	if then, ok := s.then(); ok {
		return s.first().title() + ", then " + then.title()
	}
	if s.jobs == 1 {
		return "1 x " + thousands(s.podsPerJob)
	}
	return fmt.Sprintf("%d jobs x %d (%s pods)", s.jobs, s.podsPerJob, thousands(s.pods()))
}

// jobName names job i of the size (of a plain size or a part): s50x8-007, s1x5000.
func (s size) jobName(i int) string {
	if s.jobs == 1 {
		return "s" + s.String()
	}
	return fmt.Sprintf("s%s-%03d", s, i)
}

// parseSize reads <jobs>x<pods per job>, or two such joined by "+" (a mixed size).
func parseSize(text string) (size, error) {
	first, then, mixed := strings.Cut(strings.TrimSpace(text), "+")
	s, err := parsePart(first)
	if err != nil || !mixed {
		return s, err
	}
	t, err := parsePart(then)
	if err != nil {
		return size{}, err
	}
	s.thenJobs, s.thenPodsPerJob = t.jobs, t.podsPerJob
	return s, nil
}

func parsePart(text string) (size, error) {
	j, p, ok := strings.Cut(strings.TrimSpace(text), "x")
	jobs, err1 := strconv.Atoi(j)
	pods, err2 := strconv.Atoi(p)
	if !ok || err1 != nil || err2 != nil || jobs < 1 || pods < 1 {
		return size{}, fmt.Errorf("size %q: want <jobs>x<pods per job>, e.g. 50x8 or 1x1000, or two joined by + (1x5000+50x8: the second created while the first's pods are)", text)
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
