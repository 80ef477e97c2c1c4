package render

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
)

func TestSplitElastic(t *testing.T) {
	type spec struct {
		Type     string
		Replicas int32
		Weight   int32
	}
	cases := map[string]struct {
		types    []spec
		expected int32
		want     map[string]int32
	}{
		"one weighted type takes every replica": {
			types: []spec{{"worker", 2, 1}}, expected: 5, want: map[string]int32{"worker": 5},
		},
		"weights split in proportion": {
			types: []spec{{"a", 1, 1}, {"b", 1, 3}}, expected: 8, want: map[string]int32{"a": 2, "b": 6},
		},
		"the largest remainder gets the spare replica": {
			types: []spec{{"a", 1, 1}, {"b", 1, 2}}, expected: 4, want: map[string]int32{"a": 1, "b": 3},
		},
		"equal remainders go to spec order": {
			types: []spec{{"a", 1, 1}, {"b", 1, 1}}, expected: 3, want: map[string]int32{"a": 2, "b": 1},
		},
		"a type of weight 0 keeps its replicas, which count towards expected": {
			types: []spec{{"master", 1, 0}, {"worker", 2, 1}}, expected: 6, want: map[string]int32{"master": 1, "worker": 5},
		},
		"without weights every type but master shares what master leaves": {
			types: []spec{{"master", 1, 0}, {"worker", 2, 0}, {"helper", 1, 0}}, expected: 6, want: map[string]int32{"master": 1, "worker": 3, "helper": 2},
		},
		"fixed types larger than expected leave the weighted ones empty": {
			types: []spec{{"master", 1, 0}, {"ps", 3, 0}, {"worker", 2, 1}}, expected: 2, want: map[string]int32{"master": 1, "ps": 3, "worker": 0},
		},
		"the master type is never scaled to zero": {
			types: []spec{{"worker", 4, 1}, {"other", 1, 5}}, expected: 1, want: map[string]int32{"worker": 1, "other": 1},
		},
		"scaling to zero empties the weighted types": {
			types: []spec{{"master", 1, 0}, {"worker", 3, 1}}, expected: 0, want: map[string]int32{"master": 1, "worker": 0},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var types []ReplicaType
			for _, s := range tc.types {
				types = append(types, ReplicaType{Type: s.Type, Replicas: s.Replicas, ScalingWeight: s.Weight})
			}
			got := map[string]int32{}
			for _, rt := range splitElastic(types, tc.expected) {
				got[rt.Type] = rt.Replicas
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("splitElastic (-want +got):\n%s", diff)
			}
		})
	}
}

func TestResolveElastic(t *testing.T) {
	cases := map[string]struct {
		in   batch.ElasticConfig
		want Elastic
	}{
		"expected defaults to max":             {batch.ElasticConfig{MinReplicas: ptr(int32(2)), MaxReplicas: ptr(int32(8))}, Elastic{2, 8, 8}},
		"expected within bounds is kept":       {batch.ElasticConfig{MinReplicas: ptr(int32(2)), MaxReplicas: ptr(int32(8)), ExpectedReplicas: ptr(int32(5))}, Elastic{2, 8, 5}},
		"expected below min is clamped to min": {batch.ElasticConfig{MinReplicas: ptr(int32(2)), MaxReplicas: ptr(int32(8)), ExpectedReplicas: ptr(int32(0))}, Elastic{2, 8, 2}},
		"expected above max is clamped to max": {batch.ElasticConfig{MinReplicas: ptr(int32(2)), MaxReplicas: ptr(int32(8)), ExpectedReplicas: ptr(int32(30))}, Elastic{2, 8, 8}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, *resolveElastic(&tc.in)); diff != "" {
				t.Errorf("resolveElastic (-want +got):\n%s", diff)
			}
		})
	}
}
