package main

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/trainyard/trainyard/hack/internal/localrun"
)

// sizesHeader: when, on which commit and machine, under which load, with which cluster and
// identity.
func sizesHeader(repo string, o options, apf, loadBefore, loadAfter string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Run %s; commit %s; %s; load average (1, 5, 15 min) %s before, %s after.  \n",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"), localrun.Commit(repo), localrun.Machine(), loadBefore, loadAfter)
	fmt.Fprintf(&b, "Cluster: hack/cluster.sh, %d KWOK nodes of %d pods and %d nvidia.com/gpu; the control plane, the operator and the bench share the machine",
		o.nodes, o.nodePods, o.nodeGPUs)
	if o.kwokPodParallelism > 0 {
		fmt.Fprintf(&b, "; **KWOK plays %d pod stages at once (--kwok-pod-parallelism; its default, issue 19's harness, is 4): a diagnosis, not comparable with the peer's figures**", o.kwokPodParallelism)
	}
	b.WriteString(".  \n")
	fmt.Fprintf(&b, "Jobs: 1 Master + N Workers, restartPolicy OnFailure, 1 nvidia.com/gpu per pod; a burst's masters exit 0 %s after they start", o.masterRun)
	if o.keepPods {
		b.WriteString("; **--clean-up=none: cleanPodPolicy (T9k cleanUpPolicy) None, no pod or Service deleted when a job finishes** (the peer's default work)")
	}
	if o.thenPriority != 0 {
		fmt.Fprintf(&b, "; **a mixed size's second part runs at priority %d** (--then-priority: PriorityClass %s, preempting nothing; the first part at the default)", o.thenPriority, thenPriorityClass)
	}
	b.WriteString(". ")
	flags := strings.Join(o.operatorFlags, " ")
	if flags == "" {
		flags = "(its default flags)"
	}
	fresh := "per API and size"
	if o.runs > 1 {
		fresh = "per API, size and run"
	}
	who := ""
	if o.peer {
		who = "**Kubeflow's training-operator v1.8.1 (--peer: its controllers built by make peer, its own PyTorchJob CRD and ClusterRole, no admission webhook)**, "
	}
	sampled := ""
	if o.gateTimeline {
		sampled = "; **--gate-timeline: its metrics read every 0.25 s during each start (about 4 ms of its CPU a read, in its CPU figures)**"
	}
	fmt.Fprintf(&b, "Operator: %s`%s %s`, a fresh process %s%s.  \n", who, o.operatorBin, flags, fresh, sampled)
	if o.runs > 1 {
		fmt.Fprintf(&b, "Runs: each size of each API played %d times in a row; the figures are medians of %d runs, ranges in brackets "+
			"(of an even count, the mean of the two middle runs; completion: the medians of each run's median and of each run's worst; "+
			"a figure some run did not measure is the median of the others, \"2 of 3 runs\" in its brackets); the floor is played once.  \n", o.runs, o.runs)
	}
	fmt.Fprintf(&b, "Identity and APF: %s.  \n", apf)
	if o.floor {
		fmt.Fprintf(&b, "Floor: the same pods created by a bare client (client rate limit off, %d goroutines) under the same ServiceAccount, no operator", o.floorConcurrency)
		if slices.Contains(o.apis, apiT9k) {
			b.WriteString("; then again with a headless Service per group selecting its pods, created before them, as a T9k job has")
		}
		if slices.Contains(o.apis, apiKubeflow) {
			b.WriteString("; then again with a headless Service per pod, created after the pods, as the kubeflow.org kinds have")
		}
		if len(o.apis) > 0 {
			b.WriteString(" (the targets read against the pods alone; each API's control plane row against the floor with its Services)")
		}
		b.WriteString(".\n")
	}
	var off, mixed []string
	for _, s := range o.sizes {
		if s.mixed() {
			mixed = append(mixed, s.String())
		} else if _, ok := kubeflowTuned[s.String()]; !ok {
			off = append(off, s.String())
		}
	}
	if len(off) > 0 {
		fmt.Fprintf(&b, "\nSizes %s are not issue 19's (%s): Kubeflow's figures do not apply to them, and their figures only check the harness.\n",
			strings.Join(off, ", "), sizePresets["full"])
	}
	if len(mixed) > 0 {
		fmt.Fprintf(&b, "\nMixed sizes %s: the first part's jobs are created, and the second's once a fifth of the first's pods exist; "+
			"each part's times run from its own first create, and beside them are the same part's played alone in this run, if it was "+
			"(issue 19: a big job does not starve small ones). They have no floor and no peer's figures.\n", strings.Join(mixed, ", "))
	}
	return b.String()
}

