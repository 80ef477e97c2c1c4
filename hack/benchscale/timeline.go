package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
)

// timelineStep is the width of a timeline's rows.
const timelineStep = time.Second

// timeline is, second by second from start, how many pods the watches had seen exist, bound to a
// node, and Running, and how many jobs Running: where a run's time went. "bound" close behind
// "exist" means the scheduler had run out of pods to bind (it binds at its client's rate while
// pods wait); "Running" far behind "bound" means the fake kubelet is behind. Counts are
// cumulative first sightings.
func timeline(t *tracker, start time.Time) string {
	var seen, bound, running, jobsRunning []time.Time
	t.view(func(pods map[string]*podRecord, jobs map[string]*jobRecord) {
		for _, p := range pods {
			seen = append(seen, p.seen)
			bound = append(bound, p.bound)
			running = append(running, p.running)
		}
		for _, j := range jobs {
			jobsRunning = append(jobsRunning, j.phaseSeen[batch.JobRunning])
		}
	})
	columns := [][]time.Time{seen, bound, running, jobsRunning}
	last := start
	for _, col := range columns {
		for _, at := range col {
			last = later(last, at)
		}
	}
	var b strings.Builder
	b.WriteString("second\tpods exist\tbound\tRunning\tjobs Running\n")
	for edge := start.Add(timelineStep); ; edge = edge.Add(timelineStep) {
		fmt.Fprintf(&b, "%d", int(edge.Sub(start)/timelineStep))
		for _, col := range columns {
			fmt.Fprintf(&b, "\t%d", countBefore(col, edge))
		}
		b.WriteString("\n")
		if !edge.Before(last) {
			return b.String()
		}
	}
}

// countBefore counts the times in at that are set and before edge.
func countBefore(at []time.Time, edge time.Time) int {
	n := 0
	for _, a := range at {
		if !a.IsZero() && a.Before(edge) {
			n++
		}
	}
	return n
}

// writeTimeline writes t's timeline from start to path, and says so in the log; a failure to
// write is logged, not fatal: the timeline is a diagnosis, not a figure.
func writeTimeline(path string, t *tracker, start time.Time) {
	if err := os.WriteFile(path, []byte(timeline(t, start)), 0o644); err != nil {
		logf("timeline: %v", err)
		return
	}
	logf("timeline in %s", path)
}
