package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
	"github.com/trainyard/trainyard/status"
)

// waitInterval is how often `pause --wait` and `resume --wait` read the job and its pods again.
// Polling, not a watch: a pause is over when the job's pods are gone, which the job's own object
// does not show, and one read of each a second costs the API server nothing worth a watch's
// bookkeeping in a command that waits seconds.
var waitInterval = time.Second

// waitView is what the user is shown of a job while waiting on it.
type waitView struct {
	phase            string
	running, desired int32
	pods             int
	reason, message  string
}

func (v waitView) String() string {
	s := fmt.Sprintf("%s %d/%d running", v.phase, v.running, v.desired)
	if v.pods > 0 && v.phase == string(batch.JobPaused) {
		s += fmt.Sprintf(", %d pod%s left", v.pods, map[bool]string{true: "s"}[v.pods > 1])
	}
	if v.reason != "" {
		s += ", " + v.reason
		if v.message != "" {
			s += ": " + v.message
		}
	}
	return s
}

// arrived says whether a pause (pause true) or a resume has taken effect. A pause has when the
// job says Paused and none of its pods is left (their GPUs are free). A resume has when the job
// runs again, or has finished since; a Failed job is an error.
func arrived(j *job, pods int, pause bool) (bool, error) {
	phase := j.model.Status.Phase
	// A job whose spec the operator refuses (InvalidSpec) never turns Paused or Running: with no
	// pod left it is as paused as it gets, and it cannot run until its spec is mended.
	reason, message := j.waiting()
	invalid := reason == status.ReasonInvalidSpec
	if pause {
		return pods == 0 && (phase == batch.JobPaused || invalid), nil
	}
	if invalid {
		return false, fmt.Errorf("%s cannot run: its spec is refused (InvalidSpec: %s)", ref(j), message)
	}
	switch phase {
	case batch.JobRunning, batch.JobSucceeded:
		return true, nil
	case batch.JobFailed:
		why := "no Failed condition"
		for _, c := range conditionRows(j) {
			if c.typ == batch.ConditionFailed && c.status == "True" {
				why = c.reason + ": " + c.message
			}
		}
		return false, fmt.Errorf("%s failed after it was resumed (%s)", ref(j), why)
	}
	return false, nil
}

// waitPaused reads the job and its pods every waitInterval until the pause or resume has taken
// effect, printing a line each time what the user sees of the job changes. timeout 0 waits until
// the context ends.
func (s *session) waitPaused(ctx context.Context, j *job, pause bool, timeout time.Duration, out io.Writer) error {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	start := time.Now()
	var last waitView
	for {
		fresh := j.info.newJob()
		err := s.client.Get(ctx, client.ObjectKeyFromObject(j.obj), fresh)
		if err == nil {
			j = &job{info: j.info, obj: fresh, model: j.info.model(fresh)}
			var pods int
			if pods, err = s.podCount(ctx, j); err == nil {
				left := pods
				if !pause {
					left = 0 // while resuming, the pods are being created, not left over
				}
				v := viewOf(j, left)
				if v != last {
					fmt.Fprintf(out, "%s: %s\n", ref(j), v)
					last = v
				}
				done, err := arrived(j, pods, pause)
				if err != nil {
					return err
				}
				if done {
					fmt.Fprintf(out, "%s %s after %.1fs\n", ref(j), waitedFor(pause), time.Since(start).Seconds())
					return nil
				}
			}
		}
		if err != nil && ctx.Err() == nil {
			return err
		}
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("timed out after %s waiting for %s to be %s; it is %s", timeout, ref(j), waitedFor(pause), last)
			}
			return ctx.Err()
		case <-time.After(waitInterval):
		}
	}
}

func waitedFor(pause bool) string {
	if pause {
		return "paused, with no pod left"
	}
	return "running again"
}

func viewOf(j *job, pods int) waitView {
	reason, message := j.waiting()
	return waitView{phase: j.phase(), running: j.running(), desired: j.desired(), pods: pods, reason: reason, message: message}
}

// podCount is how many of the job's pods exist, terminating ones included. It lists their
// metadata only: a 5,000-pod job's full pods, once a second, would be megabytes for a count.
func (s *session) podCount(ctx context.Context, j *job) (int, error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PodList"))
	err := s.client.List(ctx, list, podsOf(j)...)
	return len(list.Items), err
}
