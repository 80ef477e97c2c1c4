package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
	"github.com/trainyard/trainyard/apis/kueue"
	"github.com/trainyard/trainyard/render"
	"github.com/trainyard/trainyard/status"
)

// pauseEdit is what pause or resume writes, worked out from the job as read.
type pauseEdit struct {
	// done is set when the job is already as asked: nothing is written.
	done bool
	// patch is the merge patch of the job's spec (runMode.pause or runPolicy.suspend).
	patch map[string]any
	// workload is set for a kubeflow.org job queued by Kueue's own integration: Kueue holds
	// runPolicy.suspend, so the job's Workload is (de)activated instead (spec.active), as Kueue
	// asks of anyone who stops a queued job.
	workload bool
}

// planPause works out how to pause (pause true) or resume the job. A finished job is refused:
// it runs no pods, and a resume would not start it again.
func planPause(j *job, pause bool) (pauseEdit, error) {
	phase := j.model.Status.Phase
	if phase == batch.JobSucceeded || phase == batch.JobFailed {
		return pauseEdit{}, fmt.Errorf("%s is %s: a finished job runs no pods, so there is nothing to %s", ref(j), phase, verbOf(pause))
	}
	if j.model.Kubeflow != nil {
		if j.obj.GetLabels()[kueue.LabelQueueName] != "" {
			return pauseEdit{workload: true}, nil
		}
		if j.model.Pause == pause {
			return pauseEdit{done: true}, nil
		}
		return pauseEdit{patch: map[string]any{"spec": map[string]any{"runPolicy": map[string]any{"suspend": pause}}}}, nil
	}
	if j.model.Pause == pause {
		return pauseEdit{done: true}, nil
	}
	// runMode.pause.enable is the older spelling of enabled; when the user wrote it, it is set
	// too, since admission refuses the two spellings disagreeing.
	mode := map[string]any{"enabled": pause}
	if p := runModePause(j.obj); p != nil && p.Enable != nil {
		mode["enable"] = pause
	}
	return pauseEdit{patch: map[string]any{"spec": map[string]any{"runMode": map[string]any{"pause": mode}}}}, nil
}

// runModePause is the T9k job's spec.runMode.pause, if it has one.
func runModePause(o client.Object) *batch.PauseMode {
	var rm *batch.RunMode
	switch j := o.(type) {
	case *batch.PyTorchTrainingJob:
		rm = j.Spec.RunMode
	case *batch.TensorFlowTrainingJob:
		rm = j.Spec.RunMode
	}
	if rm == nil {
		return nil
	}
	return rm.Pause
}

func verbOf(pause bool) string {
	if pause {
		return "pause"
	}
	return "resume"
}

// ref is KIND/NAME as the user may type it back.
func ref(j *job) string { return strings.ToLower(j.info.kind) + "/" + j.obj.GetName() }

// runPause runs `trainyard pause` (pause true) or `trainyard resume`.
func runPause(pause bool, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("trainyard "+verbOf(pause), flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cf clusterFlags
	cf.bind(fs, false)
	wait := fs.Bool("wait", false, waitHelp[pause])
	timeout := fs.Duration("timeout", 0, "with --wait, how long to wait before giving up (0: until Ctrl-C)")
	s, j, ctx, cancel, err := openOne(fs, &cf, args)
	if err != nil {
		return err
	}
	defer cancel()
	var msg string
	// Each try reads the job again and writes against that resourceVersion, so a change made in
	// between (the operator's, another user's) is seen before deciding.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		fresh := j.info.newJob()
		if err := s.client.Get(ctx, client.ObjectKeyFromObject(j.obj), fresh); err != nil {
			return err
		}
		j = &job{info: j.info, obj: fresh, model: j.info.model(fresh)}
		var err error
		msg, err = s.setPaused(ctx, j, pause)
		return err
	})
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, msg)
	if !*wait {
		return nil
	}
	return s.waitPaused(ctx, j, pause, *timeout, stdout)
}

var waitHelp = map[bool]string{
	true:  "wait until the job says Paused and its last pod is gone, printing its state as it changes",
	false: "wait until the job runs again (or has finished), printing its state and the reason it waits as they change",
}

