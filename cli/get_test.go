package cli

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
	kubeflowv1 "github.com/trainyard/trainyard/apis/kubeflow/v1"
	"github.com/trainyard/trainyard/controller"
)

// lockedBuffer is a bytes.Buffer written by one goroutine and read by another.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// rowsOf are the output's lines as their whitespace-separated fields joined by single spaces.
func rowsOf(out string) []string {
	var rows []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		rows = append(rows, strings.Join(strings.Fields(line), " "))
	}
	return rows
}

// waitRows waits until out has n lines.
func waitRows(t *testing.T, out *lockedBuffer, n int) []string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		rows := rowsOf(out.String())
		if len(rows) >= n || time.Now().After(deadline) {
			return rows
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// watching is `trainyard get --watch` running against a fake API server.
type watching struct {
	c      client.WithWatch
	ctx    context.Context
	out    lockedBuffer
	cancel context.CancelFunc
	done   chan error
}

// startGetWatch runs get --watch against a fake API server holding objs and returns once its
// table has rows lines (the header too) and its watch of every kind is open: the fake client's
// watches start from the moment they open, whatever resourceVersion they are given, so nothing
// may change before.
func startGetWatch(t *testing.T, rows int, objs ...client.Object) (*watching, []string) {
	t.Helper()
	opened := make(chan struct{}, len(kinds))
	w := &watching{done: make(chan error)}
	w.c = fake.NewClientBuilder().WithScheme(controller.Scheme()).WithObjects(objs...).
		WithInterceptorFuncs(interceptor.Funcs{
			Watch: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) (watch.Interface, error) {
				defer func() { opened <- struct{}{} }()
				return c.Watch(ctx, list, opts...)
			},
		}).Build()
	s := &session{client: w.c, namespace: "ns"}
	w.ctx, w.cancel = context.WithCancel(context.Background())
	t.Cleanup(w.cancel)
	var errOut lockedBuffer
	go func() { w.done <- s.get(w.ctx, table{}, true, &w.out, &errOut) }()
	table := waitRows(t, &w.out, rows)
	for range kinds {
		<-opened
	}
	return w, table
}

// stop ends the watch and returns get's error.
func (w *watching) stop() error {
	w.cancel()
	return <-w.done
}

// `trainyard get --watch`: the table, then a row for each change a row shows (not for one it
// does not), a new job of another kind, and a deletion, until the context ends.
func TestGetWatch(t *testing.T) {
	w, rows := startGetWatch(t, 2, ptj(nil, batch.JobPending))
	if len(rows) != 2 || !strings.HasPrefix(rows[1], "PyTorchTrainingJob p Pending 0/0 0 -") {
		t.Fatalf("the table:\n%s", w.out.String())
	}
	c, ctx, out := w.c, w.ctx, &w.out

	update := func(mutate func(*batch.PyTorchTrainingJob)) {
		t.Helper()
		j := &batch.PyTorchTrainingJob{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "p"}, j); err != nil {
			t.Fatal(err)
		}
		mutate(j)
		if err := c.Update(ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	update(func(j *batch.PyTorchTrainingJob) { j.Status.Tasks = []batch.TaskStatus{{Type: "master"}} }) // not in the row
	update(func(j *batch.PyTorchTrainingJob) { j.Status.Phase = batch.JobRunning })
	tf := &kubeflowv1.TFJob{}
	tf.Namespace, tf.Name = "ns", "tf"
	if err := c.Create(ctx, tf); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, ptj(nil, "")); err != nil {
		t.Fatal(err)
	}
	rows = waitRows(t, out, 5)
	if err := w.stop(); err != nil {
		t.Errorf("get --watch ended with %v; want nil once the context ends", err)
	}
	// Each kind is watched on its own, so the TFJob's row may come before or after the
	// PyTorchTrainingJob's; one job's rows come in order.
	want := []string{
		"KIND NAME PHASE RUNNING RESTARTS REASON AGE",
		"PyTorchTrainingJob p Pending 0/0 0 -",
		"PyTorchTrainingJob p Running 0/0 0 -",
		"PyTorchTrainingJob p Deleted 0/0 0 -",
		"TFJob tf - 0/0 0 -",
	}
	if len(rows) != len(want) {
		t.Fatalf("printed:\n%s\nwant %d rows", out.String(), len(want))
	}
	at := func(prefix string) int {
		for i, r := range rows {
			if strings.HasPrefix(r, prefix) {
				return i
			}
		}
		t.Errorf("no row %q in:\n%s", prefix, out.String())
		return -1
	}
	if at(want[0]) != 0 || at(want[1]) != 1 || at(want[2]) > at(want[3]) {
		t.Errorf("rows out of order:\n%s", out.String())
	}
	at(want[4])
	// The rows the watch prints stand in the table's columns.
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	phaseAt := strings.Index(lines[0], "PHASE")
	for _, l := range lines[1:] {
		if strings.HasPrefix(l, "PyTorchTrainingJob") && (len(l) <= phaseAt || l[phaseAt-1] != ' ' || l[phaseAt] == ' ') {
			t.Errorf("row %q: its phase does not start under PHASE (column %d):\n%s", l, phaseAt, out.String())
		}
	}
}