// markdown renders the sizes scenario: the floor, then one table per API with every size's
// figures beside their targets and the tuned peer's, then the writes and the notes.
func (c *comparison) markdown(header string, opAudit, floorAudit auditSummary) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# make bench-scale: both APIs at %d sizes (issue 19)\n\n%s\n", len(c.o.sizes), header)
	if len(c.floors) > 0 {
		b.WriteString("## Floor: a bare client's pods, no operator\n\n")
		fmt.Fprintf(&b, "| size | all pods exist | all pods Running (every group Running) | 429s: audit (writes); APF rejections | control plane CPU-seconds to all pods Running (%s) |\n|---|---|---|---|---|\n", controlPlaneNames())
		for _, f := range c.floors {
			fmt.Fprintf(&b, "| %s | %s | %s | %s; %s | %s |\n", f.title(), fmtFigure(f.allPodsExist), fmtFigure(f.allRunning),
				auditCount(floorAudit, f.windowName(), func(w writeCounts) int { return w.throttled }), fmtCount(f.apfRejected, f.apfOK),
				spellControlPlane([]localrun.ProcessCPU{f.controlPlane}))
		}
		b.WriteString("\n")
	}
	for _, a := range c.o.apis {
		c.apiTable(&b, a, opAudit)
	}
	b.WriteString("Figures: times run from the first create call to what the bench's watches first saw (the last pod, the last job's status.phase Running " +
		"(kubeflow.org: condition Running True), the last job's status counting all its pods running (aggregate.running; kubeflow.org: the sum of " +
		"replicaStatuses' active), the last pod Running). Completion: per burst job, the status first seen Succeeded minus its master first seen Succeeded. " +
		"Writes per pod: the operator's write requests in the audit log (user agent " + c.o.operatorAgent() + "...) from the first create to every job Running with all its pods " +
		"(settled, or cut short by a master's exit), over the pods it created; then over the whole size (a burst's completion and clean-up too, until the operator is stopped; the bench then deletes the pods, Services and jobs itself). " +
		"409s and 429s: the audit log's answers to the operator's writes (it logs no reads) and the operator's own client-go metric rest_client_requests_total " +
		"(reads too; client-go retries a 429 itself); APF rejections: apiserver_flowcontrol_rejected_requests_total of the operator's priority level. " +
		"CPU: the operator's utime + stime (/proc) from the first create until it is stopped (every job done), per 1,000 pods; in brackets the start phase's. " +
		"RSS: VmRSS when every job is Running with all its pods; VmHWM at the size's end (a fresh process per size). " +
		"\"ahead\": the figure is better than the tuned peer's. Figures are recorded, never asserted.\n\n")
	c.writesTables(&b, opAudit)
	if len(c.notes) > 0 {
		b.WriteString("## Notes\n\n")
		for _, n := range c.notes {
			fmt.Fprintf(&b, "- %s\n", n)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// sizeRow is one line of an API's table.
type sizeRow struct {
	figure, measured, target, met, peer, ahead string
	// values are the medians the row measured, lower is better (seconds, counts, CPU-seconds, MB),
	// for --side-by-side; none when it measured nothing or is not compared.
	values []float64
}

func (c *comparison) apiTable(b *strings.Builder, a api, audit auditSummary) {
	fmt.Fprintf(b, "## %s\n\n", a.kind())
	b.WriteString("| size | figure | measured | target | met | Kubeflow tuned | ahead of it |\n|---|---|---|---|---|---|---|\n")
	for _, rs := range c.sizes {
		if rs[0].api != a {
			continue
		}
		for i, x := range c.sizeRows(rs, audit) {
			first := ""
			if i == 0 {
				first = "**" + rs[0].size.title() + "**"
			}
			fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s |\n", first, x.figure, dash(x.measured), dash(x.target), dash(x.met), dash(x.peer), dash(x.ahead))
		}
		for _, r := range rs {
			if r.broke != "" {
				fmt.Fprintf(b, "| | **%s broke** | %s | | | | |\n", cmp.Or(r.runName(), "the size"), strings.ReplaceAll(r.broke, "|", "/"))
			}
		}
	}
	b.WriteString("\n")
}

// sizeRows are the rows of a size: each figure the median of its runs and, over several runs,
// their range; the met and ahead columns judge the median.
func (c *comparison) sizeRows(rs []sizeResult, audit auditSummary) []sizeRow {
	s := rs[0].size
	peer := peerOf(s)
	rows := []sizeRow{timeRow("all pods exist", rs, func(r sizeResult) figure { return r.allPodsExist }, peer.allPodsExist)}

	jobsRunning := func(r sizeResult) figure { return r.everyJobRunning }
	running := timeRow("every job Running", rs, jobsRunning, peer.everyJobRunning)
	if f, ok := c.floorOf(s); ok && f.allRunning.ok {
		limit := time.Duration(1.2 * float64(f.allRunning.d))
		running.target = fmt.Sprintf("≤ 1.2 x floor %s = %s", secs(f.allRunning.d), secs(limit))
		d := durations(rs, jobsRunning)
		running.met = metBool(d.ok(), d.median <= limit)
	}
	rows = append(rows, running,
		timeRow("… the status counting all pods running", rs, func(r sizeResult) figure { return r.statusAllRunning }, 0),
		timeRow("all pods Running", rs, func(r sizeResult) figure { return r.allPodsRunning }, peer.allPodsRunning))
	if s.burst() {
		rows = append(rows, completionRow(rs, func(r sizeResult) spread { return r.completion }, peer))
	}
	if s.mixed() {
		rows = c.mixedRows(rs, rows)
	}
	if c.o.deleteJobs && !s.burst() {
		rows = append(rows,
			timeRow("jobs deleted → their pods all marked for deletion", rs, func(r sizeResult) figure { return r.podsTerminating }, 0),
			timeRow("jobs deleted → their pods gone", rs, func(r sizeResult) figure { return r.podsGone }, 0),
			timeRow("jobs deleted → their Services gone", rs, func(r sizeResult) figure { return r.servicesGone }, 0))
	}
	conflicts, throttled := countRows(rs, audit, peer)
	rows = append(rows, writesRow(rs, audit), conflicts, throttled, reconcilesRow(rs), cpuRow(rs, peer), rssRow(rs, peer))
	floor, _ := c.apiFloorOf(s, rs[0].api)
	return append(rows, controlPlaneRow(rs, floor))
}

// controlPlaneProcesses are the cluster's processes in the order the control plane rows name
// them (ControlPlanePIDs' names), with the names they go by there.
var controlPlaneProcesses = []struct{ pid, name string }{
	{"kube-apiserver", "API server"},
	{"etcd", "etcd"},
	{"kwok-controller", "KWOK"},
	{"kube-scheduler", "scheduler"},
	{"kube-controller-manager", "controller-manager"},
}

// controlPlaneNames is "API server, etcd, KWOK, scheduler, controller-manager".
func controlPlaneNames() string {
	names := make([]string, len(controlPlaneProcesses))
	for i, p := range controlPlaneProcesses {
		names[i] = p.name
	}
	return strings.Join(names, ", ")
}

// controlPlaneOver reads one figure of each run's control plane CPU (nil: not read) and
// summarises them.
func controlPlaneOver(runs []localrun.ProcessCPU, seconds func(localrun.ProcessCPU) float64) overRuns[float64] {
	readings := make([]reading[float64], len(runs))
	for i, p := range runs {
		readings[i] = reading[float64]{v: seconds(p), ok: p != nil}
	}
	return medianOf(readings)
}

// spellControlPlane spells the CPU seconds of every process together, then each's, in
// controlPlaneProcesses' order: "61.2 s (30.1, 8.2, 12.0, 7.0, 3.9)"; with several runs, each
// the median of the runs, the sum's range in brackets.
func spellControlPlane(runs []localrun.ProcessCPU) string {
	sum := controlPlaneOver(runs, localrun.ProcessCPU.Sum)
	if !sum.ok() {
		return "n/a"
	}
	each := make([]string, len(controlPlaneProcesses))
	for i, p := range controlPlaneProcesses {
		each[i] = decimals1(controlPlaneOver(runs, func(c localrun.ProcessCPU) float64 { return c[p.pid] }).median)
	}
	return sum.spell(decimals1, " s", "n/a") + " (" + strings.Join(each, ", ") + ")"
}

// controlPlaneRow: the CPU seconds the cluster's processes used in the start phase, beside the
// floor's to all its pods Running (the floor with the API's Services, when it was played): what
// the operator's way of starting the jobs costs the control plane (issue 19: scale without
// flooding it). The start phase runs a little past all pods Running (it waits for the status and
// a settled moment), at the idle cluster's 0.1-0.3 cores.
func controlPlaneRow(rs []sizeResult, floor floorResult) sizeRow {
	runs := make([]localrun.ProcessCPU, len(rs))
	for i, r := range rs {
		runs[i] = r.controlPlaneStart
	}
	x := sizeRow{figure: "control plane CPU-seconds in the start phase (" + controlPlaneNames() + ")", measured: spellControlPlane(runs)}
	if sum := controlPlaneOver(runs, localrun.ProcessCPU.Sum); sum.ok() {
		x.values = []float64{sum.median}
	}
	if floor.controlPlane != nil {
		x.target = "floor " + floor.variant() + ", to all pods Running in " + fmtFigure(floor.allRunning) + ": " + spellControlPlane([]localrun.ProcessCPU{floor.controlPlane})
	}
	return x
}

// reconcilesRow: the operator's rounds (reconciles) per job, in the start phase and over the
// size. Each round reads, renders and derives over all of a job's pods: the rounds a job's start
// takes are what its CPU grows with.
func reconcilesRow(rs []sizeResult) sizeRow {
	x := sizeRow{figure: "reconciles per job: start phase; whole size", measured: "n/a"}
	jobs := float64(rs[0].size.jobs + rs[0].size.thenJobs)
	per := func(count func(sizeResult) float64) overRuns[float64] {
		return acrossRuns(rs, func(r sizeResult) (float64, bool) { return count(r) / jobs, r.reconcilesOK && jobs > 0 })
	}
	start := per(func(r sizeResult) float64 { return r.reconcilesStart })
	if !start.ok() {
		return x
	}
	whole := per(func(r sizeResult) float64 { return r.reconciles })
	x.measured = start.spell(decimals2, "", "") + "; whole size " + whole.spell(decimals2, "", "")
	x.values = []float64{start.median}
	return x
}

// acrossRuns reads a figure of each run of a size and summarises them (medianOf); a run not
// played, because an earlier one broke, counts as one that did not measure it.
func acrossRuns[T number](rs []sizeResult, read func(sizeResult) (T, bool)) overRuns[T] {
	readings := make([]reading[T], max(len(rs), rs[0].runs))
	for i, r := range rs {
		readings[i].v, readings[i].ok = read(r)
	}
	return medianOf(readings)
}

// durations reads a time figure of each run.
func durations(rs []sizeResult, read func(sizeResult) figure) overRuns[time.Duration] {
	return acrossRuns(rs, func(r sizeResult) (time.Duration, bool) {
		f := read(r)
		return f.d, f.ok
	})
}

// timeRow is a time figure beside the peer's (none when zero); when no run measured it, it says
// why the first did not.
func timeRow(name string, rs []sizeResult, read func(sizeResult) figure, peer time.Duration) sizeRow {
	d := durations(rs, read)
	x := sizeRow{figure: name, measured: d.spell(secsNum, " s", fmtFigure(read(rs[0])))}
	if d.ok() {
		x.values = []float64{d.median.Seconds()}
	}
	if peer > 0 {
		x.peer = secs(peer)
		if d.ok() {
			x.ahead = ahead(d.median < peer, false)
		}
	}
	return x
}

// completionRow: master Succeeded → job Succeeded, the median over the runs of each run's median
// over its jobs, and likewise of each run's worst.
func completionRow(rs []sizeResult, read func(sizeResult) spread, peer peerFigures) sizeRow {
	x := sizeRow{figure: "master Succeeded → job Succeeded: median, worst", target: "≤ 0.1 s, ≤ 0.3 s", measured: "n/a (no job measured)"}
	median := acrossRuns(rs, func(r sizeResult) (time.Duration, bool) { return read(r).median, read(r).n > 0 })
	worst := acrossRuns(rs, func(r sizeResult) (time.Duration, bool) { return read(r).max, read(r).n > 0 })
	if median.ok() {
		var jobs spread // the jobs measured and in all, summed over the runs measured
		for _, r := range rs {
			if c := read(r); c.n > 0 {
				jobs.n, jobs.of = jobs.n+c.n, jobs.of+c.of
			}
		}
		x.measured = fmt.Sprintf("%s, %s%s", median.spell(secsNum, " s", ""), worst.spell(secsNum, " s", ""), ofJobs(jobs))
		x.values = []float64{median.median.Seconds(), worst.median.Seconds()}
		x.met = metBool(true, median.median <= 100*time.Millisecond && worst.median <= 300*time.Millisecond)
		if peer.completionMedian > 0 {
			x.ahead = ahead(median.median < peer.completionMedian && worst.median < peer.completionWorst,
				median.median <= peer.completionMedian && worst.median <= peer.completionWorst)
		}
	}
	if peer.completionMedian > 0 {
		x.peer = fmt.Sprintf("%s, %s", secs(peer.completionMedian), secs(peer.completionWorst))
	}
	return x
}

// partReads are a part's time figures as a mixed size's rows name them.
var partReads = []struct {
	name string
	read func(partFigures) figure
}{
	{"all pods exist", func(p partFigures) figure { return p.allPodsExist }},
	{"all pods bound to a node", func(p partFigures) figure { return p.allPodsBound }},
	{"every job Running", func(p partFigures) figure { return p.everyJobRunning }},
	{"… the status counting all pods running", func(p partFigures) figure { return p.statusAllRunning }},
	{"all pods Running", func(p partFigures) figure { return p.allPodsRunning }},
}

// mixedRows: a mixed size's rows. The time rows so far are its first part's, and say so; then
// come its second part's, from that part's first create. Each part's time figures have beside
// them the same part's played alone in this run of the bench, if it was.
func (c *comparison) mixedRows(rs []sizeResult, rows []sizeRow) []sizeRow {
	first := rs[0].size.first()
	then, _ := rs[0].size.then()
	firstAlone, thenAlone := c.playedAlone(rs[0].api, first), c.playedAlone(rs[0].api, then)
	alone := func(x sizeRow, alone []sizeResult, read func(partFigures) figure) sizeRow {
		if len(alone) > 0 {
			f := func(r sizeResult) figure { return read(r.partFigures) }
			x.measured += "; alone " + durations(alone, f).spell(secsNum, " s", fmtFigure(f(alone[0])))
		}
		return x
	}
	for i := range rows {
		for _, pr := range partReads {
			if rows[i].figure == pr.name {
				rows[i] = alone(rows[i], firstAlone, pr.read)
			}
		}
		rows[i].figure = first.title() + ": " + rows[i].figure
		rows[i].target, rows[i].met = "", ""
	}
	prefix := "then " + then.title() + ", from their first create: "
	for _, pr := range partReads {
		x := timeRow(prefix+pr.name, rs, func(r sizeResult) figure { return pr.read(r.then) }, 0)
		rows = append(rows, alone(x, thenAlone, pr.read))
	}
	if then.burst() {
		x := completionRow(rs, func(r sizeResult) spread { return r.then.completion }, peerFigures{})
		x.figure = prefix + x.figure
		rows = append(rows, x)
	}
	return rows
}

// playedAlone is the runs of size s played alone with API a in this run of the bench (none if
// it was not).
func (c *comparison) playedAlone(a api, s size) []sizeResult {
	for _, rs := range c.sizes {
		if len(rs) > 0 && rs[0].api == a && rs[0].size == s {
			return rs
		}
	}
	return nil
}

// runWrites are a run's writes in its start phase and over the whole size; why says, when it has
// no writes per pod, why not.
func runWrites(audit auditSummary, r sizeResult) (start, whole writeCounts, why string) {
	start, okStart := audit.of(r.windowName("start"))
	whole, okWhole := audit.of(r.windowName(""))
	switch {
	case !okStart || !okWhole:
		why = "n/a (no audit log)"
	case start.podsCreated == 0:
		why = fmt.Sprintf("n/a (%d writes, no pod created)", start.total)
	}
	return start, whole, why
}

// writesRow: the operator's writes per pod it created, in the start phase and over the whole size;
// a single run's also as writes / pods.
func writesRow(rs []sizeResult, audit auditSummary) sizeRow {
	perPod := func(w writeCounts) float64 { return float64(w.total) / float64(max(w.podsCreated, 1)) }
	start := acrossRuns(rs, func(r sizeResult) (float64, bool) {
		w, _, why := runWrites(audit, r)
		return perPod(w), why == ""
	})
	whole := acrossRuns(rs, func(r sizeResult) (float64, bool) {
		_, w, why := runWrites(audit, r)
		return perPod(w), why == ""
	})
	x := sizeRow{figure: "writes per pod: start phase; whole size"}
	first, _, why := runWrites(audit, rs[0])
	if !start.ok() {
		x.measured = why
		return x
	}
	counts := ""
	if start.runs == 1 {
		counts = fmt.Sprintf(" (%d / %d)", first.total, first.podsCreated)
	}
	x.measured = fmt.Sprintf("%s%s; whole size %s", start.spell(decimals2, "", ""), counts, whole.spell(decimals2, "", ""))
	x.values = []float64{start.median}
	return x
}

// countRows: the 409s and the 429s, from the audit log, the operator's client metrics and the API
// server's; none without the audit log.
func countRows(rs []sizeResult, audit auditSummary, peer peerFigures) (conflicts, throttled sizeRow) {
	conflicts = sizeRow{figure: "409s: audit; client metrics", target: "0"}
	throttled = sizeRow{figure: "429s: audit; client metrics; APF rejections; the write gate's cuts"}
	audited := func(count func(writeCounts) int) overRuns[float64] {
		return acrossRuns(rs, func(r sizeResult) (float64, bool) {
			w, ok := audit.of(r.windowName(""))
			return float64(count(w)), ok
		})
	}
	audit409 := audited(func(w writeCounts) int { return w.conflicts })
	if !audit409.ok() {
		return conflicts, throttled
	}
	rest409 := acrossRuns(rs, func(r sizeResult) (float64, bool) { return r.rest409, r.restOK })
	conflicts.measured = spellCounts(audit409, rest409)
	conflicts.values = []float64{audit409.median}
	conflicts.met = metBool(true, audit409.median == 0 && (!rest409.ok() || rest409.median == 0))
	throttled.measured = spellCounts(audited(func(w writeCounts) int { return w.throttled }),
		acrossRuns(rs, func(r sizeResult) (float64, bool) { return r.rest429, r.restOK }),
		acrossRuns(rs, func(r sizeResult) (float64, bool) { return r.apfRejected, r.apfOK }),
		acrossRuns(rs, func(r sizeResult) (float64, bool) { return r.gateCuts, r.gateOK }))
	if peer.conflicts >= 0 {
		conflicts.peer = fmt.Sprint(peer.conflicts)
		p := float64(peer.conflicts)
		conflicts.ahead = ahead(audit409.median < p, audit409.median <= p)
	}
	return conflicts, throttled
}

// cpuRow: the operator's CPU-seconds per 1,000 pods, over the size and in its start phase, and
// in all.
func cpuRow(rs []sizeResult, peer peerFigures) sizeRow {
	x := sizeRow{figure: "operator CPU-seconds per 1,000 pods (start phase)", measured: "n/a"}
	pods := float64(rs[0].size.pods())
	cpu := func(seconds func(sizeResult) float64) overRuns[float64] {
		return acrossRuns(rs, func(r sizeResult) (float64, bool) { return seconds(r), r.cpuOK && pods > 0 })
	}
	per := cpu(func(r sizeResult) float64 { return r.cpu / pods * 1000 })
	if !per.ok() {
		return x
	}
	start := cpu(func(r sizeResult) float64 { return r.cpuStart / pods * 1000 })
	all := cpu(func(r sizeResult) float64 { return r.cpu })
	x.measured = fmt.Sprintf("%s (%s); %s in all", per.spell(decimals2, " s", ""), start.spell(decimals2, " s", ""), all.spell(decimals2, " s", ""))
	x.values = []float64{per.median}
	if peer.cpuPer1000 > 0 {
		x.target, x.peer = "< the peer's", fmt.Sprintf("%.1f s", peer.cpuPer1000)
		x.met = metBool(true, per.median < peer.cpuPer1000)
		x.ahead = ahead(per.median < peer.cpuPer1000, false)
	}
	return x
}

// rssRow: the operator's resident memory when every job is Running with all its pods, and its
// peak.
func rssRow(rs []sizeResult, peer peerFigures) sizeRow {
	kb := func(read func(sizeResult) int64) overRuns[int64] {
		return acrossRuns(rs, func(r sizeResult) (int64, bool) {
			v := read(r)
			return v, v > 0
		})
	}
	running := kb(func(r sizeResult) int64 { return r.rssRunningKB })
	peak := kb(func(r sizeResult) int64 { return r.hwmKB })
	x := sizeRow{figure: "operator RSS when Running; peak (VmHWM)", measured: running.spell(mbNum, " MB", "n/a") + "; " + peak.spell(mbNum, " MB", "n/a")}
	if running.ok() {
		x.values = []float64{float64(running.median) / 1024}
	}
	if rs[0].size.pods() >= 5000 {
		x.target = "< 100 MB"
		x.met = metBool(running.ok(), running.median < 100*1024)
	}
	if peer.rssMB > 0 {
		x.peer = fmt.Sprintf("%.0f MB", peer.rssMB)
		x.ahead = ahead(running.ok() && float64(running.median)/1024 < peer.rssMB, false)
	}
	return x
}

// apiFloorOf is the floor of size s with the Services of a's kinds (a T9k job's Service, a
// kubeflow.org kind's Service per pod), if it was played; else the pods alone.
func (c *comparison) apiFloorOf(s size, a api) (floorResult, bool) {
	shape := map[api]floorServices{apiT9k: servicePerGroup, apiKubeflow: servicePerPod}[a]
	if f, ok := c.floorWith(s, shape); ok {
		return f, true
	}
	return c.floorOf(s)
}

// floorOf is the floor of size s: its pods alone.
func (c *comparison) floorOf(s size) (floorResult, bool) { return c.floorWith(s, podsAlone) }

// floorWith is the floor of size s played with services, if it was.
func (c *comparison) floorWith(s size, services floorServices) (floorResult, bool) {
	for _, f := range c.floors {
		if f.size == s && f.services == services {
			return f, true
		}
	}
	return floorResult{}, false
}

// writesTables: the operator's write requests by resource and verb, per API and size (the whole
// size), a column per run: a median of each count would not add up.
func (c *comparison) writesTables(b *strings.Builder, audit auditSummary) {
	if !audit.read {
		return
	}
	perRun := ""
	if c.o.runs > 1 {
		perRun = "; a column per run"
	}
	fmt.Fprintf(b, "## The operator's write requests (audit log; first create → the operator stopped%s)\n\n", perRun)
	var cols []sizeResult
	kinds := map[string]bool{}
	for _, r := range slices.Concat(c.sizes...) {
		if w, ok := audit.of(r.windowName("")); ok {
			cols = append(cols, r)
			for k := range w.byKind {
				kinds[k] = true
			}
		}
	}
	b.WriteString("| |")
	for _, r := range cols {
		fmt.Fprintf(b, " %s |", r.label())
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(cols)) + "\n")
	line := func(label string, cell func(w writeCounts, r sizeResult) string) {
		fmt.Fprintf(b, "| %s |", label)
		for _, r := range cols {
			w, _ := audit.of(r.windowName(""))
			fmt.Fprintf(b, " %s |", cell(w, r))
		}
		b.WriteString("\n")
	}
	line("length", func(_ writeCounts, r sizeResult) string { return secs(r.end.Sub(r.created)) })
	for _, k := range slices.Sorted(maps.Keys(kinds)) {
		line(k, func(w writeCounts, _ sizeResult) string { return fmt.Sprint(w.byKind[k]) })
	}
	line("**total**", func(w writeCounts, _ sizeResult) string { return fmt.Sprintf("**%d**", w.total) })
	line("answered outside 2xx", func(w writeCounts, _ sizeResult) string { return fmt.Sprint(w.failed) })
	line("of which 409", func(w writeCounts, _ sizeResult) string {
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(w.conflictsByKind)) {
			parts = append(parts, fmt.Sprintf("%d %s", w.conflictsByKind[k], k))
		}
		if len(parts) == 0 {
			return "0"
		}
		return strings.Join(parts, ", ")
	})
	line("of which 429", func(w writeCounts, _ sizeResult) string { return fmt.Sprint(w.throttled) })
	b.WriteString("\n")
}

