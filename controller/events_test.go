package controller

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
	"github.com/trainyard/trainyard/render"
	"github.com/trainyard/trainyard/status"
)

// eventSink keeps the events the broadcaster writes: created ones, and the notes of series it
// patches (a repeat folded into an earlier event).
type eventSink struct {
	mu      sync.Mutex
	created []string
	patched int
}

func (s *eventSink) Create(_ context.Context, e *eventsv1.Event) (*eventsv1.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.created = append(s.created, e.Note)
	return e, nil
}

func (s *eventSink) Update(_ context.Context, e *eventsv1.Event) (*eventsv1.Event, error) {
	return e, nil
}

func (s *eventSink) Patch(_ context.Context, e *eventsv1.Event, _ []byte) (*eventsv1.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.patched++
	return e, nil
}

func (s *eventSink) seen() (created []string, patched int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.created), s.patched
}

// TestRestartEventsOfOneJobVersionAreKept: two replicas that end together are restarted in two
// rounds, and the second round may read the job at the resourceVersion the first did. Recorded
// through client-go's events broadcaster, as the operator records them, the second Restarting
// event must be an event of its own, not a repeat counted on the first (which keeps the first
// pod's name and backoffCount).
func TestRestartEventsOfOneJobVersionAreKept(t *testing.T) {
	sink, rec := recordingSink(t)
	job := jobAtVersion7()
	round := func(pod string, uid string, backoff int32) (*render.Output, []status.Event) {
		out := &render.Output{}
		out.Decisions.BackoffCount = backoff
		out.Decisions.Restarts = []render.Restart{{Pod: pod, Type: "worker", ExitCode: ptrTo(int32(1)), Cause: "exited with code 1"}}
		out.Decisions.Delete = []render.Deletion{{Name: pod, UID: types.UID("pod-uid-" + uid), Reason: render.DeleteRestart}}
		msg := pod + " exited with code 1; restarting it"
		return out, []status.Event{{Type: corev1.EventTypeWarning, Reason: status.EventRestarting, Message: msg}}
	}
	out1, ev1 := round("j-worker-0", "0", 1)
	recordEvents(rec, job, out1, nil, ev1)
	// The first event is in the broadcaster's cache before the second round records.
	waitFor(t, func() bool { c, _ := sink.seen(); return len(c) == 1 })
	out2, ev2 := round("j-extra-0", "1", 2)
	recordEvents(rec, job, out2, nil, ev2)

	sink.waitCreated(t, "j-worker-0 exited with code 1; restarting it", "j-extra-0 exited with code 1; restarting it")
}

func ptrTo[T any](v T) *T { return &v }

func waitFor(t *testing.T, ok func() bool) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); !ok(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("timed out")
		}
	}
}

// TestPodsCreatedEventsOfOneJobVersionAreKept: two rounds at one resourceVersion of the job that
// create a pod each (two replicas restarted alone) record two PodsCreated events, each naming its
// pod.
func TestPodsCreatedEventsOfOneJobVersionAreKept(t *testing.T) {
	sink, rec := recordingSink(t)
	job := jobAtVersion7()
	created := func(pod string) []status.Event {
		return []status.Event{{Type: corev1.EventTypeNormal, Reason: status.EventPodsCreated, Message: "created 1 pod: " + pod}}
	}
	recordEvents(rec, job, &render.Output{}, []string{"j-worker-0"}, created("j-worker-0"))
	waitFor(t, func() bool { c, _ := sink.seen(); return len(c) == 1 })
	recordEvents(rec, job, &render.Output{}, []string{"j-extra-0"}, created("j-extra-0"))
	sink.waitCreated(t, "created 1 pod: j-worker-0", "created 1 pod: j-extra-0")
}

// recordingSink is client-go's events broadcaster, as the operator records through it, writing to
// a sink the test reads; it stops with the test.
func recordingSink(t *testing.T) (*eventSink, events.EventRecorder) {
	t.Helper()
	sink := &eventSink{}
	b := events.NewBroadcaster(sink)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := b.StartRecordingToSinkWithContext(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Shutdown)
	return sink, b.NewRecorder(Scheme(), "trainyard")
}

// jobAtVersion7 is a job read at one resourceVersion, as every round of the tests reads it.
func jobAtVersion7() *batch.PyTorchTrainingJob {
	return &batch.PyTorchTrainingJob{
		TypeMeta:   metav1.TypeMeta{APIVersion: batch.GroupVersion.String(), Kind: "PyTorchTrainingJob"},
		ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "default", UID: "job-uid", ResourceVersion: "7"},
	}
}

// waitCreated waits until the sink has created exactly the events of these messages, in order,
// failing the test after 5 s.
func (s *eventSink) waitCreated(t *testing.T, want ...string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		created, patched := s.seen()
		if slices.Equal(created, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("events created %q (and %d repeats counted on an earlier one), want %q", created, patched, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
