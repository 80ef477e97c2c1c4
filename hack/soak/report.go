package main

import (
	"fmt"
	"sort"
	"strings"
	"time"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
	"github.com/trainyard/trainyard/hack/internal/localrun"
)

// results is what the run did and found, filled in as it goes, so a broken run still reports.
type results struct {
	o                                           options
	repo                                        string
	commit                                      string // read at the start: the code that ran
	tally                                       *tally
	checker                                     *checker
	supervisor                                  *supervisor
	started, chaosStarted, chaosEnded, finished time.Time
	startIdle, endIdle                          sample
	violations                                  []violation
	notes                                       []string
	goroutineBound, rssBoundKB                  float64
	warmChecks                                  int
}

// sample is one reading of an operator process.
type sample struct {
	process    int
	goroutines float64
	rssKB      int64
}

func (s sample) String() string {
	if s.process == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%s RSS, %.0f goroutines (process %d)", fmtMB(s.rssKB), s.goroutines, s.process)
}

// judgeResources checks that the operator's memory and goroutines stay flat: idle at the end
// against idle at the start, and each process at its end against its own warm-up.
func (r *results) judgeResources(chk *checker, incs []incarnation) {
	r.rssBoundKB = 1.5*float64(r.startIdle.rssKB) + 20*1024
	if float64(r.endIdle.rssKB) > r.rssBoundKB {
		chk.report(invRSS, "operator", "idle RSS %s at the end (process %d), above 1.5 x %s + 20 MB = %s at the start",
			fmtMB(r.endIdle.rssKB), r.endIdle.process, fmtMB(r.startIdle.rssKB), fmtMB(int64(r.rssBoundKB)))
	}
	r.goroutineBound = r.startIdle.goroutines + 25
	if r.endIdle.goroutines > r.goroutineBound {
		chk.report(invGoroutines, "operator", "%.0f goroutines idle at the end (process %d), above %.0f idle at the start + 25",
			r.endIdle.goroutines, r.endIdle.process, r.startIdle.goroutines)
	}
	for _, inc := range incs {
		if !inc.warmed || inc.endGoroutines == 0 {
			continue
		}
		r.warmChecks++
		if bound := 1.5*inc.warmGoroutines + 50; inc.endGoroutines > bound {
			chk.report(invGoroutines, fmt.Sprintf("operator process %d", inc.n), "%.0f goroutines at its end (%s), above 1.5 x %.0f at its warm-up + 50",
				inc.endGoroutines, inc.how, inc.warmGoroutines)
		}
	}
}