func auditCount(a auditSummary, window string, count func(writeCounts) int) string {
	w, ok := a.of(window)
	if !ok {
		return "n/a"
	}
	return fmt.Sprint(count(w))
}

func fmtCount(v float64, ok bool) string {
	if !ok {
		return "n/a"
	}
	return fmt.Sprintf("%.0f", v)
}

// secs: seconds with as many decimals as the figure needs to read (0.043 s, 12.4 s).
func secs(d time.Duration) string { return secsNum(d) + " s" }

// secsNum is secs without the unit, for a range: 0.043, 12.4.
func secsNum(d time.Duration) string {
	if d < 10*time.Second && d > -10*time.Second {
		return fmt.Sprintf("%.3f", d.Seconds())
	}
	return fmt.Sprintf("%.1f", d.Seconds())
}

func decimals2(v float64) string { return fmt.Sprintf("%.2f", v) }

func decimals1(v float64) string { return fmt.Sprintf("%.1f", v) }

// countNum spells a count, or a median of counts, which over an even number of runs may end in .5.
func countNum(v float64) string {
	if v == math.Trunc(v) {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}

// spellCounts joins counts over the runs: "0; 2 [1-3]; n/a".
func spellCounts(counts ...overRuns[float64]) string {
	parts := make([]string, len(counts))
	for i, c := range counts {
		parts[i] = c.spell(countNum, "", "n/a")
	}
	return strings.Join(parts, "; ")
}

// ahead: "yes" when better, "level" when as good, else a bold "no".
func ahead(better, asGood bool) string {
	switch {
	case better:
		return "yes"
	case asGood:
		return "level"
	default:
		return "**no**"
	}
}