// setPaused pauses or resumes the job as planPause says and returns what it did, in words.
func (s *session) setPaused(ctx context.Context, j *job, pause bool) (string, error) {
	edit, err := planPause(j, pause)
	if err != nil {
		return "", err
	}
	unqueued := false // a kubeflow.org job whose queue label is inert: no Kueue
	switch {
	case edit.done && !pause && j.model.Kubeflow == nil && j.obj.GetLabels()[kueue.LabelQueueName] != "":
		// Not paused, but its Workload may be inactive all the same: Kueue deactivated it (its
		// re-queuing limit reached, say), or someone did by hand. Resuming it is what the job's
		// Deactivated reason asks for (but after a maximum execution time: maxExecUsedUp).
		return s.reactivate(ctx, j)
	case edit.done:
		return setPausedAlready(j, pause), nil
	case edit.workload:
		msg, err := s.setWorkloadActive(ctx, j, !pause)
		if !errors.Is(err, errNoKueue) {
			return msg, err
		}
		// Without Kueue no webhook holds runPolicy.suspend and the label is inert (the job runs
		// unqueued): the job is paused as any kubeflow.org job is.
		if j.model.Pause == pause {
			return setPausedAlready(j, pause), nil
		}
		edit.patch = map[string]any{"spec": map[string]any{"runPolicy": map[string]any{"suspend": pause}}}
		unqueued = true
	}
	// Whether the operator refuses this very spec, read before the patch changes the generation.
	reason, why := j.waiting()
	refused := reason == status.ReasonInvalidSpec && j.model.Status.ObservedGeneration == j.obj.GetGeneration()
	if err := mergePatch(ctx, s.client, j.obj, edit.patch); err != nil {
		return "", err
	}
	field, state := "runMode.pause", "phase Paused"
	if j.model.Kubeflow != nil {
		field, state = "runPolicy.suspend", "condition Suspended"
	}
	if refused {
		// The operator refuses the spec (this spec: not one mended since): the job has no pod,
		// and stays Pending with InvalidSpec whether paused or not.
		return fmt.Sprintf("%s %s (%s), but its spec is refused, so it has no pod and stays Pending, InvalidSpec, until the spec is mended: %s", ref(j), verbOf(pause)+"d", field, why), nil
	}
	if pause {
		return fmt.Sprintf("%s paused (%s): its pods are deleted and the job stays, %s. `trainyard resume %s -n %s` brings them back", ref(j), field, state, ref(j), j.obj.GetNamespace()), nil
	}
	if q := j.obj.GetLabels()[kueue.LabelQueueName]; q != "" && !unqueued {
		return fmt.Sprintf("%s resumed (%s): it waits in LocalQueue %s, and its pods are created once Kueue admits it", ref(j), field, q), nil
	}
	return fmt.Sprintf("%s resumed (%s): its pods are created again", ref(j), field), nil
}

// reactivate makes the Workload of a queued T9k job that is not paused active again, when
// something other than the job's pause made it inactive.
func (s *session) reactivate(ctx context.Context, j *job) (string, error) {
	wl, err := s.jobWorkload(ctx, j)
	switch {
	case errors.Is(err, errNoKueue):
		return setPausedAlready(j, false), nil
	case err != nil:
		return "", fmt.Errorf("%s is queued by Kueue (label %s): reading its Workload: %w", ref(j), kueue.LabelQueueName, err)
	case wl == nil || workloadActive(wl) || wl.GetAnnotations()[render.AnnotationDeactivated] != "":
		// Note: one the job's own pause deactivated is the operator's to activate again.
		return setPausedAlready(j, false), nil
	}
	if err := maxExecUsedUp(j, wl); err != nil {
		return "", err
	}
	if err := mergePatch(ctx, s.client, wl, map[string]any{"spec": map[string]any{"active": true}}); err != nil {
		return "", err
	}
	return fmt.Sprintf("%s was not paused, but its Kueue Workload %s was inactive; it is active again: the job waits in its queue and runs once Kueue admits it", ref(j), wl.GetName()), nil
}

// maxExecUsedUp refuses to activate the job's Workload wl that Kueue deactivated because the job
// ran admitted for its maximum execution time: Kueue counts the time it was admitted and would stop
// it again at its next admission. A new time, set on the label, makes a new Workload.
func maxExecUsedUp(j *job, wl *unstructured.Unstructured) error {
	var w kueue.Workload
	if runtime.DefaultUnstructuredConverter.FromUnstructured(wl.Object, &w) != nil || w.Spec.MaximumExecutionTimeSeconds == nil {
		return nil
	}
	if cause, _, _ := render.KueueDeactivation(&w); cause != kueue.DeactivatedForMaxExecTime {
		return nil
	}
	kind := strings.ToLower(j.info.kind)
	return fmt.Errorf("%s ran admitted for its maximum execution time, %d s (label %s), and Kueue deactivated its Workload %s; "+
		"activated, it would be stopped again at once (Kueue counts the time used). To run it longer, change the label, "+
		"and the job is queued anew under a new Workload: kubectl label %s %s %s=<seconds> --overwrite -n %s",
		ref(j), *w.Spec.MaximumExecutionTimeSeconds, kueue.LabelMaxExecTime, wl.GetName(), kind, j.obj.GetName(), kueue.LabelMaxExecTime, j.obj.GetNamespace())
}

// errNoKueue: the cluster has no Workload CRD.
var errNoKueue = errors.New("Kueue is not installed")

// setPausedAlready is what pause or resume says of a job that is already as asked.
func setPausedAlready(j *job, pause bool) string {
	if pause {
		return ref(j) + " is already paused"
	}
	return ref(j) + " is not paused"
}

