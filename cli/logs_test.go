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
