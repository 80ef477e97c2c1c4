package main

import (
	"fmt"
	"maps"
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
	fmt.Fprintf(&b, "Cluster: hack/cluster.sh, %d KWOK nodes of %d pods and %d nvidia.com/gpu; the control plane, the operator and the bench share the machine.  \n",
		o.nodes, o.nodePods, o.nodeGPUs)
	fmt.Fprintf(&b, "Jobs: 1 Master + N Workers, restartPolicy OnFailure, 1 nvidia.com/gpu per pod; a burst's masters exit 0 %s after they start. ", o.masterRun)
	flags := strings.Join(o.operatorFlags, " ")
	if flags == "" {
		flags = "(its default flags)"
	}
	fmt.Fprintf(&b, "Operator: `%s %s`, a fresh process per API and size.  \n", o.operatorBin, flags)
	fmt.Fprintf(&b, "Identity and APF: %s.  \n", apf)
	if o.floor {
		fmt.Fprintf(&b, "Floor: the same pods created by a bare client (client rate limit off, %d goroutines) under the same ServiceAccount, no operator.\n", o.floorConcurrency)
	}
	var off []string
	for _, s := range o.sizes {
		if _, ok := kubeflowTuned[s.String()]; !ok {
			off = append(off, s.String())
		}
	}
	if len(off) > 0 {
		fmt.Fprintf(&b, "\nSizes %s are not issue 19's (%s): Kubeflow's figures do not apply to them, and their figures only check the harness.\n",
			strings.Join(off, ", "), sizePresets["full"])
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
		b.WriteString("| size | all pods exist | all pods Running (every group Running) | 429s: audit (writes); APF rejections |\n|---|---|---|---|\n")
		for _, f := range c.floors {
			fmt.Fprintf(&b, "| %s | %s | %s | %s; %s |\n", f.size.title(), fmtFigure(f.allPodsExist), fmtFigure(f.allRunning),
				auditCount(floorAudit, f.windowName(), func(w writeCounts) int { return w.throttled }), fmtCount(f.apfRejected, f.apfOK))
		}
		b.WriteString("\n")
	}
	for _, a := range c.o.apis {
		c.apiTable(&b, a, opAudit)
	}
	b.WriteString("Figures: times run from the first create call to what the bench's watches first saw (the last pod, the last job's status.phase Running " +
		"(kubeflow.org: condition Running True), the last job's status counting all its pods running (aggregate.running; kubeflow.org: the sum of " +
		"replicaStatuses' active), the last pod Running). Completion: per burst job, the status first seen Succeeded minus its master first seen Succeeded. " +
		"Writes per pod: the operator's write requests in the audit log (user agent trainyard) from the first create to every job Running with all its pods " +
		"(settled, or cut short by a master's exit), over the pods it created; then over the whole size (completion and deletion too). " +
		"409s and 429s: the audit log's answers to the operator's writes (it logs no reads) and the operator's own client-go metric rest_client_requests_total " +
		"(reads too; client-go retries a 429 itself); APF rejections: apiserver_flowcontrol_rejected_requests_total of the operator's priority level. " +
		"CPU: the operator's utime + stime (/proc) from the first create until the jobs and pods are gone, per 1,000 pods; in brackets the start phase's. " +
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
}

func (c *comparison) apiTable(b *strings.Builder, a api, audit auditSummary) {
	fmt.Fprintf(b, "## %s\n\n", a.kind())
	b.WriteString("| size | figure | measured | target | met | Kubeflow tuned | ahead of it |\n|---|---|---|---|---|---|---|\n")
	for _, r := range c.sizes {
		if r.api != a {
			continue
		}
		for i, x := range c.sizeRows(r, audit) {
			first := ""
			if i == 0 {
				first = "**" + r.size.title() + "**"
			}
			fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s |\n", first, x.figure, dash(x.measured), dash(x.target), dash(x.met), dash(x.peer), dash(x.ahead))
		}
		if r.broke != "" {
			fmt.Fprintf(b, "| | **the size broke** | %s | | | | |\n", strings.ReplaceAll(r.broke, "|", "/"))
		}
	}
	b.WriteString("\n")
}

func (c *comparison) sizeRows(r sizeResult, audit auditSummary) []sizeRow {
	peer := peerOf(r.size)
	rows := []sizeRow{timeRow("all pods exist", r.allPodsExist, peer.allPodsExist)}

	running := timeRow("every job Running", r.everyJobRunning, peer.everyJobRunning)
	if f, ok := c.floorOf(r.size); ok && f.allRunning.ok {
		limit := time.Duration(1.2 * float64(f.allRunning.d))
		running.target = fmt.Sprintf("≤ 1.2 x floor %s = %s", secs(f.allRunning.d), secs(limit))
		running.met = metBool(r.everyJobRunning.ok, r.everyJobRunning.d <= limit)
	}
	rows = append(rows, running,
		sizeRow{figure: "… the status counting all pods running", measured: fmtSecs(r.statusAllRunning)},
		timeRow("all pods Running", r.allPodsRunning, peer.allPodsRunning))

	if r.size.burst() {
		x := sizeRow{figure: "master Succeeded → job Succeeded: median, worst", target: "≤ 0.1 s, ≤ 0.3 s", measured: "n/a (no job measured)"}
		if cs := r.completion; cs.n > 0 {
			x.measured = fmt.Sprintf("%s, %s%s", secs(cs.median), secs(cs.max), ofJobs(cs))
			x.met = metBool(true, cs.median <= 100*time.Millisecond && cs.max <= 300*time.Millisecond)
			if peer.completionMedian > 0 {
				x.ahead = ahead(cs.median < peer.completionMedian && cs.max < peer.completionWorst,
					cs.median <= peer.completionMedian && cs.max <= peer.completionWorst)
			}
		}
		if peer.completionMedian > 0 {
			x.peer = fmt.Sprintf("%s, %s", secs(peer.completionMedian), secs(peer.completionWorst))
		}
		rows = append(rows, x)
	}

	writes := sizeRow{figure: "writes per pod: start phase; whole size"}
	start, okStart := audit.of(r.windowName("start"))
	whole, okWhole := audit.of(r.windowName(""))
	switch {
	case !okStart || !okWhole:
		writes.measured = "n/a (no audit log)"
	case start.podsCreated == 0:
		writes.measured = fmt.Sprintf("n/a (%d writes, no pod created)", start.total)
	default:
		writes.measured = fmt.Sprintf("%.2f (%d / %d); whole size %.2f", float64(start.total)/float64(start.podsCreated), start.total, start.podsCreated,
			float64(whole.total)/float64(max(whole.podsCreated, 1)))
	}

	conflicts := sizeRow{figure: "409s: audit; client metrics", target: "0"}
	throttled := sizeRow{figure: "429s: audit; client metrics; APF rejections; the write gate's cuts"}
	if okWhole {
		conflicts.measured = fmt.Sprintf("%d; %s", whole.conflicts, fmtCount(r.rest409, r.restOK))
		conflicts.met = metBool(true, whole.conflicts == 0 && (!r.restOK || r.rest409 == 0))
		throttled.measured = fmt.Sprintf("%d; %s; %s; %s", whole.throttled, fmtCount(r.rest429, r.restOK), fmtCount(r.apfRejected, r.apfOK), fmtCount(r.gateCuts, r.gateOK))
		if peer.conflicts >= 0 {
			conflicts.peer = fmt.Sprint(peer.conflicts)
			conflicts.ahead = ahead(whole.conflicts < peer.conflicts, whole.conflicts <= peer.conflicts)
		}
	}
	rows = append(rows, writes, conflicts, throttled)

	cpu := sizeRow{figure: "operator CPU-seconds per 1,000 pods (start phase)", measured: "n/a"}
	if r.cpuOK && r.size.pods() > 0 {
		per := r.cpu / float64(r.size.pods()) * 1000
		cpu.measured = fmt.Sprintf("%.2f s (%.2f s); %.2f s in all", per, r.cpuStart/float64(r.size.pods())*1000, r.cpu)
		if peer.cpuPer1000 > 0 {
			cpu.target, cpu.peer = "< the peer's", fmt.Sprintf("%.1f s", peer.cpuPer1000)
			cpu.met = metBool(true, per < peer.cpuPer1000)
			cpu.ahead = ahead(per < peer.cpuPer1000, false)
		}
	}
	rss := sizeRow{figure: "operator RSS when Running; peak (VmHWM)", measured: fmt.Sprintf("%s; %s", fmtRSS(r.rssRunningKB), fmtRSS(r.hwmKB))}
	if r.size.pods() >= 5000 {
		rss.target = "< 100 MB"
		rss.met = metBool(r.rssRunningKB > 0, r.rssRunningKB < 100*1024)
	}
	if peer.rssMB > 0 {
		rss.peer = fmt.Sprintf("%.0f MB", peer.rssMB)
		rss.ahead = ahead(r.rssRunningKB > 0 && float64(r.rssRunningKB)/1024 < peer.rssMB, false)
	}
	return append(rows, cpu, rss)
}

// timeRow is a duration beside the peer's (none when zero).
func timeRow(name string, f figure, peer time.Duration) sizeRow {
	x := sizeRow{figure: name, measured: fmtSecs(f)}
	if peer > 0 {
		x.peer = secs(peer)
		if f.ok {
			x.ahead = ahead(f.d < peer, false)
		}
	}
	return x
}

func (c *comparison) floorOf(s size) (floorResult, bool) {
	for _, f := range c.floors {
		if f.size == s {
			return f, true
		}
	}
	return floorResult{}, false
}

// writesTables: the operator's write requests by resource and verb, per API and size (the whole
// size).
func (c *comparison) writesTables(b *strings.Builder, audit auditSummary) {
	if !audit.read {
		return
	}
	b.WriteString("## The operator's write requests (audit log; first create → the jobs and pods gone)\n\n")
	var cols []sizeResult
	kinds := map[string]bool{}
	for _, r := range c.sizes {
		if w, ok := audit.of(r.windowName("")); ok {
			cols = append(cols, r)
			for k := range w.byKind {
				kinds[k] = true
			}
		}
	}
	b.WriteString("| |")
	for _, r := range cols {
		fmt.Fprintf(b, " %s %s |", r.api, r.size)
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
func secs(d time.Duration) string {
	if d < 10*time.Second && d > -10*time.Second {
		return fmt.Sprintf("%.3f s", d.Seconds())
	}
	return fmt.Sprintf("%.1f s", d.Seconds())
}

func fmtSecs(f figure) string {
	if !f.ok {
		return fmtFigure(f)
	}
	return secs(f.d)
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
