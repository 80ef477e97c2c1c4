package controller

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
)

// TestServedKindsStartAtZero: a served kind has each counter's series at 0 before anything
// happens, so that rate() and increase() count its first increment, and a phase with no job reads
// 0; a kind not served has none.
func TestServedKindsStartAtZero(t *testing.T) {
	m := newMetrics()
	m.serve("PyTorchTrainingJob")
	m.serve("PyTorchTrainingJob") // twice: still one set of series
	reg := prometheus.NewPedanticRegistry()
	for _, c := range []prometheus.Collector{m.podsCreated, m.podsDeleted, m.restarts, m.podsCreatedSeconds, m} {
		reg.MustRegister(c)
	}
	series := func() map[string][]*dto.Metric {
		t.Helper()
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		out := map[string][]*dto.Metric{}
		for _, mf := range mfs {
			out[mf.GetName()] = mf.GetMetric()
		}
		return out
	}
	got := series()
	for name, want := range map[string]int{
		"trainyard_pods_created_total":       len(createReasons),
		"trainyard_pods_deleted_total":       len(deleteReasons),
		"trainyard_restarts_total":           1,
		"trainyard_job_pods_created_seconds": 1,
		"trainyard_jobs":                     len(jobPhases),
	} {
		if n := len(got[name]); n != want {
			t.Errorf("%s: %d series; want %d", name, n, want)
		}
		for _, s := range got[name] {
			if v := s.GetCounter().GetValue() + s.GetGauge().GetValue() + float64(s.GetHistogram().GetSampleCount()); v != 0 {
				t.Errorf("%s%v = %v; want 0", name, s.GetLabel(), v)
			}
		}
	}

	// A job's phase counts on top of the zeros, and a phase it leaves reads 0 again.
	m.setPhase("uid-1", "PyTorchTrainingJob", batch.JobPending)
	m.setPhase("uid-1", "PyTorchTrainingJob", batch.JobRunning)
	phases := map[batch.JobPhase]float64{}
	for _, s := range series()["trainyard_jobs"] {
		for _, l := range s.GetLabel() {
			if l.GetName() == "phase" {
				phases[batch.JobPhase(l.GetValue())] = s.GetGauge().GetValue()
			}
		}
	}
	if phases[batch.JobRunning] != 1 || phases[batch.JobPending] != 0 || len(phases) != len(jobPhases) {
		t.Errorf("trainyard_jobs by phase = %v; want Running 1 and every other phase 0", phases)
	}
}
