package main

import (
	"slices"
	"testing"
	"time"
)

func TestTheFloorsWithServicesArePlayedForTheirAPIsAndNeverTheTarget(t *testing.T) {
	s := size{jobs: 200, podsPerJob: 8}
	c := &comparison{o: options{apis: []api{apiT9k}}}
	if got := c.floorVariants(); !slices.Equal(got, []floorServices{podsAlone, servicePerGroup}) {
		t.Errorf("T9k alone: floor variants %v; want the pods alone, then with a Service per job", got)
	}
	c.o.apis = []api{apiKubeflow}
	if got := c.floorVariants(); !slices.Equal(got, []floorServices{podsAlone, servicePerPod}) {
		t.Errorf("kubeflow alone: floor variants %v; want the pods alone, then with a Service per pod", got)
	}
	c.o.apis = []api{apiT9k, apiKubeflow}
	if got := c.floorVariants(); !slices.Equal(got, []floorServices{podsAlone, servicePerGroup, servicePerPod}) {
		t.Errorf("both APIs: floor variants %v; want all three", got)
	}
	c.floors = []floorResult{
		{size: s, services: servicePerPod, allRunning: measured(40 * time.Second)},
		{size: s, allRunning: measured(30 * time.Second)},
		{size: s, services: servicePerGroup, allRunning: measured(35 * time.Second)},
	}
	f, ok := c.floorOf(s)
	if !ok || f.services != podsAlone || f.allRunning.d != 30*time.Second {
		t.Errorf("floorOf = %+v, %v; want the floor of the pods alone (30 s)", f, ok)
	}
	for a, want := range map[api]time.Duration{apiT9k: 35 * time.Second, apiKubeflow: 40 * time.Second} {
		if f, _ := c.apiFloorOf(s, a); f.allRunning.d != want {
			t.Errorf("apiFloorOf(%s) = %+v; want the floor with its kinds' Services (%s)", a, f, want)
		}
	}
	if f, ok := c.apiFloorOf(size{jobs: 50, podsPerJob: 8}, apiT9k); ok {
		t.Errorf("apiFloorOf a size with no floor = %+v; want none", f)
	}
	names := map[string]bool{}
	for _, f := range c.floors {
		names[f.windowName()] = true
	}
	if len(names) != len(c.floors) {
		t.Errorf("the floors' audit windows %v; want one each", names)
	}
}