// A watch whose resourceVersion expired (410 Gone, as an error event) lists the kind again: a
// job deleted meanwhile is reported deleted, one created meanwhile is reported, and the watch
// goes on from the new list.
func TestWatchListsAgainWhenItsVersionExpires(t *testing.T) {
	var mu sync.Mutex
	var watchers []*watch.FakeWatcher
	opened := make(chan struct{}, 4)
	c := fake.NewClientBuilder().WithScheme(controller.Scheme()).WithObjects(ptj(nil, batch.JobRunning)).
		WithInterceptorFuncs(interceptor.Funcs{
			Watch: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) (watch.Interface, error) {
				fw := watch.NewFake()
				mu.Lock()
				watchers = append(watchers, fw)
				mu.Unlock()
				opened <- struct{}{}
				return fw, nil
			},
		}).Build()
	s := &session{client: c, namespace: "ns"}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	listed, _, err := s.listKind(ctx, &kinds[0], false)
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	done := make(chan error)
	go func() {
		done <- s.watchJobs(ctx, false, listed, map[string]string{"PyTorchTrainingJob": "1"}, func(j *job, deleted bool) {
			seen = append(seen, j.obj.GetName()+map[bool]string{true: " deleted", false: " " + j.phase()}[deleted])
		})
	}()
	<-opened
	mu.Lock()
	first := watchers[0]
	mu.Unlock()
	running := ptj(nil, batch.JobSucceeded)
	running.ResourceVersion = "5"
	first.Modify(running)

	if err := c.Delete(ctx, ptj(nil, "")); err != nil {
		t.Fatal(err)
	}
	other := ptj(nil, batch.JobPending)
	other.Name, other.UID = "q", "uid-q"
	if err := c.Create(ctx, other); err != nil {
		t.Fatal(err)
	}
	gone := apierrors.NewResourceExpired("too old resource version: 1 (5)")
	gone.ErrStatus.Details = nil
	first.Error(&gone.ErrStatus)
	<-opened // listed again, then watching from there
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	want := "[p Succeeded p deleted q Pending]"
	if got := strings.Join(seen, " "); "["+got+"]" != want {
		t.Errorf("seen %v; want %s", seen, want)
	}
}

