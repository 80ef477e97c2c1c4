package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/trainyard/trainyard/hack/internal/localrun"
)

// results is everything the run measured, filled in as it goes, so a broken run still reports
// what it got.
type results struct {
	scale scale
	// operatorStarted and operatorStopped bound the whole run's audit window.
	operatorStarted, operatorStopped time.Time
	// idleRSSKB, bigRSSKB, peakRSSKB: VmRSS when idle, VmRSS after the big job, VmHWM at the end.
	idleRSSKB, bigRSSKB, peakRSSKB int64
	phases                         []window
	burst                          burstFigures
	big                            bigFigures
	gang                           gangFigures
	gangRun                        bool // the gang-restart scenario was played
	audit                          auditSummary
	cpuProfile                     string
	notes                          []string
}

func (r *results) addPhase(name string, from, to time.Time) {
	r.phases = append(r.phases, window{name: name, from: from, to: to})
}

// windows are the audit windows: idle (operator start to the first create), each phase, and the
// whole run.
func (r *results) windows() []window {
	idleEnd := r.operatorStopped
	if len(r.phases) > 0 {
		idleEnd = r.phases[0].from
	}
	ws := []window{{name: "idle", from: r.operatorStarted, to: idleEnd}}
	ws = append(ws, r.phases...)
	return append(ws, window{name: "whole run", from: r.operatorStarted, to: r.operatorStopped})
}

// row is one line of the main table.
type row struct {
	figure, measured, target, kubeflow, met string
}

// markdown renders the results: the figures beside their targets and Kubeflow's figures, then
// the operator's writes per phase, then notes.
func (r *results) markdown(runInfo string) string {
	s := r.scale
	full := scales["full"]
	var b strings.Builder
	fmt.Fprintf(&b, "# make bench-scale\n\n%s\n\n", runInfo)
	if !s.isFull() {
		fmt.Fprintf(&b, "Scale %s: the targets and Kubeflow's figures are for the full scale (%d jobs x %d pods, 1 master + %d workers); these figures only check the harness.\n\n",
			s.name, full.burstJobs, full.podsPerJob(), full.bigWorkers)
	}
	rows := []row{
		{
			figure:   fmt.Sprintf("%d jobs x %d pods: first create → all %d pods exist", s.burstJobs, s.podsPerJob(), s.burstPods()),
			measured: fmtFigure(r.burst.allPodsExist), target: "≤ 2.0 s", kubeflow: "38.2 s",
			met: metFigure(r.burst.allPodsExist, 2*time.Second),
		},
		{
			figure:   "every job Running within 1 s of its last pod Running: status.phase Running − last pod Running",
			measured: fmtSpread(r.burst.runningLag), target: "≤ 1 s (max)", kubeflow: "n/a",
			met: metSpread(r.burst.runningLag, time.Second),
		},
		{
			figure:   "… status shows all running: aggregate.running == desired − last pod Running",
			measured: fmtSpread(r.burst.allRunningLag), target: "≤ 1 s (max)", kubeflow: "n/a",
			met: metSpread(r.burst.allRunningLag, time.Second),
		},
		{
			figure:   fmt.Sprintf("1 master + %d workers: create → all %d pods exist", s.bigWorkers, s.bigPods()),
			measured: fmtFigure(r.big.allPodsExist), target: "≤ 5 s", kubeflow: "48.6 s",
			met: metFigure(r.big.allPodsExist, 5*time.Second),
		},
		{
			figure:   "job Running within 1 s of its pods running: status.phase Running − last pod Running",
			measured: fmtFigure(r.big.runningLag), target: "≤ 1 s", kubeflow: "98.6 s",
			met: metFigure(r.big.runningLag, time.Second),
		},
		{
			figure:   fmt.Sprintf("… status shows all running: aggregate.running == %d − last pod Running", s.bigPods()),
			measured: fmtFigure(r.big.allRunningLag), target: "≤ 1 s", kubeflow: "",
			met: metFigure(r.big.allRunningLag, time.Second),
		},
		{
			figure:   "… create → job Running (create → last pod Running)",
			measured: fmtFigure(r.big.createToRunning) + " (" + fmtFigure(r.big.createToPodsRunning) + ")",
		},
		r.writesRow("burst", "write requests per pod created: burst", 1.6, "4.25"),
		r.writesRow("big job", "write requests per pod created: big job", 1.05, "2.03"),
		r.completionRow(),
		{
			figure:   fmt.Sprintf("master pod Succeeded → job Succeeded, median over the %d jobs", s.burstJobs),
			measured: fmtMedian(r.burst.succeededLag), target: "≤ 0.1 s", kubeflow: "0.26 s",
			met: metBool(r.burst.succeededLag.n > 0, r.burst.succeededLag.median <= 100*time.Millisecond),
		},
		{
			figure:   "… worst",
			measured: fmtMax(r.burst.succeededLag), target: "≤ 0.3 s", kubeflow: "1.30 s",
			met: metBool(r.burst.succeededLag.n > 0, r.burst.succeededLag.max <= 300*time.Millisecond),
		},
		r.conflictsRow(),
		{
			figure:   "operator RSS idle",
			measured: fmtRSS(r.idleRSSKB), target: "≤ 35 MB", kubeflow: "39.5 MB",
			met: metBool(r.idleRSSKB > 0, r.idleRSSKB <= 35*1024),
		},
		{
			figure:   fmt.Sprintf("operator RSS after the %d-pod job", s.bigPods()),
			measured: fmtRSS(r.bigRSSKB), target: "≤ 55 MB", kubeflow: "83 MB",
			met: metBool(r.bigRSSKB > 0, r.bigRSSKB <= 55*1024),
		},
		{figure: "… operator peak RSS over the run (VmHWM)", measured: fmtRSS(r.peakRSSKB)},
	}
	if r.gangRun {
		rows = append(rows, r.gangRows()...)
	}
	b.WriteString("| figure | measured | target | Kubeflow v1.8.1 | met |\n|---|---|---|---|---|\n")
	for _, x := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", x.figure, x.measured, dash(x.target), dash(x.kubeflow), dash(x.met))
	}
	b.WriteString("\n")
	r.writesTable(&b)
	r.notesList(&b)
	return b.String()
}

