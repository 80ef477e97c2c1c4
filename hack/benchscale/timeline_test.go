package main

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
)

func TestTheTimelineCountsFirstSightingsSecondBySecond(t *testing.T) {
	start := time.Date(2026, 11, 26, 7, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return start.Add(time.Duration(ms) * time.Millisecond) }
	tr := newTracker()
	tr.pods["a"] = &podRecord{seen: at(100), bound: at(900), running: at(2500)}
	tr.pods["b"] = &podRecord{seen: at(1200), bound: at(1300)} // never Running
	tr.jobs["j"] = &jobRecord{phaseSeen: map[batch.JobPhase]time.Time{batch.JobRunning: at(2600)}}
	tr.jobs["k"] = &jobRecord{phaseSeen: map[batch.JobPhase]time.Time{}} // never Running

	want := "second\tpods exist\tbound\tRunning\tjobs Running\n" +
		"1\t1\t1\t0\t0\n" +
		"2\t2\t2\t0\t0\n" +
		"3\t2\t2\t1\t1\n"
	if diff := cmp.Diff(want, timeline(tr, start)); diff != "" {
		t.Errorf("timeline (-want +got):\n%s", diff)
	}
}