// The RESTARTS column counts every restart of the job's pods: those an exit code decided and those
// a disruption did (an eviction, a preemption, a lost node, a pod deleted by someone else).
func TestGetRestartsCountsDisruptions(t *testing.T) {
	j := ptj(nil, batch.JobRunning)
	j.Status.BackoffCount, j.Status.DisruptionCount = 1, 2
	c := fake.NewClientBuilder().WithScheme(controller.Scheme()).WithObjects(j).Build()
	s := &session{client: c, namespace: "ns"}
	var out, errOut lockedBuffer
	if err := s.get(context.Background(), table{}, false, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	rows := rowsOf(out.String())
	if len(rows) != 2 || !strings.HasPrefix(rows[1], "PyTorchTrainingJob p Running 0/0 3 -") {
		t.Errorf("trainyard get printed:\n%s\nwant the job's row with 3 restarts (backoffCount 1, disruptionCount 2)", out.String())
	}
}

// TestRunningOfAFinishedKubeflowJob: a failed kubeflow.org job's replicaStatuses keep the
// active count it failed with (as Kubeflow's operator's do) after its pods are deleted; get and
// describe count its running pods from the pods instead, in the job's namespace only.
func TestRunningOfAFinishedKubeflowJob(t *testing.T) {
	failed := func(name string) *kubeflowv1.PyTorchJob {
		j := pytorchJob(nil)
		j.Name, j.UID = name, types.UID("uid-"+name)
		j.Spec.PyTorchReplicaSpecs = map[kubeflowv1.ReplicaType]*kubeflowv1.ReplicaSpec{"Worker": {Replicas: func() *int32 { n := int32(2); return &n }()}}
		j.Status.Conditions = []kubeflowv1.JobCondition{{Type: kubeflowv1.JobFailed, Status: corev1.ConditionTrue, Reason: "DeadlineExceeded"}}
		j.Status.ReplicaStatuses = map[kubeflowv1.ReplicaType]*kubeflowv1.ReplicaStatus{"Worker": {Active: 2}}
		return j
	}
	pod := func(ns, job string, i int, phase corev1.PodPhase) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("%s-worker-%d", job, i),
			Labels: map[string]string{batch.LabelOwnerKind: "PyTorchJob", batch.LabelOwnerName: job}},
			Status: corev1.PodStatus{Phase: phase}}
	}
	running := failed("running")
	running.Status.Conditions = []kubeflowv1.JobCondition{{Type: kubeflowv1.JobRunning, Status: corev1.ConditionTrue}}
	c := fake.NewClientBuilder().WithScheme(controller.Scheme()).WithObjects(
		failed("gone"), failed("kept"), running,
		pod("ns", "kept", 0, corev1.PodRunning), pod("ns", "kept", 1, corev1.PodFailed),
		pod("other", "gone", 0, corev1.PodRunning), // a namesake's in another namespace
	).Build()
	s := &session{client: c, namespace: "ns"}
	var out, errOut bytes.Buffer
	if err := s.get(context.Background(), table{}, false, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	want := []string{"PyTorchJob gone Failed 0/2", "PyTorchJob kept Failed 1/2", "PyTorchJob running Running 2/2"}
	rows := rowsOf(out.String())
	if len(rows) != 4 {
		t.Fatalf("get:\n%s", out.String())
	}
	for i, w := range want {
		if !strings.HasPrefix(rows[i+1], w+" ") {
			t.Errorf("row %d: %q; want it to begin %q", i+1, rows[i+1], w)
		}
	}
	j, err := s.findJob(context.Background(), "gone")
	if err != nil {
		t.Fatal(err)
	}
	countRunning(j, nil)
	var d bytes.Buffer
	describe(&d, j, nil, nil, nil, time.Now())
	if first := strings.SplitN(d.String(), "\n", 2)[0]; !strings.Contains(first, "Failed  0/2 running") {
		t.Errorf("describe: %q; want 0/2 running", first)
	}
}

