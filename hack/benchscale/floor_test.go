package main

import (
	"slices"
	"testing"
	"time"
)

func TestTheFloorWithServicesIsPlayedForKubeflowAndNeverTheTarget(t *testing.T) {
	s := size{jobs: 200, podsPerJob: 8}
	c := &comparison{o: options{apis: []api{apiT9k}}}
	if got := c.floorVariants(); !slices.Equal(got, []bool{false}) {
		t.Errorf("T9k alone: floor variants %v; want the pods alone", got)
	}
	c.o.apis = []api{apiT9k, apiKubeflow}
	if got := c.floorVariants(); !slices.Equal(got, []bool{false, true}) {
		t.Errorf("with kubeflow: floor variants %v; want the pods alone, then with Services", got)
	}
	c.floors = []floorResult{
		{size: s, services: true, allRunning: measured(40 * time.Second)},
		{size: s, allRunning: measured(30 * time.Second)},
	}
	f, ok := c.floorOf(s)
	if !ok || f.services || f.allRunning.d != 30*time.Second {
		t.Errorf("floorOf = %+v, %v; want the floor of the pods alone (30 s)", f, ok)
	}
	if a, b := c.floors[0].windowName(), c.floors[1].windowName(); a == b {
		t.Errorf("both floors have the audit window %q; want one each", a)
	}
}
