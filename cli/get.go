package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// runGet is `trainyard get`: the jobs of all four kinds in one table, with the reason a job waits;
// with --watch, then a row each time what a job's row shows changes.
func runGet(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("trainyard get", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cf clusterFlags
	cf.bind(fs, true)
	wide := fs.Bool("wide", false, "also print the reason's message")
	var watch bool
	fs.BoolVar(&watch, "watch", false, "after the table, print a job's row again each time it changes (phase, running, restarts, reason), until Ctrl-C")
	fs.BoolVar(&watch, "w", false, "shorthand for --watch")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		// Note: kubectl's habit (get pytorchjobs, get JOB) printed every job, the argument unread.
		return fmt.Errorf("get takes no argument (%q): it lists the jobs of all four kinds; trainyard describe [KIND/]JOB shows one", strings.Join(pos, " "))
	}
	s, err := cf.connect()
	if err != nil {
		return err
	}
	ctx, cancel := interruptible()
	defer cancel()
	return s.get(ctx, table{all: cf.allNamespaces, wide: *wide}, watch, stdout, stderr)
}

// get prints the table, then, when watch is set, the rows that change until ctx ends.
func (s *session) get(ctx context.Context, t table, watch bool, stdout, stderr io.Writer) error {
	jobs, versions, err := s.listJobs(ctx, t.all)
	if err != nil {
		return err
	}
	if len(jobs) == 0 {
		where := "namespace " + s.namespace
		if t.all {
			where = "any namespace"
		}
		fmt.Fprintf(stderr, "No training jobs in %s.\n", where)
		if !watch {
			return nil
		}
	}
	now := time.Now()
	shown := map[string]string{}
	rows := []string{t.header()}
	for _, j := range jobs {
		shown[key(j)] = t.state(j)
		rows = append(rows, t.row(j, now))
	}
	if !watch {
		w := tabwriter.NewWriter(stdout, 0, 8, columnPadding, ' ', 0)
		for _, row := range rows {
			fmt.Fprintln(w, row)
		}
		return w.Flush()
	}
	// The rows to come are laid out in the table's columns: those start as wide as their
	// longest known value (a kind, a phase, a common reason), so that the rows of jobs made
	// after an empty or narrow table line up with it, and widen for a longer field.
	widths := watchSeed(t.header())
	for _, row := range rows {
		widths = columnWidths(widths, row)
	}
	for _, row := range rows {
		fmt.Fprintln(stdout, aligned(widths, row))
	}
	return s.watchJobs(ctx, t.all, jobs, versions, func(j *job, deleted bool) {
		if !deleted {
			s.countLivePods(ctx, []*job{j}, t.all) // a kubeflow.org job that has just finished
		}
		var row string
		switch state := t.state(j); {
		case deleted:
			row = t.deletedRow(j, time.Now())
			delete(shown, key(j))
		case shown[key(j)] == state:
			return // a change the row does not show (a pod's entry, a condition's time)
		default:
			row = t.row(j, time.Now())
			shown[key(j)] = state
		}
		// Each row is printed as it comes, in the table's columns, which widen for a longer
		// field from this row on.
		widths = columnWidths(widths, row)
		fmt.Fprintln(stdout, aligned(widths, row))
	})
}

// watchSeed is the widths get -w's columns start with: a header's, or the longest value a
// column is known to take (kind, phase, a common reason).
func watchSeed(header string) []int {
	longest := map[string]int{"KIND": len("TensorFlowTrainingJob"), "PHASE": len("Succeeded"), "REASON": len("BackoffLimitExceeded")}
	var widths []int
	for _, f := range strings.Split(header, "\t") {
		widths = append(widths, max(len(f), longest[f]))
	}
	return widths
}

// columnPadding is the space between two columns, as the table's tabwriter puts it.
const columnPadding = 3

// columnWidths widens widths to hold each tab-separated field of row.
func columnWidths(widths []int, row string) []int {
	for i, f := range strings.Split(row, "\t") {
		if i == len(widths) {
			widths = append(widths, 0)
		}
		widths[i] = max(widths[i], len(f))
	}
	return widths
}

// aligned lays row out in columns of widths, as the table above it was.
func aligned(widths []int, row string) string {
	fields := strings.Split(row, "\t")
	var b strings.Builder
	for i, f := range fields {
		b.WriteString(f)
		if i < len(fields)-1 {
			width := len(f)
			if i < len(widths) {
				width = max(width, widths[i])
			}
			b.WriteString(strings.Repeat(" ", width-len(f)+columnPadding))
		}
	}
	return b.String()
}

// table is how `trainyard get` lays out a job's row.
type table struct{ all, wide bool }

