package controller

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

func TestSchedulerSharesDivideTheBoundBetweenPacedJobs(t *testing.T) {
	s := newSchedulerShares(300, 300)
	// round is one job's round: its part and room, then what it left waiting if it held pods back.
	round := func(what string, uid types.UID, wantPart, wantRoom int, held bool, waiting int) {
		t.Helper()
		part, room := s.parts(uid)
		if part != wantPart || room == nil || *room != wantRoom {
			t.Errorf("%s: part %d, room %v; want %d and %d", what, part, deref(room), wantPart, wantRoom)
		}
		s.set(uid, held, waiting)
	}
	round("a job alone", "a", 300, 300, true, 300)
	round("the one paced job (its own waiting pods leave its room whole)", "a", 300, 300, true, 300)
	round("a second job beside a paced one that fills the bound", "b", 150, 0, true, 1)
	round("the first job beside a second paced one", "a", 150, 299, true, 120) // its pods bound since
	round("the second beside the first's 120", "b", 150, 180, true, 150)
	round("a third job", "c", 100, 30, true, 1)
	round("three paced jobs", "a", 100, 149, true, 100)
	round("a small job beside them takes no share once its round is done", "d", 75, 49, false, 0)
	round("the second, the small job gone", "b", 100, 199, false, 0)
	round("the third, the second done", "c", 150, 200, false, 0)
	round("the first, alone again", "a", 300, 300, true, 90)
	if s.waiting != 90 || len(s.paced) != 1 || !s.paces("a") || s.paces("b") {
		t.Errorf("counted %d waiting pods of %d jobs (a paced %v, b paced %v); want 90 of 1, a alone", s.waiting, len(s.paced), s.paces("a"), s.paces("b"))
	}
	for i := range 400 {
		s.set(types.UID(fmt.Sprint("job-", i)), true, 1)
	}
	round("401 paced jobs (a part is never 0: each job makes progress)", "a", 1, -100, true, 90)

	if part, _ := newSchedulerShares(1000, 300).parts("a"); part != 300 {
		t.Errorf("operator's bound above the job's: part %d, want the job's 300", part)
	}
	perJobOnly := newSchedulerShares(0, 300)
	perJobOnly.set("a", true, 300)
	if part, room := perJobOnly.parts("b"); part != 300 || room != nil {
		t.Errorf("no operator-wide bound: part %d, room %v; want the job's 300 and none", part, deref(room))
	}
	if part, room := newSchedulerShares(300, 0).parts("a"); part != 0 || room != nil {
		t.Errorf("pacing off: part %d, room %v; want 0 and none", part, deref(room))
	}
	var none *schedulerShares
	none.set("a", true, 3)
	if part, room := none.parts("a"); part != 0 || room != nil || none.paces("a") {
		t.Errorf("no shares: part %d, room %v; want 0 and none, and nothing paced", part, deref(room))
	}
}

// Rounds that render at the same moment, each asking before any has been recorded, share the
// bound: a round counts against the others' room from the moment it asks. It does not divide the
// bound into parts: a burst's small jobs rendering together keep parts that fit their pods.
func TestRoundsRenderingTogetherShareTheBound(t *testing.T) {
	s := newSchedulerShares(300, 300)
	var parts, rooms []int
	for _, uid := range []types.UID{"a", "b", "c"} {
		part, room := s.parts(uid)
		parts, rooms = append(parts, part), append(rooms, *room)
	}
	if want := []int{300, 300, 300}; !slices.Equal(parts, want) {
		t.Errorf("parts %v, want %v", parts, want)
	}
	if want := []int{300, 0, -1}; !slices.Equal(rooms, want) {
		t.Errorf("rooms %v, want %v (the first round may leave 300 waiting, the others one each)", rooms, want)
	}
	s.set("b", false, 0) // a small job after all
	if part, room := s.parts("d"); part != 300 || *room != -1 {
		t.Errorf("beside a's 300 and c's one asking: part %d, room %d; want 300 and -1", part, *room)
	}
	s.set("a", true, 300)
	s.set("c", true, 1)
	s.set("d", true, 1)
	if s.waiting != 302 || len(s.asking) != 0 {
		t.Errorf("recorded: %d waiting, %d rounds asking; want 302 and none", s.waiting, len(s.asking))
	}

	burst := newSchedulerShares(300, 300)
	burst.set("big", true, 300)
	for i := range 40 {
		if part, _ := burst.parts(types.UID(fmt.Sprint("small-", i))); part != 150 {
			t.Fatalf("the %dth small round rendering together beside one paced job: part %d, want 150", i+1, part)
		}
	}
}

func deref(p *int) any {
	if p == nil {
		return nil
	}
	return *p
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
	if part, room := r.shares.parts("another-job"); part != 2 || *room != 2 {
		t.Errorf("the other job's part and room: %d and %d, want 2 and 2", part, *room)
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
	if part, room := r.shares.parts("another-job"); part != 4 || *room != 4 {
		t.Errorf("the other job's part and room once this one holds nothing back: %d and %d, want 4 and 4", part, *room)
	}
}

// A paced job that is deleted no longer counts against the others.
func TestADeletedJobGivesUpItsShare(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c, r := newJobCreatedAt(t, &now)
	r.shares = newSchedulerShares(4, 4)
	r.shares.set("another-job", true, 1)
	reconcileOnce(t, r)
	if part, _ := r.shares.parts("another-job"); !r.holdsPods("job-uid") || part != 2 {
		t.Fatalf("holding %v, the other's part %d; want true and 2", r.holdsPods("job-uid"), part)
	}
	job, _ := c.get()
	if err := c.server.Delete(context.Background(), job); err != nil {
		t.Fatal(err)
	}
	reconcileOnce(t, r)
	if part, room := r.shares.parts("another-job"); part != 4 || *room != 4 {
		t.Errorf("the other job's part and room once this one is gone: %d and %d, want 4 and 4", part, *room)
	}
}
