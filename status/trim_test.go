package status

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
	kubeflowv1 "github.com/trainyard/trainyard/apis/kubeflow/v1"
	"github.com/trainyard/trainyard/render"
)

// The size trimReplicaStatus counts is the size encoding/json writes, field by field.
func TestReplicaStatusSize(t *testing.T) {
	for name, r := range map[string]batch.ReplicaStatus{
		"name only":                     {Name: "j-worker-0"},
		"uid and phase":                 {Name: "j-worker-0", UID: "0b7e2c4a-5f1d-4e8b-9c3a-2d6f8e1a7b90", Phase: corev1.PodPending},
		"no uid":                        {Name: "j-master-0", Phase: corev1.PodRunning, Containers: []batch.ContainerStatus{{Name: "pytorch", State: "running"}}},
		"an exit code and a bare entry": {Name: "a-long-job-name-for-a-big-run-worker-10999", UID: "u", Phase: corev1.PodFailed, Containers: []batch.ContainerStatus{{Name: "pytorch", State: "terminated", ExitCode: ptr(int32(-137))}, {Name: "istio-proxy"}}},
		"three containers, exit 0":      {Name: "x", Phase: corev1.PodSucceeded, Containers: []batch.ContainerStatus{{Name: "a", State: "terminated", ExitCode: ptr(int32(0))}, {Name: "b", State: "waiting"}, {Name: "c", State: "running"}}},
	} {
		data, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if got := replicaStatusSize(&r); got != len(data) {
			t.Errorf("%s: counted %d bytes; encoding/json writes %d: %s", name, got, len(data), data)
		}
	}
}

func entries(typ string, phases ...corev1.PodPhase) []batch.ReplicaStatus {
	out := make([]batch.ReplicaStatus, len(phases))
	for i, p := range phases {
		out[i] = batch.ReplicaStatus{Name: render.PodName("j", typ, int32(i)), Phase: p}
	}
	return out
}

func entryNames(list []batch.ReplicaStatus) []string {
	out := make([]string, len(list))
	for i, r := range list {
		out[i] = r.Name
	}
	return out
}

// Over the budget, the pods a user looks for (not Running, not Succeeded) are kept first, then the
// others by type and index; each list keeps its index order and counts what it left out.
func TestTrimReplicaStatus(t *testing.T) {
	R, S, P, F := corev1.PodRunning, corev1.PodSucceeded, corev1.PodPending, corev1.PodFailed
	build := func() []batch.TaskStatus {
		return []batch.TaskStatus{
			{Type: "master", ReplicaStatus: entries("master", R)},
			{Type: "worker", ReplicaStatus: entries("worker", R, P, R, F, R, S), ReplicaStatusOmitted: 9},
		}
	}
	size := func(tasks []batch.TaskStatus, pick ...string) int {
		n := 0
		for _, t := range tasks {
			for _, r := range t.ReplicaStatus {
				for _, p := range pick {
					if r.Name == p {
						n += replicaStatusSize(&r) + 1
					}
				}
			}
		}
		return n
	}

	// Room for every entry: nothing changes, and a count left from an earlier trim is cleared.
	tasks := build()
	trimReplicaStatus(tasks, size(tasks, "j-master-0", "j-worker-0", "j-worker-1", "j-worker-2", "j-worker-3", "j-worker-4", "j-worker-5"))
	if len(tasks[1].ReplicaStatus) != 6 || tasks[1].ReplicaStatusOmitted != 0 || tasks[0].ReplicaStatusOmitted != 0 {
		t.Errorf("under budget: %v (omitted %d); want all 6 workers, none omitted", entryNames(tasks[1].ReplicaStatus), tasks[1].ReplicaStatusOmitted)
	}

	// Room for four: the pending and the failed worker, then master 0 and worker 0.
	tasks = build()
	trimReplicaStatus(tasks, size(tasks, "j-worker-1", "j-worker-3", "j-master-0", "j-worker-0"))
	want := [][]string{{"j-master-0"}, {"j-worker-0", "j-worker-1", "j-worker-3"}}
	for i, w := range want {
		if got := entryNames(tasks[i].ReplicaStatus); fmt.Sprint(got) != fmt.Sprint(w) {
			t.Errorf("%s: kept %v; want %v", tasks[i].Type, got, w)
		}
	}
	if tasks[0].ReplicaStatusOmitted != 0 || tasks[1].ReplicaStatusOmitted != 3 {
		t.Errorf("omitted: master %d, worker %d; want 0 and 3", tasks[0].ReplicaStatusOmitted, tasks[1].ReplicaStatusOmitted)
	}

	// Room for one only: the pending worker, not master 0.
	tasks = build()
	trimReplicaStatus(tasks, size(tasks, "j-worker-1"))
	if len(tasks[0].ReplicaStatus) != 0 || fmt.Sprint(entryNames(tasks[1].ReplicaStatus)) != "[j-worker-1]" {
		t.Errorf("room for one: master %v, worker %v; want the pending worker alone", entryNames(tasks[0].ReplicaStatus), entryNames(tasks[1].ReplicaStatus))
	}
}

