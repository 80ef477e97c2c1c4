package controller

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

func TestSchedulerSharesDivideTheBoundBetweenPacedJobs(t *testing.T) {
	s := newSchedulerShares(300, 300)
	if got := s.window("a", 1500); got != 300 {
		t.Errorf("a big job alone: window %d, want 300", got)
	}
	s.set("a", true, 300)
	if got := s.window("a", 1200); got != 300 {
		t.Errorf("the one paced job: window %d, want 300", got)
	}
	if got := s.window("b", 1500); got != 1 {
		t.Errorf("a big job beside a paced one that fills the bound: window %d, want 1 (one pod, whose binding wakes it)", got)
	}
	if got := s.window("b", 8); got != 150 {
		t.Errorf("a small job beside a paced one: window %d, want its part, 150 (all its 8 pods at once)", got)
	}
	s.set("b", true, 1)
	if got := s.window("a", 1200); got != 150 {
		t.Errorf("the first job beside a second paced one: window %d, want its part, 150", got)
	}
	s.set("a", true, 120) // its pods bound since: it counts what waits now
	if got := s.window("b", 1499); got != 150 {
		t.Errorf("room for 180 beside the first's 120: window %d, want its part, 150", got)
	}
	s.set("a", true, 200)
	if got := s.window("b", 1499); got != 100 {
		t.Errorf("room for 100 beside the first's 200: window %d, want 100", got)
	}
	s.set("c", true, 1)
	if a, b := s.window("a", 1000), s.window("b", 8); a != 100 || b != 100 {
		t.Errorf("three paced jobs: windows %d and %d, want 100", a, b)
	}
	s.set("b", false, 0)
	s.set("c", false, 0)
	if got := s.window("a", 1000); got != 300 {
		t.Errorf("the others no longer paced: window %d, want 300", got)
	}
	if s.waiting != 200 || len(s.paced) != 1 {
		t.Errorf("counted %d waiting pods of %d jobs; want 200 of 1", s.waiting, len(s.paced))
	}
	for i := range 400 {
		s.set(types.UID(fmt.Sprint("job-", i)), true, 1)
	}
	if got := s.window("a", 1000); got != 1 {
		t.Errorf("401 paced jobs: window %d, want 1 (never 0: each job makes progress)", got)
	}

	if got := newSchedulerShares(1000, 300).window("a", 5000); got != 300 {
		t.Errorf("operator's bound above the job's: window %d, want the job's 300", got)
	}
	perJobOnly := newSchedulerShares(0, 300)
	perJobOnly.set("a", true, 300)
	if got := perJobOnly.window("b", 5000); got != 300 {
		t.Errorf("no operator-wide bound: window %d, want the job's 300", got)
	}
	if got := newSchedulerShares(300, 0).window("a", 5000); got != 0 {
		t.Errorf("pacing off: window %d, want 0", got)
	}
	var none *schedulerShares
	none.set("a", true, 3)
	if got := none.window("a", 5000); got != 0 {
		t.Errorf("no shares: %d, want 0", got)
	}
}

// A job that starts while another is paced creates only its share of the operator's bound, and
// stops counting against the others once it holds nothing back.
func TestAJobBesideAPacedOneCreatesItsShare(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c, r := newJobCreatedAt(t, &now) // 1 master + 3 workers
	r.shares = newSchedulerShares(4, 4)
	r.shares.set("another-job", true, 1)
	reconcileOnce(t, r)
	_, pods := c.get()
	if len(pods.Items) != 2 || !r.holdsPods("job-uid") {
		t.Fatalf("beside a paced job: %d pods, holding pods back %v; want 2 (half of 4) and true", len(pods.Items), r.holdsPods("job-uid"))
	}
	if got := r.shares.window("another-job", 10); got != 2 {
		t.Errorf("the other job's share: %d, want 2", got)
	}
	for _, p := range pods.Items {
		p.Spec.NodeName = "node-1"
		if err := c.server.Update(context.Background(), &p); err != nil {
			t.Fatal(err)
		}
	}
	now = now.Add(time.Second)
	reconcileOnce(t, r)
	if _, pods = c.get(); len(pods.Items) != 4 || r.holdsPods("job-uid") {
		t.Fatalf("after the bindings: %d pods, holding pods back %v; want 4 and false", len(pods.Items), r.holdsPods("job-uid"))
	}
	if got := r.shares.window("another-job", 10); got != 4 {
		t.Errorf("the other job's share once this one holds nothing back: %d, want 4", got)
	}
}

// A paced job that is deleted no longer counts against the others.
func TestADeletedJobGivesUpItsShare(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c, r := newJobCreatedAt(t, &now)
	r.shares = newSchedulerShares(4, 4)
	r.shares.set("another-job", true, 1)
	reconcileOnce(t, r)
	if !r.holdsPods("job-uid") || r.shares.window("another-job", 10) != 2 {
		t.Fatalf("holding %v, the other's share %d; want true and 2", r.holdsPods("job-uid"), r.shares.window("another-job", 10))
	}
	job, _ := c.get()
	if err := c.server.Delete(context.Background(), job); err != nil {
		t.Fatal(err)
	}
	reconcileOnce(t, r)
	if got := r.shares.window("another-job", 10); got != 4 {
		t.Errorf("the other job's share once this one is gone: %d, want 4", got)
	}
}
