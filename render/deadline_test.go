package render

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
)

func TestDeadlineRequeue(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := map[string]struct {
		now  time.Time
		want time.Duration // 0: no requeue
	}{
		"a deadline 60 s ahead, at a whole second, requeues after 60 s": {now: start, want: 60 * time.Second},
		"within a second the wait counts from the exact time, not the truncated one": {
			now: start.Add(10*time.Second + 400*time.Millisecond), want: 49*time.Second + 600*time.Millisecond},
		"a deadline passed asks for no requeue": {now: start.Add(61 * time.Second)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			j := pytorchJob(1)
			j.Scheduler = nil // no gang: nothing blocks the job
			j.ActiveDeadlineSeconds = ptr(int64(60))
			j.Status = batch.TrainingJobStatus{Phase: batch.JobPending, StartTime: &metav1.Time{Time: start}}
			out, err := Render(Input{Job: j, Now: tc.now})
			if err != nil {
				t.Fatal(err)
			}
			var got time.Duration
			if out.Decisions.RequeueAfter != nil {
				got = out.Decisions.RequeueAfter.Duration
			}
			if got != tc.want {
				t.Errorf("requeueAfter = %s; want %s", got, tc.want)
			}
		})
	}
}