// bigRun is a running job of 1 master and workers workers, each pod with a 36-character UID and
// a sidecar beside the training container, as a cluster reports them; worker pending is Pending.
func bigRun(workers, pending int32) []corev1.Pod {
	pods := []corev1.Pod{podOf("master", 0, corev1.PodRunning)}
	for i := range workers {
		phase := corev1.PodRunning
		if i == pending {
			phase = corev1.PodPending
		}
		pods = append(pods, podOf("worker", i, phase))
	}
	for i := range pods {
		pods[i].UID = types.UID(fmt.Sprintf("%08x-5f1d-4e8b-9c3a-2d6f8e1a7b90", i))
		pods[i].Status.ContainerStatuses = []corev1.ContainerStatus{
			{Name: "pytorch", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
			{Name: "istio-proxy", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
		}
	}
	return pods
}

// A 10,000-pod T9k job whose full list would be about 2 MB (past etcd's 1.5 MiB) lists at most
// 1 MiB of pods, the pending one among them, and still counts every pod; a Kubeflow job of the
// same size keeps its list (its status holds counts only).
func TestDeriveKeepsABigJobsStatusUnderTheLimit(t *testing.T) {
	const workers, pending = 9999, 9000
	running := batch.TrainingJobStatus{Phase: batch.JobRunning}
	st, _ := derive(t, newJob(workers).Status(running).Obj(), bigRun(workers, pending), t0)
	data, err := json.Marshal(st.Tasks)
	if err != nil {
		t.Fatal(err)
	}
	full := 0
	for _, p := range bigRun(workers, pending) {
		r := replicaStatus(&p)
		full += replicaStatusSize(&r)
	}
	if full <= 3<<19 {
		t.Fatalf("the untrimmed list would be %d bytes, not past the 1.5 MiB this test is about", full)
	}
	nListed, nOmitted := listed(&st), omitted(&st)
	if len(data) > replicaStatusBudget+1024 || nOmitted == 0 || nListed+nOmitted != workers+1 {
		t.Errorf("tasks %d bytes (budget %d), %d listed, %d omitted; want under the budget and all %d pods listed or counted as omitted", len(data), replicaStatusBudget, nListed, nOmitted, workers+1)
	}
	if st.Aggregate.Running != workers || st.Aggregate.Pending != 1 {
		t.Errorf("aggregate %+v; want every pod counted: %d running, 1 pending", st.Aggregate, workers)
	}
	w := st.Tasks[1].ReplicaStatus
	found := false
	for i := range w {
		found = found || w[i].Name == render.PodName("j", "worker", pending)
		if i > 0 && index(w[i-1].Name) >= index(w[i].Name) {
			t.Fatalf("workers not in index order: %s before %s", w[i-1].Name, w[i].Name)
		}
	}
	if !found {
		t.Errorf("the pending worker %d is not listed: the pods a user looks for come first", pending)
	}
	t.Logf("%d pods: the full list %d bytes; listed %d (%d bytes of tasks), %d omitted", workers+1, full, nListed, len(data), nOmitted)

	j := kubeflowJob(false, kubeflowv1.JobStatus{})
	j.Replicas[1].Replicas = workers
	kst, _ := derive(t, j, bigRun(workers, pending), t0)
	if n, all := omitted(&kst), listed(&kst); n != 0 || all != workers+1 {
		t.Errorf("a Kubeflow job's list: %d listed, %d omitted; want all %d listed (its status holds counts, never the list)", all, n, workers+1)
	}
}

// index is the replica index a pod name ends with.
func index(pod string) int {
	n, err := strconv.Atoi(pod[strings.LastIndex(pod, "-")+1:])
	if err != nil {
		panic(err)
	}
	return n
}