func (t table) header() string {
	h := "KIND\tNAME\tPHASE\tRUNNING\tRESTARTS\tREASON\tAGE"
	if t.all {
		h = "NAMESPACE\t" + h
	}
	if t.wide {
		h += "\tMESSAGE"
	}
	return h
}

func (t table) row(j *job, now time.Time) string {
	return t.format(j, j.phase(), age(j.obj.GetCreationTimestamp(), now))
}

// state is what the row shows of the job but its age: a change of it is worth a row.
func (t table) state(j *job) string {
	return t.format(j, j.phase(), "")
}

// deletedRow is the job's last row, its phase Deleted, as `kubectl get -w` shows a deletion.
func (t table) deletedRow(j *job, now time.Time) string {
	return t.format(j, "Deleted", age(j.obj.GetCreationTimestamp(), now))
}

func (t table) format(j *job, phase, ago string) string {
	reason, message := j.why()
	if reason == "" {
		reason = "-"
	}
	row := fmt.Sprintf("%s\t%s\t%s\t%d/%d\t%d\t%s\t%s", j.info.kind, j.obj.GetName(), phase,
		j.running(), j.desired(), j.restarts(), reason, ago)
	if t.all {
		row = j.obj.GetNamespace() + "\t" + row
	}
	if t.wide {
		row += "\t" + message
	}
	return row
}

// key names a job among every kind's.
func key(j *job) string { return j.info.kind + "/" + j.obj.GetNamespace() + "/" + j.obj.GetName() }

// watchJobs calls seen for every change of a job of any installed kind (deleted for a deletion),
// one call at a time, from the listing (listed, and versions: its resourceVersion by kind), until
// ctx ends. A watch the server closes is opened again where it stopped; one whose
// resourceVersion expired lists the kind again and goes on from that list.
func (s *session) watchJobs(ctx context.Context, all bool, listed []*job, versions map[string]string, seen func(*job, bool)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex
	emit := func(j *job, deleted bool) {
		mu.Lock()
		defer mu.Unlock()
		seen(j, deleted)
	}
	errs := make(chan error, len(kinds))
	n := 0
	for i := range kinds {
		k := &kinds[i]
		rv, installed := versions[k.kind]
		if !installed {
			continue
		}
		n++
		known := map[string]*job{}
		for _, j := range listed {
			if j.info == k {
				known[key(j)] = j
			}
		}
		go func() { errs <- s.watchKind(ctx, k, all, rv, known, emit) }()
	}
	var first error
	for range n {
		if err := <-errs; err != nil && first == nil {
			first = err
			cancel() // one kind failing for good ends the others
		}
	}
	return first
}

// watchKind is watchJobs for one kind. known holds the kind's jobs as last seen, so that a job
// deleted while the watch was being opened again is still reported.
func (s *session) watchKind(ctx context.Context, k *kindInfo, all bool, rv string, known map[string]*job, emit func(*job, bool)) error {
	for {
		opts := append(s.scope(all), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true}})
		w, err := s.client.Watch(ctx, k.newList(), opts...)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("watching %s: %w", k.kind, err)
		}
		rv = drain(ctx, w, k, rv, known, emit)
		w.Stop()
		if ctx.Err() != nil {
			return nil
		}
		if rv != "" {
			continue // the server ended the watch (its timeout): open it again where it stopped
		}
		jobs, listed, err := s.listKind(ctx, k, all)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("listing %s: %w", k.kind, err)
		}
		now := map[string]bool{}
		for _, j := range jobs {
			now[key(j)] = true
		}
		for name, last := range known {
			if !now[name] {
				emit(last, true)
				delete(known, name)
			}
		}
		for _, j := range jobs {
			known[key(j)] = j
			emit(j, false)
		}
		rv = listed
	}
}

// drain reports the events of the watch opened at rv until it ends, and returns the
// resourceVersion to open it again from, or "" when the server said it cannot go on from there (an error event: the version
// expired, 410 Gone).
func drain(ctx context.Context, w watch.Interface, k *kindInfo, rv string, known map[string]*job, emit func(*job, bool)) string {
	for {
		var ev watch.Event
		select {
		case <-ctx.Done():
			return rv
		case e, open := <-w.ResultChan():
			if !open {
				return rv
			}
			ev = e
		}
		o, ok := ev.Object.(client.Object)
		if ev.Type == watch.Error || !ok {
			return ""
		}
		rv = o.GetResourceVersion()
		if ev.Type == watch.Bookmark {
			continue
		}
		j := &job{info: k, obj: o, model: k.model(o)}
		if ev.Type == watch.Deleted {
			delete(known, key(j))
		} else {
			known[key(j)] = j
		}
		emit(j, ev.Type == watch.Deleted)
	}
}
