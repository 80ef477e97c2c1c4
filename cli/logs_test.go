package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
)

// TestLogsInReplicaOrder: without --follow, each pod's log is printed whole, one pod after the
// other in replica order (worker-2 before worker-10), however fast each log arrives.
func TestLogsInReplicaOrder(t *testing.T) {
	j := &job{info: &kinds[0], obj: ptj(nil, batch.JobRunning)}
	var pods []corev1.Pod
	for i := 10; i >= 0; i-- {
		pods = append(pods, corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("p-worker-%d", i),
			Labels: map[string]string{batch.LabelReplicaType: "worker", batch.LabelReplicaIndex: fmt.Sprint(i)}}})
	}
	s := &session{namespace: "ns", openLog: func(ctx context.Context, p *corev1.Pod, opts *corev1.PodLogOptions) (io.ReadCloser, error) {
		i := 0
		fmt.Sscanf(p.Labels[batch.LabelReplicaIndex], "%d", &i)
		time.Sleep(time.Duration(11-i) * 5 * time.Millisecond) // the lower ranks' logs come last
		return io.NopCloser(strings.NewReader(fmt.Sprintf("rank %d line 1\nrank %d line 2\n", i, i))), nil
	}}
	var out, errOut bytes.Buffer
	if err := s.streamLogs(context.Background(), j, pods, corev1.PodLogOptions{}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	var want strings.Builder
	for i := range 11 {
		for line := 1; line <= 2; line++ {
			fmt.Fprintf(&want, "[%-9s] rank %d line %d\n", fmt.Sprintf("worker-%d", i), i, line)
		}
	}
	if out.String() != want.String() {
		t.Errorf("logs:\n%s\nwant:\n%s", out.String(), want.String())
	}
}

// TestChoosePods: logs says why it has nothing to show (no pod, no pod of the filters, no
// container started: the API server gives an unscheduled pod's log as empty, exit 0, where logs
// printed nothing) and names the pods it leaves out.
func TestChoosePods(t *testing.T) {
	j := &job{info: &kinds[0], obj: ptj(nil, batch.JobPending)}
	j.model = kinds[0].model(j.obj)
	pod := func(i int, st corev1.PodStatus) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("p-worker-%d", i),
			Labels: map[string]string{batch.LabelReplicaType: "worker", batch.LabelReplicaIndex: fmt.Sprint(i)}}, Status: st}
	}
	unscheduled := corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable"}}}
	running := corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: "pytorch", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}
	for _, tc := range []struct {
		name      string
		pods      []corev1.Pod
		typ       string
		index     int
		want      int
		wantErr   string
		wantNoted string
	}{
		{name: "no pod", index: -1, wantErr: "PyTorchTrainingJob p has no pod (it is Pending): no log to show"},
		{name: "none of the filters", pods: []corev1.Pod{pod(1, running), pod(0, running)}, typ: "master", index: -1,
			wantErr: "PyTorchTrainingJob p has no pod of --replica-type master (it has worker-0, worker-1)"},
		{name: "none started", pods: []corev1.Pod{pod(0, unscheduled)}, index: -1,
			wantErr: "PyTorchTrainingJob p: no container has started yet, so there is no log (worker-0 Unschedulable); trainyard describe pytorchtrainingjob/p -n ns says why"},
		{name: "some started", pods: []corev1.Pod{pod(0, running), pod(1, unscheduled)}, index: -1, want: 1,
			wantNoted: "trainyard: worker-1 Unschedulable has not started yet: no log\n"},
		{name: "an index", pods: []corev1.Pod{pod(0, running), pod(1, running)}, typ: "Worker", index: 1, want: 1},
	} {
		var errOut bytes.Buffer
		got, err := choosePods(j, tc.pods, tc.typ, tc.index, &errOut)
		switch {
		case tc.wantErr != "" && (err == nil || err.Error() != tc.wantErr):
			t.Errorf("%s: %v; want %s", tc.name, err, tc.wantErr)
		case tc.wantErr == "" && (err != nil || len(got) != tc.want):
			t.Errorf("%s: %d pods, %v; want %d", tc.name, len(got), err, tc.want)
		}
		if errOut.String() != tc.wantNoted {
			t.Errorf("%s: noted %q; want %q", tc.name, errOut.String(), tc.wantNoted)
		}
	}
}