// gangRows are the gang-restart scenario's figures: the restart beside the start, its steps, and
// the writes per restarted pod.
func (r *results) gangRows() []row {
	g := r.gang
	target, ratio := "≤ 1.5 x the start", ""
	x := row{figure: fmt.Sprintf("gang restart (issue 16): 1 master + %d workers, one worker exits 1 → all %d pods Running again and the status showing the job Running with all of them",
		g.pods-1, g.pods), measured: fmtFigure(g.restart), target: target, kubeflow: "n/a (restarts one pod)"}
	if g.restart.ok && g.start.ok && g.start.d > 0 {
		ratio = fmt.Sprintf("%.2f x", g.restart.d.Seconds()/g.start.d.Seconds())
		x.target = fmt.Sprintf("≤ 1.5 x %s = %s", seconds(g.start.d), seconds(time.Duration(1.5*float64(g.start.d))))
		x.met = metBool(true, float64(g.restart.d) <= 1.5*float64(g.start.d))
	}
	steps := fmt.Sprintf("worker seen Failed %s, last old pod gone %s, last new pod exists %s, last new pod Running %s",
		fmtFigure(g.failed), fmtFigure(g.oldGone), fmtFigure(g.newExist), fmtFigure(g.newRunning))
	rows := []row{
		x,
		{figure: "… the same job's start: create → the status showing it Running with all its pods", measured: fmtFigure(g.start)},
		{figure: "… restart / start", measured: dash(ratio), target: "≤ 1.5"},
		{figure: "… after the exit: " + steps, measured: dash(g.counts)},
	}
	w := row{figure: "write requests per restarted pod (the gang-restart phase: deletions, creations, status, events)"}
	if c, ok := r.audit.of("gang restart"); ok && g.pods > 0 {
		w.measured = fmt.Sprintf("%.2f (%d / %d; %d pods created)", float64(c.total)/float64(g.pods), c.total, g.pods, c.podsCreated)
	} else {
		w.measured = "n/a (phase not reached or no audit log)"
	}
	return append(rows, w)
}

func (r *results) writesRow(phase, figure string, target float64, kubeflow string) row {
	x := row{figure: figure, target: fmt.Sprintf("≤ %.2f", target), kubeflow: kubeflow}
	c, ok := r.audit.of(phase)
	switch {
	case !ok:
		x.measured = "n/a (phase not reached or no audit log)"
	case c.podsCreated == 0:
		x.measured = fmt.Sprintf("n/a (%d writes, no pod created)", c.total)
	default:
		perPod := float64(c.total) / float64(c.podsCreated)
		x.measured = fmt.Sprintf("%.2f (%d / %d)", perPod, c.total, c.podsCreated)
		x.met = metBool(true, perPod <= target)
	}
	return x
}

func (r *results) completionRow() row {
	x := row{figure: fmt.Sprintf("… write requests in the completion phase (%d jobs succeed, their pods cleaned up)", r.scale.burstJobs)}
	c, ok := r.audit.of("completion")
	if !ok {
		x.measured = "n/a (phase not reached or no audit log)"
		return x
	}
	x.measured = fmt.Sprintf("%d (%.2f per job, %.2f per pod of the burst)", c.total,
		float64(c.total)/float64(r.scale.burstJobs), float64(c.total)/float64(r.scale.burstPods()))
	return x
}

func (r *results) conflictsRow() row {
	x := row{figure: "409 Conflict responses to the operator, whole run", target: "0", kubeflow: "57 in 288 status writes (a tuned peer)"}
	c, ok := r.audit.of("whole run")
	if !ok {
		x.measured = "n/a (no audit log)"
		return x
	}
	x.measured = fmt.Sprintf("%d in %d status writes", c.conflicts, c.statusWrites)
	x.met = metBool(true, c.conflicts == 0)
	return x
}

