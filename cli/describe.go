package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
	kubeflowv1 "github.com/trainyard/trainyard/apis/kubeflow/v1"
	"github.com/trainyard/trainyard/apis/kueue"
	"github.com/trainyard/trainyard/render"
)

// maxEvents is how many of the job's latest events describe prints.
const maxEvents = 12

// runDescribe is `trainyard describe JOB`: the job at a glance.
func runDescribe(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("trainyard describe", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cf clusterFlags
	cf.bind(fs, false)
	s, j, pods, ctx, cancel, err := openJob(fs, &cf, args)
	if err != nil {
		return err
	}
	defer cancel()
	countRunning(j, pods)
	events, err := s.jobEvents(ctx, j)
	if err != nil {
		return err
	}
	describe(stdout, j, pods, events, s.queueView(ctx, j), time.Now())
	return nil
}

// queueView is a queued job's place in Kueue, as describe shows it.
type queueView struct {
	// name is the LocalQueue the job's kueue.x-k8s.io/queue-name label names.
	name string
	// workload is the Kueue Workload the job controls, nil if it has none.
	workload *unstructured.Unstructured
	// slice is the Workload an elastic job's new size waits in, nil if none (render.Sliced).
	slice *unstructured.Unstructured
	// err says why the Workload could not be read.
	err error
}

// queueView reads the job's Workload when the job is queued (nil when it is not): the job's
// status quotes what Trainyard saw of it, this is Kueue's own word, now.
func (s *session) queueView(ctx context.Context, j *job) *queueView {
	name := j.obj.GetLabels()[kueue.LabelQueueName]
	if name == "" {
		return nil
	}
	q := &queueView{name: name}
	q.workload, q.slice, q.err = s.jobWorkloads(ctx, j)
	return q
}

func describe(out io.Writer, j *job, pods []corev1.Pod, events []corev1.Event, q *queueView, now time.Time) {
	m := &j.model
	st := &m.Status
	fmt.Fprintf(out, "%s %s/%s  %s  %d/%d running  age %s\n", j.info.kind, j.obj.GetNamespace(), j.obj.GetName(),
		j.phase(), j.running(), j.desired(), age(j.obj.GetCreationTimestamp(), now))
	switch n := j.desired(); {
	case n >= m.PodCount() || q == nil:
	case q.slice != nil:
		fmt.Fprintf(out, "Admitted: %d of the %d pods the spec asks (the rest wait for Kueue to admit the job's new size, Workload %s)\n", n, m.PodCount(), q.slice.GetName())
	default:
		fmt.Fprintf(out, "Admitted: %d of the %d pods the spec asks (Kueue admitted the elastic job partially; the rest have no pod)\n", n, m.PodCount())
	}
	if reason, message := j.waiting(); reason != "" {
		fmt.Fprintf(out, "Waiting: %s: %s\n", reason, message)
	}
	if j.phase() == string(batch.JobPaused) {
		// What brings a paused job back, which its conditions do not say.
		fmt.Fprintf(out, "Paused: its pods are deleted until it is resumed: trainyard resume %s -n %s\n", ref(j), j.obj.GetNamespace())
	}
	fmt.Fprintf(out, "Restarts: backoffCount %d of backoffLimit %s", st.BackoffCount, limit(m.BackoffLimit))
	if st.DisruptionCount > 0 {
		fmt.Fprintf(out, "; disruptions %d (evictions, preemptions, lost nodes, failures after a scale-down: not counted toward backoffLimit)", st.DisruptionCount)
	}
	if at := st.LastScaleDownTime; at != nil {
		fmt.Fprintf(out, "; last scaled down %s", at.UTC().Format(time.RFC3339))
	}
	fmt.Fprintln(out)
	if tb := st.Tensorboard; tb != nil {
		state := "ready"
		if !tb.Ready {
			state = "not ready"
		}
		if tb.Reason != "" {
			state += ": " + tb.Reason
		}
		if tb.Note != "" {
			state += ": " + tb.Note
		}
		// Note: where it serves, which the status leaves out: `kubectl port-forward` reaches it.
		fmt.Fprintf(out, "TensorBoard: %s (Service %s, port %d)\n", state, render.TensorBoardName(j.obj.GetName()), render.TensorBoardPort)
	}
	if q != nil {
		describeQueue(out, q, now)
	}

	byName := map[string]*corev1.Pod{}
	for i := range pods {
		byName[pods[i].Name] = &pods[i]
	}
	restarts := map[string]int32{}
	for _, t := range st.Tasks {
		restarts[t.Type] = t.RestartCount
	}
	fmt.Fprintln(out, "\nReplicas (index: state @ node):")
	if m.Dispatched {
		fmt.Fprintf(out, "  the pods run in a worker cluster (spec.managedBy %s): describe the job's copy there\n", kueue.ManagedByMultiKueue)
	}
	w := tabwriter.NewWriter(out, 0, 8, 2, ' ', 0)
	for _, t := range m.Replicas {
		cells := make([]string, 0, t.Replicas)
		for i := int32(0); i < t.Replicas; i++ {
			name := podName(j, t.Type, i)
			cells = append(cells, fmt.Sprintf("%d: %s", i, podState(byName[name])))
		}
		fmt.Fprintf(w, "  %s\tx%d\trestarts %d\t%s\n", t.Type, t.Replicas, restarts[t.Type], strings.Join(cells, "  "))
	}
	w.Flush()

	fmt.Fprintln(out, "\nConditions:")
	w = tabwriter.NewWriter(out, 0, 8, 2, ' ', 0)
	for _, c := range conditionRows(j) {
		fmt.Fprintf(w, "  %s\t%s\t%s\t%s\t%s\n", c.typ, c.status, c.reason, age(c.since, now), c.message)
	}
	w.Flush()

	fmt.Fprintln(out, "\nEvents (latest last):")
	if len(events) == 0 {
		fmt.Fprintln(out, "  <none>")
	}
	w = tabwriter.NewWriter(out, 0, 8, 2, ' ', 0)
	for _, e := range events {
		fmt.Fprintf(w, "  %s\t%s\t%s\t%s\n", age(eventTime(e), now), e.Type, e.Reason, e.Message)
	}
	w.Flush()
}

// describeQueue prints the job's LocalQueue and its Workload's conditions in Kueue's words.
func describeQueue(out io.Writer, q *queueView, now time.Time) {
	switch {
	case q.err != nil:
		fmt.Fprintf(out, "Kueue: LocalQueue %s; the Workload could not be read: %v\n", q.name, q.err)
		return
	case q.workload == nil:
		fmt.Fprintf(out, "Kueue: LocalQueue %s; no Workload yet\n", q.name)
		return
	}
	// Note: a Workload that does not convert (a field of another type than Kueue's) is shown
	// without what is read from it typed: the time used and the topology.
	var wl kueue.Workload
	typed := runtime.DefaultUnstructuredConverter.FromUnstructured(q.workload.Object, &wl) == nil
	state := "active"
	if !workloadActive(q.workload) {
		state = "inactive: trainyard resume activates it"
		if cause, _, _ := render.KueueDeactivation(&wl); typed && cause == kueue.DeactivatedForMaxExecTime {
			state = "inactive: its maximum execution time is used up; a new value of the label " + kueue.LabelMaxExecTime + " queues the job anew"
		}
	}
	if typed && wl.Spec.MaximumExecutionTimeSeconds != nil {
		state += fmt.Sprintf("; maximum execution time %d s, %d s used", *wl.Spec.MaximumExecutionTimeSeconds, int64(wl.ExecutionTime(now).Seconds()))
	}
	fmt.Fprintf(out, "Kueue: LocalQueue %s, Workload %s (%s)\n", q.name, q.workload.GetName(), state)
	w := tabwriter.NewWriter(out, 0, 8, 2, ' ', 0)
	workloadConditions(w, q.workload, now)
	// Admission checks (MultiKueue's among them) report in the Workload's admissionChecks.
	checks, _, _ := unstructured.NestedSlice(q.workload.Object, "status", "admissionChecks")
	for _, c := range checks {
		m, _ := c.(map[string]any)
		fmt.Fprintf(w, "  check %v\t%v\t\t%s\t%v\n", m["name"], m["state"], since(m, now), m["message"])
	}
	w.Flush()
	if typed {
		describeTopology(out, &wl)
	}
	if q.slice != nil {
		fmt.Fprintf(out, "Kueue: the job's new size waits in Workload %s (a slice replacing %s)\n", q.slice.GetName(), q.workload.GetName())
		workloadConditions(w, q.slice, now)
		w.Flush()
	}
}

// nPods is n pods, in words.
func nPods(n int32) string {
	if n == 1 {
		return "1 pod"
	}
	return fmt.Sprintf("%d pods", n)
}

// topologyDomainsShown is how many domains of a pod set's topology assignment describe names.
const topologyDomainsShown = 8

// describeTopology prints where Kueue's Topology Aware Scheduling placed each admitted pod set (its
// domains, each as its values at the assignment's levels, with its pods: what Kueue's ungater
// turns into the pods' node selectors) and the failed nodes whose pods Kueue is placing anew.
func describeTopology(out io.Writer, w *kueue.Workload) {
	if w.Status.Admission == nil {
		return
	}
	for _, a := range w.Status.Admission.PodSetAssignments {
		ta := a.TopologyAssignment
		if ta == nil {
			continue
		}
		domains := ta.Domains()
		var parts []string
		var rest, restPods int32
		for i, d := range domains {
			if i >= topologyDomainsShown {
				rest++
				restPods += d.Count
				continue
			}
			parts = append(parts, fmt.Sprintf("%s (%s)", strings.Join(d.Values, "/"), nPods(d.Count)))
		}
		if rest > 0 {
			parts = append(parts, fmt.Sprintf("and %d more domains (%s)", rest, nPods(restPods)))
		}
		fmt.Fprintf(out, "  topology of %s by %s: %s\n", a.Name, strings.Join(ta.Levels, "/"), strings.Join(parts, ", "))
	}
	if len(w.Status.UnhealthyNodes) > 0 {
		var names []string
		for _, n := range w.Status.UnhealthyNodes {
			names = append(names, n.Name)
		}
		fmt.Fprintf(out, "  Kueue is finding other nodes for the pods placed on %s (failed: tainted, not ready or gone)\n", strings.Join(names, ", "))
	}
}

// workloadConditions prints a Workload's conditions, a line each, in Kueue's words.
func workloadConditions(w io.Writer, wl *unstructured.Unstructured, now time.Time) {
	conds, _, _ := unstructured.NestedSlice(wl.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		fmt.Fprintf(w, "  %v\t%v\t%v\t%s\t%v\n", m["type"], m["status"], m["reason"], since(m, now), m["message"])
	}
}

// since is how long ago an entry of a Workload's status last changed.
func since(m map[string]any, now time.Time) string {
	t, _ := time.Parse(time.RFC3339, fmt.Sprint(m["lastTransitionTime"]))
	return age(metav1.NewTime(t), now)
}

// podState is a pod's state in a few words: its phase, or why a container waits, or its exit
// code, and the node it runs on.
func podState(p *corev1.Pod) string {
	if p == nil {
		return "-"
	}
	state := string(p.Status.Phase)
	if p.DeletionTimestamp != nil {
		state = "Terminating"
	}
	for _, c := range p.Status.ContainerStatuses {
		switch {
		case c.State.Waiting != nil && c.State.Waiting.Reason != "":
			state = c.State.Waiting.Reason
		case c.State.Terminated != nil && c.State.Terminated.ExitCode != 0:
			state += "(exit " + strconv.Itoa(int(c.State.Terminated.ExitCode)) + ")"
		}
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			state = c.Reason
		}
	}
	if p.Spec.NodeName != "" {
		state += "@" + p.Spec.NodeName
	}
	return state
}

