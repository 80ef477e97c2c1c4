package kueue

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestTopologyDomains: Domains reads Kueue's compact topology assignment (universal and individual
// values and counts, prefixes and suffixes, several slices), and stops at a slice that does not
// hold what its domainCount says rather than reading past it.
func TestTopologyDomains(t *testing.T) {
	for name, tc := range map[string]struct {
		assignment string
		want       []TopologyDomain
	}{
		"universal and individual values and counts, over two slices": {
			assignment: `{"levels":["rack","host"],"slices":[
				{"domainCount":2,"podCounts":{"individual":[3,1]},"valuesPerLevel":[{"universal":"r1"},{"individual":{"prefix":"n-","suffix":".x","roots":["a","b"]}}]},
				{"domainCount":1,"podCounts":{"universal":4},"valuesPerLevel":[{"universal":"r2"},{"individual":{"roots":["c"]}}]}]}`,
			want: []TopologyDomain{{Values: []string{"r1", "n-a.x"}, Count: 3}, {Values: []string{"r1", "n-b.x"}, Count: 1}, {Values: []string{"r2", "c"}, Count: 4}},
		},
		"fewer roots than domains: the list ends at the first domain without a value": {
			assignment: `{"levels":["host"],"slices":[{"domainCount":3,"podCounts":{"universal":1},"valuesPerLevel":[{"individual":{"roots":["a","b"]}}]}]}`,
			want:       []TopologyDomain{{Values: []string{"a"}, Count: 1}, {Values: []string{"b"}, Count: 1}},
		},
		"fewer counts than domains": {
			assignment: `{"levels":["host"],"slices":[{"domainCount":2,"podCounts":{"individual":[5]},"valuesPerLevel":[{"individual":{"roots":["a","b"]}}]}]}`,
			want:       []TopologyDomain{{Values: []string{"a"}, Count: 5}},
		},
		"a slice without a value for every level": {
			assignment: `{"levels":["rack","host"],"slices":[{"domainCount":1,"podCounts":{"universal":1},"valuesPerLevel":[{"universal":"r1"}]}]}`,
		},
	} {
		t.Run(name, func(t *testing.T) {
			var a TopologyAssignment
			if err := json.Unmarshal([]byte(tc.assignment), &a); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, a.Domains()); diff != "" {
				t.Errorf("domains (-want +got):\n%s", diff)
			}
		})
	}
}
