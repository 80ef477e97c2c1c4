package main

import (
	"context"
	"sync"
	"time"

	"github.com/trainyard/trainyard/hack/internal/localrun"
)

// gateSampleEvery is how often sampleGate reads the operator's write gate.
const gateSampleEvery = 250 * time.Millisecond

// The write gate's metrics (apply.WriteGate, controller/metrics.go).
const (
	gateInFlightMetric = "trainyard_write_gate_in_flight"
	gateWaitingMetric  = "trainyard_write_gate_waiting"
	gateLimitMetric    = "trainyard_write_gate_limit"
)

// gateSample is the operator's write gate as its metrics said at one moment.
type gateSample struct {
	at                       time.Time
	inFlight, waiting, limit float64
}

// sampleGate reads op's write gate metrics every gateSampleEvery, from now until the returned
// stop is called, and stop returns the samples. Why: the audit log shows a write only while the
// API server handles it, so it cannot say whether the operator was held by its own gate (all its
// slots taken, writes waiting) or had nothing more to send. An operator without the gate's
// metrics (the peer) gives no samples; a failed read is skipped. Note: a read costs the operator
// about 4 ms of CPU (its whole metrics page, 800 series), 1.6% of a core at this pace, so it is
// played only with --gate-timeline, and the report's header says so.
func sampleGate(ctx context.Context, op *localrun.Operator) (stop func() []gateSample) {
	ctx, cancel := context.WithCancel(ctx)
	var mu sync.Mutex
	var samples []gateSample
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(gateSampleEvery)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			v, err := op.MetricValues(ctx, gateInFlightMetric, gateWaitingMetric, gateLimitMetric)
			if err != nil {
				continue
			}
			if len(v) < 3 {
				return // not Trainyard's gate
			}
			mu.Lock()
			samples = append(samples, gateSample{at: time.Now(), inFlight: v[gateInFlightMetric], waiting: v[gateWaitingMetric], limit: v[gateLimitMetric]})
			mu.Unlock()
		}
	}()
	return func() []gateSample {
		cancel()
		<-done
		mu.Lock()
		defer mu.Unlock()
		return samples
	}
}
