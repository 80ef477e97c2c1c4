package cli

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
	"github.com/trainyard/trainyard/render"
)

// runLogs is `trainyard logs JOB`: every rank's training container, each line prefixed with its
// replica (worker-3), followed with -f.
func runLogs(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("trainyard logs", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cf clusterFlags
	cf.bind(fs, false)
	follow := fs.Bool("follow", false, "stream the logs as they are written")
	fs.BoolVar(follow, "f", false, "shorthand for --follow")
	replicaType := fs.String("replica-type", "", "only this replica type (master, worker, ps, chief ...; any case: Master as a Kubeflow spec spells it)")
	index := fs.Int("index", -1, "only this replica index (with --replica-type)")
	tail := fs.Int64("tail", -1, "lines of each log to show from its end (-1: all)")
	previous := fs.Bool("previous", false, "the previous instance of the container, if the kubelet restarted it in its pod (Trainyard's pods never restart in place: a restarted replica is a new pod, and the old pod's logs went with it: trainyard describe's events quote the line of its log that says why it failed; ship logs elsewhere to keep them whole)")
	s, j, pods, ctx, cancel, err := openJob(fs, &cf, args)
	if err != nil {
		return err
	}
	defer cancel()
	chosen, err := choosePods(j, pods, *replicaType, *index, stderr)
	if err != nil {
		return err
	}
	opts := corev1.PodLogOptions{Follow: *follow, Previous: *previous}
	if *tail >= 0 {
		opts.TailLines = tail
	}
	return s.streamLogs(ctx, j, chosen, opts, stdout, stderr)
}

// choosePods picks the pods logs shows: those of the replica type and index asked (any: "", -1)
// whose container has started; it says on stderr which of them have not, and fails when none has.
func choosePods(j *job, pods []corev1.Pod, replicaType string, index int, stderr io.Writer) ([]corev1.Pod, error) {
	var chosen []corev1.Pod
	for _, p := range pods {
		typ, idx := p.Labels[batch.LabelReplicaType], p.Labels[batch.LabelReplicaIndex]
		// Note: the label is lower case (master) where a Kubeflow spec spells the type Master.
		if replicaType != "" && !strings.EqualFold(typ, replicaType) || index >= 0 && idx != strconv.Itoa(index) {
			continue
		}
		chosen = append(chosen, p)
	}
	switch {
	case len(chosen) == 0 && len(pods) == 0:
		return nil, fmt.Errorf("%s %s has no pod (it is %s): no log to show", j.info.kind, j.obj.GetName(), j.phase())
	case len(chosen) == 0:
		var filter []string
		if replicaType != "" {
			filter = append(filter, "--replica-type "+replicaType)
		}
		if index >= 0 {
			filter = append(filter, "--index "+strconv.Itoa(index))
		}
		return nil, fmt.Errorf("%s %s has no pod of %s (it has %s)", j.info.kind, j.obj.GetName(), strings.Join(filter, " "), replicaList(pods))
	}
	chosen, waiting := startedPods(chosen)
	if len(chosen) == 0 {
		return nil, fmt.Errorf("%s %s: no container has started yet, so there is no log (%s); trainyard describe %s -n %s says why", j.info.kind, j.obj.GetName(), strings.Join(waiting, ", "), ref(j), j.obj.GetNamespace())
	}
	for _, w := range waiting {
		fmt.Fprintf(stderr, "trainyard: %s has not started yet: no log\n", w)
	}
	return chosen, nil
}

// startedPods keeps the pods whose training container has started (a log to show) and says of
// the others which they are and why they wait (worker-0 Unschedulable): the API server gives an
// unscheduled pod's log as empty, and a waiting container's as an error.
func startedPods(pods []corev1.Pod) (started []corev1.Pod, waiting []string) {
	for i := range pods {
		p := &pods[i]
		ran := false
		for _, c := range p.Status.ContainerStatuses {
			if c.State.Running != nil || c.State.Terminated != nil || c.LastTerminationState.Terminated != nil {
				ran = true
			}
		}
		if ran {
			started = append(started, *p)
			continue
		}
		state := podState(p)
		if i := strings.Index(state, "@"); i >= 0 {
			state = state[:i]
		}
		waiting = append(waiting, prefix(p)+" "+state)
	}
	return started, waiting
}

// replicaList names the replicas of pods, sorted (master-0, worker-0, worker-1).
func replicaList(pods []corev1.Pod) string {
	sorted := slices.Clone(pods)
	sort.Slice(sorted, func(a, b int) bool { return replicaOf(&sorted[a]) < replicaOf(&sorted[b]) })
	names := make([]string, len(sorted))
	for i := range sorted {
		names[i] = prefix(&sorted[i])
	}
	return strings.Join(names, ", ")
}

// replicaOf is the prefix of a pod's lines: its replica type and index, padded so that indexes
// sort as numbers.
func replicaOf(p *corev1.Pod) string {
	i, _ := strconv.Atoi(p.Labels[batch.LabelReplicaIndex])
	return fmt.Sprintf("%s-%06d", p.Labels[batch.LabelReplicaType], i)
}

// streamLogs copies each pod's training-container log to out, a line at a time with the
// replica's name in front, the pods in replica order; lines of different pods never mix within
// a line, and without opts.Follow each pod's log is printed whole before the next one's.
func (s *session) streamLogs(ctx context.Context, j *job, pods []corev1.Pod, opts corev1.PodLogOptions, out, errOut io.Writer) error {
	sort.Slice(pods, func(a, b int) bool { return replicaOf(&pods[a]) < replicaOf(&pods[b]) })
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make([]error, len(pods))
	width := 0
	for i := range pods {
		width = max(width, len(prefix(&pods[i])))
	}
	for i := range pods {
		p := &pods[i]
		o := opts
		o.Container = trainingContainer(j, p)
		pre := fmt.Sprintf("[%-*s] ", width, prefix(p))
		if !opts.Follow {
			// Logs that end are printed one pod after the other, in replica order, as kubectl
			// logs -l does: a rank's lines read together, and the output is the same each time.
			errs[i] = s.streamPod(ctx, p, o, pre, &mu, out)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = s.streamPod(ctx, p, o, pre, &mu, out)
		}()
	}
	wg.Wait()
	var failed []error
	for i, err := range errs {
		if err != nil && !errors.Is(err, context.Canceled) {
			failed = append(failed, fmt.Errorf("%s: %w", pods[i].Name, err))
		}
	}
	return errors.Join(failed...)
}

func (s *session) streamPod(ctx context.Context, p *corev1.Pod, opts corev1.PodLogOptions, pre string, mu *sync.Mutex, out io.Writer) error {
	open := s.openLog
	if open == nil {
		open = func(ctx context.Context, p *corev1.Pod, opts *corev1.PodLogOptions) (io.ReadCloser, error) {
			return s.clientset.CoreV1().Pods(p.Namespace).GetLogs(p.Name, opts).Stream(ctx)
		}
	}
	rc, err := open(ctx, p, &opts)
	if err != nil {
		return err
	}
	defer rc.Close()
	sc := bufio.NewScanner(rc)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		mu.Lock()
		_, err := fmt.Fprintln(out, pre+sc.Text())
		mu.Unlock()
		if err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil && ctx.Err() == nil {
		return err
	}
	return nil
}

func prefix(p *corev1.Pod) string {
	return p.Labels[batch.LabelReplicaType] + "-" + p.Labels[batch.LabelReplicaIndex]
}

// trainingContainer is the container Trainyard configures, as render chooses it.
func trainingContainer(j *job, p *corev1.Pod) string {
	if i := render.TrainingContainer(j.model.Framework, &p.Spec); i >= 0 {
		return p.Spec.Containers[i].Name
	}
	return ""
}
