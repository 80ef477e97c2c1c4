package render

import (
	"sort"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
)

// resolveElastic applies the defaults: expectedReplicas defaults to maxReplicas and is clamped
// to [minReplicas, maxReplicas] (admission refuses values outside; the clamp guards older objects).
func resolveElastic(e *batch.ElasticConfig) *Elastic {
	r := &Elastic{Min: deref(e.MinReplicas, 1), Max: deref(e.MaxReplicas, 1)}
	if r.Max < r.Min {
		r.Max = r.Min
	}
	r.Expected = min(max(deref(e.ExpectedReplicas, r.Max), r.Min), r.Max)
	return r
}

// splitElastic sizes the replica types for a job of expected pods in all. Types of weight 0 keep
// their replicas; the rest of the expected count is divided among the weighted types in proportion
// to their scalingWeight, by largest remainder with ties to spec order. So the pod count stays
// within [minReplicas, maxReplicas], as torchrun's --nnodes=min:max says. When no type has a
// weight, every type but master shares equally (a job whose only type is master keeps its one
// master: admission allows master at most one replica). The master role's type always keeps at
// least one replica: replica 0 of the master is never scaled away.
func splitElastic(types []ReplicaType, expected int32) []ReplicaType {
	out := make([]ReplicaType, len(types))
	copy(out, types)
	weights := make([]int64, len(out))
	var total int64
	for i, t := range out {
		weights[i] = int64(t.ScalingWeight)
		total += weights[i]
	}
	if total == 0 {
		for i, t := range out {
			if t.Type != batch.PyTorchReplicaMaster {
				weights[i] = 1
				total++
			}
		}
	}
	if total == 0 {
		return out
	}
	// The fixed types' replicas count towards expected; the weighted types share the rest.
	share := int64(expected)
	for i, t := range out {
		if weights[i] == 0 {
			share -= int64(t.Replicas)
		}
	}
	share = max(share, 0)
	type portion struct {
		index     int
		remainder int64
	}
	var portions []portion
	assigned := int64(0)
	for i := range out {
		if weights[i] == 0 {
			continue
		}
		n := share * weights[i]
		out[i].Replicas = int32(n / total)
		assigned += n / total
		portions = append(portions, portion{i, n % total})
	}
	sort.SliceStable(portions, func(a, b int) bool { return portions[a].remainder > portions[b].remainder })
	for k := 0; assigned < share; k++ {
		out[portions[k%len(portions)].index].Replicas++
		assigned++
	}
	if m := masterTypeIndex(types); m >= 0 && out[m].Replicas < 1 {
		out[m].Replicas = 1
	}
	return out
}

// masterTypeIndex is the index of the replica type whose replica 0 is the master: the type
// named master, else the first type, either only if it has a replica. Note: a master type with
// replicas 0 is as good as absent (the schema allows it; Kubeflow's Master takes 0 or 1): its
// replica 0 would be a pod that never exists, which every rank waits for and whose success the
// job waits for. With no replica in any type, the first type.
func masterTypeIndex(types []ReplicaType) int {
	if len(types) == 0 {
		return -1
	}
	for i, t := range types {
		if t.Type == batch.PyTorchReplicaMaster && t.Replicas > 0 {
			return i
		}
	}
	for i, t := range types {
		if t.Replicas > 0 {
			return i
		}
	}
	return 0
}