// jobWorkload is the Kueue Workload the job controls, or nil when there is none. Of several (an
// elastic job's workload slices), the one it runs or waits under (render.SliceWorkloads).
func (s *session) jobWorkload(ctx context.Context, j *job) (*unstructured.Unstructured, error) {
	w, _, err := s.jobWorkloads(ctx, j)
	return w, err
}

// jobWorkloads is jobWorkload and the slice that asks for the job's new size, if one waits.
func (s *session) jobWorkloads(ctx context.Context, j *job) (w, slice *unstructured.Unstructured, _ error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(kueue.GroupVersion.WithKind(kueue.KindWorkload + "List"))
	if err := s.client.List(ctx, list, client.InNamespace(j.obj.GetNamespace())); err != nil {
		if meta.IsNoMatchError(err) || isNotFound(err) {
			return nil, nil, fmt.Errorf("%w (no %s)", errNoKueue, kueue.WorkloadCRD)
		}
		return nil, nil, err
	}
	var owned []*unstructured.Unstructured
	var ws []*kueue.Workload
	for i := range list.Items {
		if ref := metav1.GetControllerOf(&list.Items[i]); ref != nil && ref.UID == j.obj.GetUID() {
			w := &kueue.Workload{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(list.Items[i].Object, w); err != nil {
				return nil, nil, fmt.Errorf("reading Workload %s: %w", list.Items[i].GetName(), err)
			}
			owned, ws = append(owned, &list.Items[i]), append(ws, w)
		}
	}
	runs, waits, _ := render.SliceWorkloads(ws)
	if runs != nil {
		w = owned[slices.Index(ws, runs)]
	}
	if waits != nil {
		slice = owned[slices.Index(ws, waits)]
	}
	return w, slice, nil
}

// workloadActive is a Workload's spec.active, true when unset (Kueue's default).
func workloadActive(wl *unstructured.Unstructured) bool {
	active, found, _ := unstructured.NestedBool(wl.Object, "spec", "active")
	return active || !found
}

// setWorkloadActive sets spec.active of the Kueue Workload the job controls.
func (s *session) setWorkloadActive(ctx context.Context, j *job, active bool) (string, error) {
	wl, err := s.jobWorkload(ctx, j)
	if err != nil {
		return "", fmt.Errorf("%s is queued by Kueue (label %s), which holds runPolicy.suspend: reading its Workload: %w", ref(j), kueue.LabelQueueName, err)
	}
	if wl == nil {
		return "", fmt.Errorf("%s is queued by Kueue (label %s), which holds runPolicy.suspend, and has no Workload yet: try again once Kueue has made it", ref(j), kueue.LabelQueueName)
	}
	if active && !workloadActive(wl) {
		if err := maxExecUsedUp(j, wl); err != nil {
			return "", err
		}
	}
	// The job is marked as paused by its user before its Workload is deactivated, and unmarked
	// before it is activated again, so that it never says Queued while paused, nor Paused while
	// queued (render's kueueHold reads the mark).
	if err := s.markPausedByUser(ctx, j, wl, !active); err != nil {
		return "", err
	}
	if workloadActive(wl) == active {
		if active {
			return fmt.Sprintf("%s is not paused (its Kueue Workload %s is active)", ref(j), wl.GetName()), nil
		}
		return fmt.Sprintf("%s is already paused (its Kueue Workload %s is inactive)", ref(j), wl.GetName()), nil
	}
	if err := mergePatch(ctx, s.client, wl, map[string]any{"spec": map[string]any{"active": active}}); err != nil {
		return "", err
	}
	if active {
		return fmt.Sprintf("%s resumed: its Kueue Workload %s is active again; the job waits in its queue and runs once Kueue admits it", ref(j), wl.GetName()), nil
	}
	return fmt.Sprintf("%s paused: its Kueue Workload %s is deactivated (spec.active: false), so Kueue evicts it, suspends the job and frees its quota. `trainyard resume %s` queues it again", ref(j), wl.GetName(), ref(j)), nil
}

// markPausedByUser sets (paused) or removes the job's batch.trainyard.dev/paused-by-user
// annotation, naming the Workload; nothing is written when it is already so.
func (s *session) markPausedByUser(ctx context.Context, j *job, wl *unstructured.Unstructured, paused bool) error {
	_, marked := j.obj.GetAnnotations()[batch.AnnotationPausedByUser]
	if marked == paused {
		return nil
	}
	var value any // null removes it
	if paused {
		value = wl.GetName()
	}
	return mergePatch(ctx, s.client, j.obj, map[string]any{"metadata": map[string]any{"annotations": map[string]any{batch.AnnotationPausedByUser: value}}})
}

// mergePatch applies patch to obj as a JSON merge patch made against obj's resourceVersion, so it
// fails with a conflict when obj changed since it was read.
func mergePatch(ctx context.Context, c client.Client, obj client.Object, patch map[string]any) error {
	meta, _ := patch["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
		patch["metadata"] = meta
	}
	meta["resourceVersion"] = obj.GetResourceVersion()
	body, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	return c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, body), client.FieldOwner("trainyard-cli"))
}
