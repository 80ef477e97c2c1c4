package status

import (
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
)

// replicaStatusBudget bounds, in bytes of JSON, the pods a T9k job's status lists
// (tasks[].replicaStatus). The API server stores a custom resource whole as one etcd value, and
// etcd refuses a request over 1.5 MiB (its --max-request-bytes default): past that, every status
// write of the job fails, so it never says Running, Succeeded or Failed. A pod's entry is about
// 140 bytes with short names and one container, so the list alone reaches the limit at about
// 11,000 pods, and at 4,000 to 5,000 with long names and sidecars. 1 MiB leaves half a MiB for
// the job's spec, metadata (managedFields, kubectl's last-applied annotation) and the rest of
// its status.
const replicaStatusBudget = 1 << 20

// trimReplicaStatus keeps the tasks' replicaStatus lists within budget bytes of JSON. Under
// budget (every job of a few thousand pods) it changes nothing. Over it, it keeps the entries a
// user looks for first, the pods that are neither Running nor Succeeded (pending, failed,
// unknown), then the others by type and index, as many as fit; each list keeps its index order,
// and replicaStatusOmitted counts what was left out.
func trimReplicaStatus(tasks []batch.TaskStatus, budget int) {
	total := 0
	for i := range tasks {
		tasks[i].ReplicaStatusOmitted = 0
		for j := range tasks[i].ReplicaStatus {
			total += replicaStatusSize(&tasks[i].ReplicaStatus[j]) + 1 // the comma between entries
		}
	}
	if total <= budget {
		return
	}
	type entry struct{ task, index, size int }
	var first, rest []entry
	for i := range tasks {
		for j := range tasks[i].ReplicaStatus {
			r := &tasks[i].ReplicaStatus[j]
			e := entry{i, j, replicaStatusSize(r) + 1}
			if r.Phase == corev1.PodRunning || r.Phase == corev1.PodSucceeded {
				rest = append(rest, e)
			} else {
				first = append(first, e)
			}
		}
	}
	keep := make([][]bool, len(tasks))
	for i := range tasks {
		keep[i] = make([]bool, len(tasks[i].ReplicaStatus))
	}
	left := budget
	for _, e := range slices.Concat(first, rest) {
		if e.size > left {
			break
		}
		left -= e.size
		keep[e.task][e.index] = true
	}
	for i := range tasks {
		list := tasks[i].ReplicaStatus
		kept := list[:0]
		for j := range list {
			if keep[i][j] {
				kept = append(kept, list[j])
			}
		}
		tasks[i].ReplicaStatusOmitted = int32(len(list) - len(kept))
		clear(list[len(kept):])
		tasks[i].ReplicaStatus = kept
	}
}

// replicaStatusSize is the length of r as encoding/json writes it. Pod, container and phase
// names are DNS labels and UIDs hexadecimal, so no character needs escaping; a test holds the
// count to json.Marshal's.
func replicaStatusSize(r *batch.ReplicaStatus) int {
	n := len(`{"name":""}`) + len(r.Name)
	if r.UID != "" {
		n += len(`,"uid":""`) + len(r.UID)
	}
	if r.Phase != "" {
		n += len(`,"phase":""`) + len(r.Phase)
	}
	if len(r.Containers) > 0 {
		n += len(`,"containers":[]`) + len(r.Containers) - 1
		for _, c := range r.Containers {
			n += len(`{"name":""}`) + len(c.Name)
			if c.State != "" {
				n += len(`,"state":""`) + len(c.State)
			}
			if c.ExitCode != nil {
				n += len(`,"exitCode":`) + len(strconv.Itoa(int(*c.ExitCode)))
			}
		}
	}
	return n
}
