package main

import (
	"fmt"
	"math"
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
// cumulative first sightings. With gate samples (sampleGate), three more columns say how the
// operator's write gate stood in each second: the writes in flight and waiting (the means of the
// samples) and its limit (the least sampled); "-" in a second without a sample. In flight at the
// limit with writes waiting means the gate, not the work to do, held the operator back.
func timeline(t *tracker, start time.Time, gate []gateSample) string {
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
	b.WriteString("second\tpods exist\tbound\tRunning\tjobs Running")
	if len(gate) > 0 {
		b.WriteString("\tgate in flight\tgate waiting\tgate limit")
	}
	b.WriteString("\n")
	for edge := start.Add(timelineStep); ; edge = edge.Add(timelineStep) {
		fmt.Fprintf(&b, "%d", int(edge.Sub(start)/timelineStep))
		for _, col := range columns {
			fmt.Fprintf(&b, "\t%d", countBefore(col, edge))
		}
		if len(gate) > 0 {
			b.WriteString(gateColumns(gate, edge.Add(-timelineStep), edge))
		}
		b.WriteString("\n")
		if !edge.Before(last) {
			return b.String()
		}
	}
}

// gateColumns are the timeline's gate columns for the samples taken in [from, to).
func gateColumns(gate []gateSample, from, to time.Time) string {
	var n int
	var inFlight, waiting float64
	limit := math.Inf(1)
	for _, g := range gate {
		if g.at.Before(from) || !g.at.Before(to) {
			continue
		}
		n++
		inFlight += g.inFlight
		waiting += g.waiting
		limit = math.Min(limit, g.limit)
	}
	if n == 0 {
		return "\t-\t-\t-"
	}
	return fmt.Sprintf("\t%.1f\t%.1f\t%.0f", inFlight/float64(n), waiting/float64(n), limit)
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
func writeTimeline(path string, t *tracker, start time.Time, gate []gateSample) {
	if err := os.WriteFile(path, []byte(timeline(t, start, gate)), 0o644); err != nil {
		logf("timeline: %v", err)
		return
	}
	logf("timeline in %s", path)
}
