package controller

import (
	"context"
	"runtime/debug"
	runtimemetrics "runtime/metrics"
	"time"
)

// The operator's garbage collection. Its live heap is small (trimmed caches) and its garbage
// comes in bursts: a round over a big job's pods, a burst of small jobs' events. Go's default
// (collect when the heap has doubled) lets a 5,000-pod job's operator grow past 100 MB resident;
// collecting at every 25% of growth keeps it under, but a burst of small jobs, whose live heap is
// half as big, then collects four times as often as it needs to and spends a quarter of its CPU
// on it (make bench-scale, 200 x 8: a median of 10.6 CPU-seconds per 1,000 pods at 25%, 8.2 with
// the tuning below, over four runs each; docs/benchmarks.md).
//
// So the heap may grow by gcPercent of the live heap, or up to gcHeapBudget, whichever is more:
// a small heap is collected as rarely as Go's default would, a big one at every 25%.
const (
	// gcPercent is the least growth of the heap between two collections, in percent of the live
	// heap.
	gcPercent = 25
	// gcHeapBudget is the heap the operator may grow to before collections come at every
	// gcPercent.
	gcHeapBudget = 48 << 20
	// gcMaxPercent bounds the growth of a very small heap (Go's default).
	gcMaxPercent = 100
	// gcTuneEvery is how often the live heap is read.
	gcTuneEvery = 500 * time.Millisecond
)

// gcPercentFor is the GC percent that lets a live heap of live bytes grow to the budget, within
// [gcPercent, gcMaxPercent].
func gcPercentFor(live uint64) int {
	if live == 0 {
		return gcMaxPercent
	}
	p := gcPercent
	if live < gcHeapBudget {
		p = max(p, int((gcHeapBudget-live)*100/live))
	}
	return min(p, gcMaxPercent)
}

// tuneGC sets the GC percent from the live heap (runtime/metrics' /gc/heap/live:bytes, as of the
// last collection) until ctx ends.
func tuneGC(ctx context.Context) {
	sample := []runtimemetrics.Sample{{Name: "/gc/heap/live:bytes"}}
	current := gcPercentFor(0)
	debug.SetGCPercent(current)
	t := time.NewTicker(gcTuneEvery)
	defer t.Stop()
	for {
		runtimemetrics.Read(sample)
		if sample[0].Value.Kind() == runtimemetrics.KindUint64 {
			if p := gcPercentFor(sample[0].Value.Uint64()); p != current {
				debug.SetGCPercent(p)
				current = p
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