func limit(n int32) string {
	if n == 1<<31-1 {
		return "unlimited"
	}
	return strconv.Itoa(int(n))
}

func podName(j *job, typ string, i int32) string {
	return j.obj.GetName() + "-" + typ + "-" + strconv.Itoa(int(i))
}

// jobPods lists the job's pods.
func (s *session) jobPods(ctx context.Context, j *job) ([]corev1.Pod, error) {
	var list corev1.PodList
	err := s.client.List(ctx, &list, podsOf(j)...)
	return list.Items, err
}

// podsOf selects the job's pods by the labels every pod of a job carries.
func podsOf(j *job) []client.ListOption {
	return []client.ListOption{client.InNamespace(j.obj.GetNamespace()),
		client.MatchingLabels{batch.LabelOwnerKind: j.info.kind, batch.LabelOwnerName: j.obj.GetName()}}
}

// jobEvents are the job's latest events, oldest first.
func (s *session) jobEvents(ctx context.Context, j *job) ([]corev1.Event, error) {
	var list corev1.EventList
	err := s.client.List(ctx, &list, client.InNamespace(j.obj.GetNamespace()),
		client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("involvedObject.uid", string(j.obj.GetUID()))})
	if err != nil {
		return nil, err
	}
	ev := list.Items
	sort.SliceStable(ev, func(a, b int) bool { return eventTime(ev[a]).Time.Before(eventTime(ev[b]).Time) })
	if len(ev) > maxEvents {
		ev = ev[len(ev)-maxEvents:]
	}
	return ev, nil
}