// TestGetSaysWhyAJobFailed: a failed job's REASON is its Failed condition's reason (its message
// with --wide), the same for both APIs, so that get tells a job out of restarts from one out of
// time; a running job's is "-".
func TestGetSaysWhyAJobFailed(t *testing.T) {
	backoff := ptj(nil, batch.JobFailed)
	backoff.Status.Conditions = []metav1.Condition{{Type: batch.ConditionFailed, Status: metav1.ConditionTrue,
		Reason: "BackoffLimitExceeded", Message: "the job restarted 3 times, its runPolicy.backoffLimit"}}
	deadline := pytorchJob(nil)
	deadline.Status.Conditions = []kubeflowv1.JobCondition{{Type: kubeflowv1.JobFailed, Status: corev1.ConditionTrue,
		Reason: "DeadlineExceeded", Message: "the job ran longer than runPolicy.activeDeadlineSeconds (5s)"}}
	running := pytorchJob(nil)
	running.Name, running.UID = "r", "uid-r"
	running.Status.Conditions = []kubeflowv1.JobCondition{{Type: kubeflowv1.JobRunning, Status: corev1.ConditionTrue}}
	s := &session{client: fake.NewClientBuilder().WithScheme(controller.Scheme()).WithObjects(backoff, deadline, running).Build(), namespace: "ns"}
	var out, errOut bytes.Buffer
	if err := s.get(context.Background(), table{wide: true}, false, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	rows := rowsOf(out.String())
	for i, want := range []string{
		"PyTorchJob k Failed 0/0 0 DeadlineExceeded <unknown> the job ran longer than runPolicy.activeDeadlineSeconds (5s)",
		"PyTorchTrainingJob p Failed 0/0 0 BackoffLimitExceeded <unknown> the job restarted 3 times, its runPolicy.backoffLimit",
		"PyTorchJob r Running 0/0 0 - <unknown>",
	} {
		if i+1 >= len(rows) || rows[i+1] != want {
			t.Errorf("get --wide:\n%s\nwant row %d: %s", out.String(), i+1, want)
		}
	}
}

// TestGetWatchAKubeflowJobFailing: the row get -w prints when a PyTorchJob fails counts its
// running pods from the pods (none left running), not the active count it failed with.
func TestGetWatchAKubeflowJobFailing(t *testing.T) {
	j := pytorchJob(nil)
	j.Spec.PyTorchReplicaSpecs = map[kubeflowv1.ReplicaType]*kubeflowv1.ReplicaSpec{"Worker": {Replicas: func() *int32 { n := int32(2); return &n }()}}
	j.Status.Conditions = []kubeflowv1.JobCondition{{Type: kubeflowv1.JobRunning, Status: corev1.ConditionTrue}}
	j.Status.ReplicaStatuses = map[kubeflowv1.ReplicaType]*kubeflowv1.ReplicaStatus{"Worker": {Active: 2}}
	w, rows := startGetWatch(t, 2, j)
	if len(rows) != 2 || !strings.HasPrefix(rows[1], "PyTorchJob k Running 2/2 0 -") {
		t.Fatalf("the table:\n%s", w.out.String())
	}
	c, ctx := w.c, w.ctx
	failed := &kubeflowv1.PyTorchJob{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(j), failed); err != nil {
		t.Fatal(err)
	}
	failed.Status.Conditions = []kubeflowv1.JobCondition{{Type: kubeflowv1.JobFailed, Status: corev1.ConditionTrue, Reason: "DeadlineExceeded"}}
	if err := c.Update(ctx, failed); err != nil {
		t.Fatal(err)
	}
	rows = waitRows(t, &w.out, 3)
	_ = w.stop()
	if len(rows) != 3 || !strings.HasPrefix(rows[2], "PyTorchJob k Failed 0/2 0 DeadlineExceeded") {
		t.Errorf("get -w:\n%s\nwant the last row PyTorchJob k Failed 0/2 0 DeadlineExceeded", w.out.String())
	}
}

// TestGetWatchAlignsRowsAfterAnEmptyTable: get -w on a namespace with no job yet prints a header
// whose columns hold the rows that come (the longest kind, phase and common reason), where each
// row used to be laid out in the header's own widths (KIND 4 wide) and none lined up.
func TestGetWatchAlignsRowsAfterAnEmptyTable(t *testing.T) {
	w, _ := startGetWatch(t, 1)
	c, out := w.c, &w.out
	tf := &batch.TensorFlowTrainingJob{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "t"}}
	if err := c.Create(context.Background(), tf); err != nil {
		t.Fatal(err)
	}
	tf.Status.Phase = batch.JobFailed
	tf.Status.Conditions = []metav1.Condition{{Type: batch.ConditionFailed, Status: metav1.ConditionTrue, Reason: "BackoffLimitExceeded"}}
	if err := c.Update(context.Background(), tf); err != nil {
		t.Fatal(err)
	}
	waitRows(t, out, 3)
	_ = w.stop()
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	header := lines[0]
	for _, line := range lines[1:] {
		for _, col := range []string{"NAME", "PHASE", "RUNNING", "RESTARTS", "REASON", "AGE"} {
			at := strings.Index(header, col)
			if at > len(line) || at > 0 && (line[at-1] != ' ' || line[at] == ' ') {
				t.Errorf("column %s (at %d) does not line up:\n%s", col, at, out.String())
				break
			}
		}
	}
}

// trainyard get read no argument: `trainyard get pytorchjobs` (kubectl's habit) or `get JOB`
// printed every job of all four kinds, the argument silently dropped. It is refused, named.
func TestGetRefusesAnArgument(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-kubeconfig") // no cluster is reached either way
	for arg, args := range map[string][]string{
		"pytorchjobs": {"--kubeconfig", missing, "pytorchjobs"},
		"my-job":      {"my-job", "--kubeconfig", missing},
		"tfj/x":       {"-A", "tfj/x", "--kubeconfig", missing, "-n", "ns"},
	} {
		var out, errOut strings.Builder
		err := runGet(args, &out, &errOut)
		if err == nil || !strings.Contains(err.Error(), "get takes no argument") || !strings.Contains(err.Error(), arg) {
			t.Errorf("get %v: %v; want it refused, naming %s", args, err, arg)
		}
	}
}
