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
	if diff := cmp.Diff(want, timeline(tr, start, nil)); diff != "" {
		t.Errorf("timeline (-want +got):\n%s", diff)
	}
}

func TestTheTimelineSaysHowTheWriteGateStoodEachSecond(t *testing.T) {
	start := time.Date(2026, 11, 27, 6, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return start.Add(time.Duration(ms) * time.Millisecond) }
	tr := newTracker()
	tr.pods["a"] = &podRecord{seen: at(100), bound: at(900), running: at(2500)}
	gate := []gateSample{
		{at: at(250), inFlight: 32, waiting: 100, limit: 32},
		{at: at(750), inFlight: 32, waiting: 50, limit: 32},
		// no sample in the second second
		{at: at(2250), inFlight: 10, waiting: 0, limit: 16},
		{at: at(2500), inFlight: 5, waiting: 0, limit: 32},
	}
	want := "second\tpods exist\tbound\tRunning\tjobs Running\tgate in flight\tgate waiting\tgate limit\n" +
		"1\t1\t1\t0\t0\t32.0\t75.0\t32\n" +
		"2\t1\t1\t0\t0\t-\t-\t-\n" +
		"3\t1\t1\t1\t0\t7.5\t0.0\t16\n"
	if diff := cmp.Diff(want, timeline(tr, start, gate)); diff != "" {
		t.Errorf("timeline (-want +got):\n%s", diff)
	}
}