// markdown renders the table, the violations, the operator processes and notes.
func (r *results) markdown() string {
	t := r.tally
	t.mu.Lock()
	defer t.mu.Unlock()
	var b strings.Builder
	o := r.o
	flags := strings.Join(o.operatorFlags, " ")
	if flags == "" {
		flags = "default flags"
	}
	fmt.Fprintf(&b, "# make soak\n\nRun %s, commit %s, %s; %d KWOK nodes; seed %d.  \nOperator: %s (%s), killed every %s-%s; at most %d jobs; grace %s.\n\n",
		r.started.UTC().Format("2006-01-02 15:04 UTC"), r.commit, localrun.Machine(), o.nodes, o.seed,
		o.operatorBin, flags, o.killMin, o.killMax, o.maxJobs, o.grace)

	rounds, evaluations := 0, 0
	if r.checker != nil {
		rounds, evaluations, _ = r.checker.count()
		r.violations = r.checker.all()
	}
	finished := r.finishedJobs()
	created, byKind := 0, []string{}
	for _, k := range allKinds {
		created += t.created[k]
		byKind = append(byKind, fmt.Sprintf("%d %s", t.created[k], k))
	}
	incs := []incarnation{}
	if r.supervisor != nil {
		incs = r.supervisor.all()
	}
	var peak int64
	for _, inc := range incs {
		peak = max(peak, inc.peakRSSKB)
	}
	chaos := "n/a"
	if !r.chaosStarted.IsZero() && !r.chaosEnded.IsZero() {
		chaos = r.chaosEnded.Sub(r.chaosStarted).Round(time.Second).String()
	}
	faults := t.podExits + t.podDeletes + t.kills
	rows := [][2]string{
		{"duration of the chaos (then settling, clean-up and idle)", fmt.Sprintf("%s (whole run %s)", chaos, r.finished.Sub(r.started).Round(time.Second))},
		{"seed", fmt.Sprint(o.seed)},
		{"jobs created", fmt.Sprintf("%d: %s", created, strings.Join(byKind, ", "))},
		{"jobs finished: succeeded, failed (by reason)", finished},
		{"pods created (each restart and replacement is a new pod)", fmt.Sprint(r.podsSeen())},
		{"scales (scale subresource) / pauses / resumes / job deletions", fmt.Sprintf("%d / %d / %d / %d", t.scales, t.pauses, t.resumes, t.deletes)},
		{"faults injected: pods made to exit with a random code / pods deleted / operator SIGKILLs", fmt.Sprintf("%d: %d / %d / %d", faults, t.podExits, t.podDeletes, t.kills)},
		{"actions the API server refused (the job had finished or gone)", fmt.Sprint(t.refused)},
		{"invariant checks run", fmt.Sprintf("%d rounds, %d evaluations of %d invariants; goroutines of %d processes against their warm-up", rounds, evaluations, len(invariants), r.warmChecks)},
		{"**invariant violations** (target 0)", fmt.Sprintf("**%d**", len(r.violations))},
		{"operator RSS idle: start, end (bound)", fmt.Sprintf("%s, %s (≤ %s)", fmtMB(r.startIdle.rssKB), fmtMB(r.endIdle.rssKB), fmtMB(int64(r.rssBoundKB)))},
		{"operator goroutines idle: start, end (bound)", fmt.Sprintf("%.0f, %.0f (≤ %.0f)", r.startIdle.goroutines, r.endIdle.goroutines, r.goroutineBound)},
		{"operator processes (peak RSS of any)", fmt.Sprintf("%d (%s)", len(incs), fmtMB(peak))},
	}
	b.WriteString("| | |\n|---|---|\n")
	for _, row := range rows {
		fmt.Fprintf(&b, "| %s | %s |\n", row[0], row[1])
	}
	b.WriteString("\n")

	if len(r.violations) > 0 {
		b.WriteString("## Violations\n\n")
		for _, v := range r.violations {
			fmt.Fprintf(&b, "- %s **%s** %s: %s\n", clock(v.at), v.invariant, v.subject, v.evidence)
		}
		b.WriteString("\n")
	}

	b.WriteString("## Operator processes\n\n| process | pid | up | goroutines warm-up → end | RSS warm-up → end (peak) | ended |\n|---|---|---|---|---|---|\n")
	for _, inc := range incs {
		up := "-"
		if !inc.ready.IsZero() {
			up = fmt.Sprintf("%s after the start", inc.ready.Sub(r.started).Round(time.Second))
		}
		fmt.Fprintf(&b, "| %d | %d | %s | %s → %s | %s → %s (%s) | %s |\n", inc.n, inc.pid, up,
			fmtCount(inc.warmGoroutines), fmtCount(inc.endGoroutines), fmtMB(inc.warmRSSKB), fmtMB(inc.endRSSKB), fmtMB(inc.peakRSSKB), or(inc.how, "running"))
	}
	b.WriteString("\n## Invariants\n\n")
	for _, inv := range invariants {
		fmt.Fprintf(&b, "- `%s`: %s\n", inv.name, inv.says)
	}
	notes := append([]string{}, r.notes...)
	for _, msg := range t.refusals {
		notes = append(notes, "refused: "+msg)
	}
	if len(notes) > 0 {
		b.WriteString("\n## Notes\n\n")
		for _, n := range notes {
			fmt.Fprintf(&b, "- %s\n", n)
		}
	}
	return b.String()
}

// podsSeen counts the pods the watches saw, by UID.
func (r *results) podsSeen() int {
	if r.checker == nil {
		return 0
	}
	r.checker.w.mu.Lock()
	defer r.checker.w.mu.Unlock()
	return len(r.checker.w.pods)
}

// finishedJobs counts the jobs seen to finish, by outcome and reason.
func (r *results) finishedJobs() string {
	if r.checker == nil {
		return "n/a"
	}
	w := r.checker.w
	w.mu.Lock()
	defer w.mu.Unlock()
	succeeded, failed := 0, 0
	reasons := map[string]int{}
	for _, j := range w.jobs {
		switch j.terminal {
		case string(batch.JobSucceeded):
			succeeded++
		case string(batch.JobFailed):
			failed++
			reasons[or(j.st.reason, "no reason")]++
		}
	}
	var parts []string
	for reason, n := range reasons {
		parts = append(parts, fmt.Sprintf("%d %s", n, reason))
	}
	sort.Strings(parts)
	return fmt.Sprintf("%d, %d (%s)", succeeded, failed, strings.Join(parts, ", "))
}

func fmtMB(kb int64) string {
	if kb <= 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.1f MB", float64(kb)/1024)
}

func fmtCount(n float64) string {
	if n == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.0f", n)
}