// writesTable: the operator's write requests by resource and verb, per window.
func (r *results) writesTable(b *strings.Builder) {
	a := r.audit
	b.WriteString("## Operator write requests by phase (API server audit log)\n\n")
	if !a.read {
		b.WriteString("The audit log could not be read.\n\n")
		return
	}
	kinds := map[string]bool{}
	for _, c := range a.counts {
		for k := range c.byKind {
			kinds[k] = true
		}
	}
	b.WriteString("| |")
	for _, w := range a.windows {
		fmt.Fprintf(b, " %s |", w.name)
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(a.windows)) + "\n")
	line := func(label string, cell func(w window, c writeCounts) string) {
		fmt.Fprintf(b, "| %s |", label)
		for i, w := range a.windows {
			fmt.Fprintf(b, " %s |", cell(w, a.counts[i]))
		}
		b.WriteString("\n")
	}
	line("phase length", func(w window, _ writeCounts) string { return seconds(w.to.Sub(w.from)) })
	for _, k := range slices.Sorted(maps.Keys(kinds)) {
		line(k, func(_ window, c writeCounts) string { return fmt.Sprint(c.byKind[k]) })
	}
	line("**total**", func(_ window, c writeCounts) string { return fmt.Sprintf("**%d**", c.total) })
	line("pods created (201)", func(_ window, c writeCounts) string { return fmt.Sprint(c.podsCreated) })
	line("writes per pod created", func(_ window, c writeCounts) string {
		if c.podsCreated == 0 {
			return "–"
		}
		return fmt.Sprintf("%.2f", float64(c.total)/float64(c.podsCreated))
	})
	line("answered outside 2xx", func(_ window, c writeCounts) string { return fmt.Sprint(c.failed) })
	line("of which 409 Conflict", func(_ window, c writeCounts) string { return fmt.Sprint(c.conflicts) })
	b.WriteString("\nPhases: idle = operator start → first create; burst = first create → every job Running with " +
		"aggregate.running == desired and no job or pod change for --settle; completion → every job Succeeded, its " +
		"unfinished pods gone, settled; delete = the bench deletes the burst jobs → they and their pods are gone; " +
		"big job = create → Running with every pod running, settled; gang restart = a worker of the big job told to exit 1 → every " +
		"pod new and running, the job Running with all of them, settled.\n\n")
}

func (r *results) notesList(b *strings.Builder) {
	notes := slices.Clone(r.notes)
	if r.cpuProfile != "" {
		notes = append(notes, "CPU profile of the operator during the big job: "+r.cpuProfile)
	}
	if len(notes) == 0 {
		return
	}
	b.WriteString("## Notes\n\n")
	for _, n := range notes {
		fmt.Fprintf(b, "- %s\n", n)
	}
	b.WriteString("\n")
}

// describeRun: when, what, on which commit and machine, with which operator flags.
func describeRun(repo string, o options, operatorArgs []string) string {
	kwok := ""
	if o.scenarios["gang-restart"] && o.kwokDeleteDelay > 0 {
		kwok = fmt.Sprintf("; the fake kubelet confirms deletions after %s", o.kwokDeleteDelay)
	}
	return fmt.Sprintf("Run %s: scale %s; %d KWOK nodes; commit %s; %s.  \nOperator: `%s %s`; settle %s, master run-duration %s%s.",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"), o.scale.describe(), o.nodes, localrun.Commit(repo), localrun.Machine(),
		o.operatorBin, strings.Join(operatorArgs, " "), o.settle, o.masterRun, kwok)
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.3f s", d.Seconds()) }

func fmtFigure(f figure) string {
	switch {
	case !f.ok && f.why == "":
		return "n/a (not reached)"
	case !f.ok:
		return "n/a (" + f.why + ")"
	}
	return seconds(f.d)
}

func fmtSpread(s spread) string {
	if s.n == 0 {
		return "n/a (no job measured)"
	}
	return fmt.Sprintf("max %s, median %s%s", seconds(s.max), seconds(s.median), ofJobs(s))
}

func fmtMedian(s spread) string {
	if s.n == 0 {
		return "n/a (no job measured)"
	}
	return seconds(s.median) + ofJobs(s)
}

func fmtMax(s spread) string {
	if s.n == 0 {
		return "n/a (no job measured)"
	}
	return seconds(s.max) + ofJobs(s)
}

// ofJobs notes when only some of the jobs could be measured.
func ofJobs(s spread) string {
	if s.n == s.of {
		return ""
	}
	return fmt.Sprintf(" (%d of %d jobs)", s.n, s.of)
}

func fmtRSS(kb int64) string {
	if kb <= 0 {
		return "n/a"
	}
	return mbNum(kb) + " MB"
}

// mbNum is kB in MB without the unit, for a range: 38.2.
func mbNum(kb int64) string { return fmt.Sprintf("%.1f", float64(kb)/1024) }

func metFigure(f figure, target time.Duration) string { return metBool(f.ok, f.d <= target) }
func metSpread(s spread, target time.Duration) string { return metBool(s.n > 0, s.max <= target) }

func metBool(measuredAtAll, met bool) string {
	switch {
	case !measuredAtAll:
		return ""
	case met:
		return "yes"
	default:
		return "**no**"
	}
}

func dash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}
