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
	if got := s.of("a"); got != 300 {
		t.Errorf("a job alone: share %d, want 300", got)
	}
	s.set("a", true)
	if got := s.of("a"); got != 300 {
		t.Errorf("the one paced job: share %d, want 300", got)
	}
	if got := s.of("b"); got != 150 {
		t.Errorf("a second job beside a paced one: share %d, want 150 (itself counted)", got)
	}
	s.set("b", true)
	s.set("c", true)
	if a, b := s.of("a"), s.of("b"); a != 100 || b != 100 {
		t.Errorf("three paced jobs: shares %d and %d, want 100", a, b)
	}
	s.set("b", false)
	s.set("c", false)
	if got := s.of("a"); got != 300 {
		t.Errorf("the others no longer paced: share %d, want 300", got)
	}
	for i := range 400 {
		s.set(types.UID(fmt.Sprint("job-", i)), true)
	}
	if got := s.of("a"); got != 1 {
		t.Errorf("401 paced jobs: share %d, want 1 (never 0: each job makes progress)", got)
	}

	if got := newSchedulerShares(1000, 300).of("a"); got != 300 {
		t.Errorf("operator's bound above the job's: share %d, want the job's 300", got)
	}
	perJobOnly := newSchedulerShares(0, 300)
	perJobOnly.set("a", true)
	if got := perJobOnly.of("b"); got != 300 {
		t.Errorf("no operator-wide bound: share %d, want the job's 300", got)
	}
	if got := newSchedulerShares(300, 0).of("a"); got != 0 {
		t.Errorf("pacing off: share %d, want 0", got)
	}
	var none *schedulerShares
	none.set("a", true)
	if got := none.of("a"); got != 0 {
		t.Errorf("no shares: %d, want 0", got)
	}
}

// A job that starts while another is paced creates only its share of the operator's bound, and
// stops counting against the others once it holds nothing back.
func TestAJobBesideAPacedOneCreatesItsShare(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c, r := newJobCreatedAt(t, &now) // 1 master + 3 workers
	r.shares = newSchedulerShares(4, 4)
	r.shares.set("another-job", true)
	reconcileOnce(t, r)
	_, pods := c.get()
	if len(pods.Items) != 2 || !r.holdsPods("job-uid") {
		t.Fatalf("beside a paced job: %d pods, holding pods back %v; want 2 (half of 4) and true", len(pods.Items), r.holdsPods("job-uid"))
	}
	if got := r.shares.of("another-job"); got != 2 {
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
	if got := r.shares.of("another-job"); got != 4 {
		t.Errorf("the other job's share once this one holds nothing back: %d, want 4", got)
	}
}

// A paced job that is deleted no longer counts against the others.
func TestADeletedJobGivesUpItsShare(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c, r := newJobCreatedAt(t, &now)
	r.shares = newSchedulerShares(4, 4)
	r.shares.set("another-job", true)
	reconcileOnce(t, r)
	if !r.holdsPods("job-uid") || r.shares.of("another-job") != 2 {
		t.Fatalf("holding %v, the other's share %d; want true and 2", r.holdsPods("job-uid"), r.shares.of("another-job"))
	}
	job, _ := c.get()
	if err := c.server.Delete(context.Background(), job); err != nil {
		t.Fatal(err)
	}
	reconcileOnce(t, r)
	if got := r.shares.of("another-job"); got != 4 {
		t.Errorf("the other job's share once this one is gone: %d, want 4", got)
	}
}