// conditionRow is one condition as describe prints it.
type conditionRow struct {
	typ, status, reason, message string
	since                        metav1.Time
}

// conditionRows are the job's conditions as its kind writes them (Kubeflow's types for the
// kubeflow.org kinds).
func conditionRows(j *job) []conditionRow {
	var rows []conditionRow
	switch o := j.obj.(type) {
	case *kubeflowv1.PyTorchJob:
		rows = kubeflowRows(o.Status.Conditions)
	case *kubeflowv1.TFJob:
		rows = kubeflowRows(o.Status.Conditions)
	default:
		for _, c := range j.model.Status.Conditions {
			rows = append(rows, conditionRow{c.Type, string(c.Status), c.Reason, c.Message, c.LastTransitionTime})
		}
	}
	return rows
}

func kubeflowRows(conds []kubeflowv1.JobCondition) []conditionRow {
	rows := make([]conditionRow, 0, len(conds))
	for _, c := range conds {
		rows = append(rows, conditionRow{string(c.Type), string(c.Status), c.Reason, c.Message, c.LastTransitionTime})
	}
	return rows
}

// eventTime is when an event last happened, whichever API wrote it.
func eventTime(e corev1.Event) metav1.Time {
	switch {
	case e.Series != nil:
		return metav1.Time{Time: e.Series.LastObservedTime.Time}
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp
	case !e.EventTime.IsZero():
		return metav1.Time{Time: e.EventTime.Time}
	}
	return e.CreationTimestamp
}
