package controller

import (
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
	"github.com/trainyard/trainyard/apply"
	"github.com/trainyard/trainyard/render"
)

// metrics are Trainyard's own Prometheus metrics, served beside controller-runtime's.
type metrics struct {
	podsCreated *prometheus.CounterVec
	podsDeleted *prometheus.CounterVec
	restarts    *prometheus.CounterVec
	// podsCreatedSeconds: from a job's creation to the moment all its pods had been created.
	podsCreatedSeconds *prometheus.HistogramVec

	mu sync.Mutex
	// phases holds each job's last phase, for the trainyard_jobs gauge.
	phases map[types.UID]jobPhase
	// kinds are the job kinds the operator serves: each has every series from the start (serve).
	kinds []string
	// gate is the operator's write gate, read at scrape time (nil: no gate metrics).
	gate *apply.WriteGate
}

type jobPhase struct {
	kind  string
	phase batch.JobPhase
}

var (
	jobsDesc = prometheus.NewDesc("trainyard_jobs", "Training jobs by kind and phase.", []string{"kind", "phase"}, nil)
	// The write gate (--max-writes-in-flight): its limit now, the writes it holds, and why it cut.
	gateLimitDesc     = prometheus.NewDesc("trainyard_write_gate_limit", "Writes the operator may have in flight to the API server now (cut on 429s and slow writes, between --min-writes-in-flight and --max-writes-in-flight).", nil, nil)
	gateInFlightDesc  = prometheus.NewDesc("trainyard_write_gate_in_flight", "Writes in flight to the API server through the gate.", nil, nil)
	gateWaitingDesc   = prometheus.NewDesc("trainyard_write_gate_waiting", "Writes waiting for the gate.", nil, nil)
	gateThrottledDesc = prometheus.NewDesc("trainyard_write_gate_throttled_total", "Writes the API server answered 429 Too Many Requests.", nil, nil)
	gateSlowDesc      = prometheus.NewDesc("trainyard_write_gate_slow_total", "Writes slower than --slow-write.", nil, nil)
	gateCutsDesc      = prometheus.NewDesc("trainyard_write_gate_cuts_total", "Times the gate halved its limit.", nil, nil)
)

func newMetrics() *metrics {
	return &metrics{
		podsCreated: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "trainyard_pods_created_total", Help: "Pods created, by job kind and reason (Start, Replace, Resume).",
		}, []string{"kind", "reason"}),
		podsDeleted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "trainyard_pods_deleted_total", Help: "Pods deleted, by job kind and reason (Restart, CleanUp, Paused, ScaledDown, RunModeChanged, Evicted; JobDeleted: a deleted job's).",
		}, []string{"kind", "reason"}),
		restarts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "trainyard_restarts_total", Help: "Replica restarts, by job kind.",
		}, []string{"kind"}),
		podsCreatedSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "trainyard_job_pods_created_seconds",
			Help:    "Time from a job's creation to all its pods created, by job kind.",
			Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2, 3, 5, 10, 20, 40, 80},
		}, []string{"kind"}),
		phases: map[types.UID]jobPhase{},
	}
}

// register adds the metrics to controller-runtime's registry (served on --metrics-bind-address).
func (m *metrics) register() error {
	for _, c := range []prometheus.Collector{m.podsCreated, m.podsDeleted, m.restarts, m.podsCreatedSeconds, m} {
		if err := crmetrics.Registry.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// Why pods are created (trainyard_pods_created_total's reason).
const (
	createdStart   = "Start"
	createdReplace = "Replace"
	createdResume  = "Resume"
)

var (
	createReasons = []string{createdStart, createdReplace, createdResume}
	deleteReasons = []string{render.DeleteRestart, render.DeleteCleanUp, render.DeletePaused, render.DeleteScaledDown,
		render.DeleteRunModeChanged, render.DeleteEvicted, reasonJobDeleted}
	jobPhases = []batch.JobPhase{batch.JobPending, batch.JobRunning, batch.JobPaused, batch.JobResuming,
		batch.JobSucceeded, batch.JobFailed, batch.JobUnknown}
)

// serve gives kind every series at zero: Prometheus computes rate() and increase() from a
// series' second sample, so a counter born at its first increment would never show that one
// (a kind's first restart would read 0 in a dashboard), and a phase that empties reads 0 rather
// than vanishing.
func (m *metrics) serve(kind string) {
	for _, r := range createReasons {
		m.podsCreated.WithLabelValues(kind, r)
	}
	for _, r := range deleteReasons {
		m.podsDeleted.WithLabelValues(kind, r)
	}
	m.restarts.WithLabelValues(kind)
	m.podsCreatedSeconds.WithLabelValues(kind)
	m.mu.Lock()
	defer m.mu.Unlock()
	if !slices.Contains(m.kinds, kind) {
		m.kinds = append(m.kinds, kind)
	}
}

func (m *metrics) setPhase(uid types.UID, kind string, phase batch.JobPhase) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.phases[uid] = jobPhase{kind, phase}
}

func (m *metrics) forget(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.phases, uid)
}

// Describe and Collect make metrics the collector of trainyard_jobs, counted at scrape time.
func (m *metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{jobsDesc, gateLimitDesc, gateInFlightDesc, gateWaitingDesc, gateThrottledDesc, gateSlowDesc, gateCutsDesc} {
		ch <- d
	}
}

func (m *metrics) Collect(ch chan<- prometheus.Metric) {
	m.mu.Lock()
	counts := map[jobPhase]int{}
	for _, k := range m.kinds {
		for _, p := range jobPhases {
			counts[jobPhase{k, p}] = 0
		}
	}
	for _, p := range m.phases {
		counts[p]++
	}
	m.mu.Unlock()
	for p, n := range counts {
		ch <- prometheus.MustNewConstMetric(jobsDesc, prometheus.GaugeValue, float64(n), p.kind, string(p.phase))
	}
	if m.gate == nil {
		return
	}
	limit, inFlight, waiting, stats := m.gate.State()
	for _, g := range []struct {
		desc  *prometheus.Desc
		kind  prometheus.ValueType
		value int64
	}{
		{gateLimitDesc, prometheus.GaugeValue, int64(limit)},
		{gateInFlightDesc, prometheus.GaugeValue, int64(inFlight)},
		{gateWaitingDesc, prometheus.GaugeValue, int64(waiting)},
		{gateThrottledDesc, prometheus.CounterValue, stats.Throttled},
		{gateSlowDesc, prometheus.CounterValue, stats.Slow},
		{gateCutsDesc, prometheus.CounterValue, stats.Cuts},
	} {
		ch <- prometheus.MustNewConstMetric(g.desc, g.kind, float64(g.value))
	}
}
