package main

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/trainyard/trainyard/hack/internal/localrun"
)

func TestMedianOf(t *testing.T) {
	got := func(v float64) reading[float64] { return reading[float64]{v: v, ok: true} }
	lost := reading[float64]{v: 99, ok: false}
	cases := map[string]struct {
		readings []reading[float64]
		want     overRuns[float64]
	}{
		"one run is its own median and range": {
			readings: []reading[float64]{got(40)},
			want:     overRuns[float64]{median: 40, lo: 40, hi: 40, measured: 1, runs: 1},
		},
		"one run that did not measure it has none": {
			readings: []reading[float64]{lost},
			want:     overRuns[float64]{runs: 1},
		},
		"an odd count's median is the middle value, whatever the order": {
			readings: []reading[float64]{got(41.5), got(38.2), got(40)},
			want:     overRuns[float64]{median: 40, lo: 38.2, hi: 41.5, measured: 3, runs: 3},
		},
		"an even count's median is the mean of the two middle values": {
			readings: []reading[float64]{got(4), got(1), got(3), got(10)},
			want:     overRuns[float64]{median: 3.5, lo: 1, hi: 10, measured: 4, runs: 4},
		},
		"a run that did not measure it is left out": {
			readings: []reading[float64]{got(2), lost, got(3)},
			want:     overRuns[float64]{median: 2.5, lo: 2, hi: 3, measured: 2, runs: 3},
		},
		"no run measured it": {
			readings: []reading[float64]{lost, lost, lost},
			want:     overRuns[float64]{runs: 3},
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(c.want, medianOf(c.readings), cmp.AllowUnexported(overRuns[float64]{})); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestMedianOfDurationsEvenCount(t *testing.T) {
	got := medianOf([]reading[time.Duration]{{v: time.Second, ok: true}, {v: 2 * time.Second, ok: true}})
	if want := 1500 * time.Millisecond; got.median != want {
		t.Errorf("median = %s, want %s", got.median, want)
	}
}

func TestSpellOverRuns(t *testing.T) {
	cases := map[string]struct {
		o    overRuns[time.Duration]
		want string
	}{
		"one run: the figure alone, as before --runs": {
			o: overRuns[time.Duration]{median: 40 * time.Second, lo: 40 * time.Second, hi: 40 * time.Second, measured: 1, runs: 1}, want: "40.0 s",
		},
		"several runs: the median and the range in brackets": {
			o:    overRuns[time.Duration]{median: 40 * time.Second, lo: 38200 * time.Millisecond, hi: 41500 * time.Millisecond, measured: 3, runs: 3},
			want: "40.0 s [38.2-41.5]",
		},
		"a run that did not measure it is noted": {
			o:    overRuns[time.Duration]{median: 40 * time.Second, lo: 38200 * time.Millisecond, hi: 41500 * time.Millisecond, measured: 2, runs: 3},
			want: "40.0 s [38.2-41.5; 2 of 3 runs]",
		},
		"no run measured it": {o: overRuns[time.Duration]{runs: 3}, want: "n/a (not reached)"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if got := c.o.spell(secsNum, " s", "n/a (not reached)"); got != c.want {
				t.Errorf("spell = %q, want %q", got, c.want)
			}
		})
	}
}

// runsOf is the runs played of a t9k 200 x 8 size played n times, every figure measured, then
// changed by the run's set.
func runsOf(n int, set ...func(r *sizeResult)) []sizeResult {
	rs := make([]sizeResult, len(set))
	for i, f := range set {
		rs[i] = sizeResult{api: apiT9k, size: size{jobs: 200, podsPerJob: 8}, run: i + 1, runs: n,
			partFigures: partFigures{allPodsExist: measured(20 * time.Second), everyJobRunning: measured(30 * time.Second),
				statusAllRunning: measured(30 * time.Second), allPodsRunning: measured(25 * time.Second),
				completion: spreadOf([]time.Duration{50 * time.Millisecond, 200 * time.Millisecond}, 2)},
			cpu: 8, cpuStart: 4, cpuOK: true, rssRunningKB: 40 * 1024, hwmKB: 50 * 1024, restOK: true, gateOK: true, apfOK: true,
			reconciles: 1000, reconcilesStart: 600, reconcilesOK: true}
		f(&rs[i])
	}
	return rs
}

func TestSizeRowsOfOneRunAsBefore(t *testing.T) {
	c := &comparison{o: options{runs: 1}}
	rs := runsOf(1, func(r *sizeResult) { r.everyJobRunning = missing("199 of 200 jobs seen Running") })
	audit := auditSummary{read: true, windows: []window{{name: "t9k 200x8"}, {name: "t9k 200x8 start"}},
		counts: []writeCounts{{total: 4000, podsCreated: 1600, conflicts: 1}, {total: 3000, podsCreated: 1600}}}
	want := map[string]string{
		"all pods exist":    "20.0 s",
		"every job Running": "n/a (199 of 200 jobs seen Running)",
		"master Succeeded → job Succeeded: median, worst":                    "0.125 s, 0.200 s",
		"writes per pod: start phase; whole size":                            "1.88 (3000 / 1600); whole size 2.50",
		"409s: audit; client metrics":                                        "1; 0",
		"429s: audit; client metrics; APF rejections; the write gate's cuts": "0; 0; 0; 0",
		"operator CPU-seconds per 1,000 pods (start phase)":                  "5.00 s (2.50 s); 8.00 s in all",
		"reconciles per job: start phase; whole size":                        "3.00; whole size 5.00",
		"operator RSS when Running; peak (VmHWM)":                            "40.0 MB; 50.0 MB",
	}
	got := map[string]string{}
	for _, x := range c.sizeRows(rs, audit) {
		got[x.figure] = x.measured
	}
	for figure, w := range want {
		if got[figure] != w {
			t.Errorf("%s: measured %q, want %q", figure, got[figure], w)
		}
	}
}

func TestSizeRowsOfAMixedSize(t *testing.T) {
	// 1 x 5,000 then 50 x 8, beside 50 x 8 played alone in the same run of the bench (not 1 x
	// 5,000: its rows say nothing of it).
	alone := runsOf(1, func(r *sizeResult) {
		r.size = size{jobs: 50, podsPerJob: 8}
		r.everyJobRunning, r.allPodsBound = measured(8*time.Second), measured(3*time.Second)
	})
	mixed := runsOf(1, func(r *sizeResult) {
		r.size = size{jobs: 1, podsPerJob: 5000, thenJobs: 50, thenPodsPerJob: 8}
		r.completion = spreadOf(nil, 1)
		r.then = partFigures{allPodsExist: measured(5 * time.Second), allPodsBound: measured(7 * time.Second), everyJobRunning: measured(9 * time.Second),
			statusAllRunning: measured(9 * time.Second), allPodsRunning: missing("399 of 400 pods seen Running"),
			completion: spreadOf([]time.Duration{40 * time.Millisecond, 90 * time.Millisecond}, 50)}
	})
	c := &comparison{o: options{runs: 1}, sizes: [][]sizeResult{alone, mixed}}
	got := map[string]sizeRow{}
	for _, x := range c.sizeRows(mixed, auditSummary{}) {
		got[x.figure] = x
	}
	then := "then 50 jobs x 8 (400 pods), from their first create: "
	want := map[string]string{
		"1 x 5,000: all pods exist":                              "20.0 s",
		"1 x 5,000: every job Running":                           "30.0 s",
		then + "all pods exist":                                  "5.000 s; alone 20.0 s",
		then + "all pods bound to a node":                        "7.000 s; alone 3.000 s",
		then + "every job Running":                               "9.000 s; alone 8.000 s",
		then + "all pods Running":                                "n/a (399 of 400 pods seen Running); alone 25.0 s",
		then + "master Succeeded → job Succeeded: median, worst": "0.065 s, 0.090 s (2 of 50 jobs)",
	}
	for figure, w := range want {
		if got[figure].measured != w {
			t.Errorf("%s: measured %q, want %q", figure, got[figure].measured, w)
		}
	}
	if x := got["1 x 5,000: every job Running"]; x.target != "" || x.met != "" {
		t.Errorf("a mixed size's first part is judged against no target: %+v", x)
	}
}

func TestSizeRowsJudgeTheMedianOfRuns(t *testing.T) {
	// The floor makes the every-job-Running target 1.2 x 30 s = 36 s, which the second run alone
	// misses; the peer's 200 x 8 figures: all pods exist 31.2 s, every job Running 40.6 s, CPU 6.5 s.
	c := &comparison{o: options{runs: 3}, floors: []floorResult{{size: size{jobs: 200, podsPerJob: 8}, allRunning: measured(30 * time.Second)}}}
	rs := runsOf(3,
		func(r *sizeResult) {
			r.allPodsExist, r.everyJobRunning = measured(30*time.Second), measured(34*time.Second)
		},
		func(r *sizeResult) {
			r.allPodsExist, r.everyJobRunning = measured(34*time.Second), measured(50*time.Second)
			r.completion = spreadOf(nil, 200)
		},
		func(r *sizeResult) {
			r.allPodsExist, r.everyJobRunning, r.cpuOK = measured(32*time.Second), measured(35*time.Second), false
		})
	var audit auditSummary
	rows := map[string]sizeRow{}
	for _, x := range c.sizeRows(rs, audit) {
		rows[x.figure] = x
	}
	want := map[string]sizeRow{
		"all pods exist": {figure: "all pods exist", measured: "32.0 s [30.0-34.0]", peer: "31.2 s", ahead: "**no**", values: []float64{32}},
		"every job Running": {figure: "every job Running", measured: "35.0 s [34.0-50.0]", target: "≤ 1.2 x floor 30.0 s = 36.0 s",
			met: "yes", peer: "40.6 s", ahead: "yes", values: []float64{35}},
		"master Succeeded → job Succeeded: median, worst": {figure: "master Succeeded → job Succeeded: median, worst",
			measured: "0.125 s [0.125-0.125; 2 of 3 runs], 0.200 s [0.200-0.200; 2 of 3 runs]", target: "≤ 0.1 s, ≤ 0.3 s", met: "**no**",
			values: []float64{0.125, 0.2}},
		"operator CPU-seconds per 1,000 pods (start phase)": {figure: "operator CPU-seconds per 1,000 pods (start phase)",
			measured: "5.00 s [5.00-5.00; 2 of 3 runs] (2.50 s [2.50-2.50; 2 of 3 runs]); 8.00 s [8.00-8.00; 2 of 3 runs] in all",
			target:   "< the peer's", met: "yes", peer: "6.5 s", ahead: "yes", values: []float64{5}},
		"writes per pod: start phase; whole size": {figure: "writes per pod: start phase; whole size", measured: "n/a (no audit log)"},
	}
	for name, w := range want {
		if diff := cmp.Diff(w, rows[name], cmp.AllowUnexported(sizeRow{})); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}
}

func TestControlPlaneRowBesideTheFloor(t *testing.T) {
	cp := func(apiserver, etcd, kwok float64) localrun.ProcessCPU {
		return localrun.ProcessCPU{"kube-apiserver": apiserver, "etcd": etcd, "kwok-controller": kwok, "kube-scheduler": 5, "kube-controller-manager": 1}
	}
	rs := runsOf(3,
		func(r *sizeResult) { r.controlPlaneStart = cp(30, 10, 10) },
		func(r *sizeResult) { r.controlPlaneStart = cp(50, 20, 14) },
		func(r *sizeResult) { r.controlPlaneStart = nil }) // not read
	floor := floorResult{size: size{jobs: 200, podsPerJob: 8}, services: servicePerGroup, allRunning: measured(30 * time.Second), controlPlane: cp(20, 6, 8)}
	got := controlPlaneRow(rs, floor)
	want := sizeRow{figure: "control plane CPU-seconds in the start phase (API server, etcd, KWOK, scheduler, controller-manager)",
		measured: "73.0 s [56.0-90.0; 2 of 3 runs] (40.0, 15.0, 12.0, 5.0, 1.0)",
		target:   "floor 200x8 with a Service per job, to all pods Running in 30.000 s: 40.0 s (20.0, 6.0, 8.0, 5.0, 1.0)",
		values:   []float64{73}}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(sizeRow{})); diff != "" {
		t.Errorf("control plane row (-want +got):\n%s", diff)
	}
	if x := controlPlaneRow(runsOf(1, func(r *sizeResult) {}), floorResult{}); x.measured != "n/a" || x.values != nil || x.target != "" {
		t.Errorf("a run that read nothing, no floor: %+v, want n/a and no target", x)
	}
	if d := cp(30, 10, 10).Since(cp(20, 6, 8)); d.Sum() != 16 || d["kube-apiserver"] != 10 {
		t.Errorf("Since: %v, want 16 s in all, 10 of them the API server's", d)
	}
}

func TestRunsHaveTheirOwnNames(t *testing.T) {
	one := sizeResult{api: apiT9k, size: size{jobs: 200, podsPerJob: 8}, run: 1, runs: 1}
	second := sizeResult{api: apiT9k, size: size{jobs: 200, podsPerJob: 8}, run: 2, runs: 3}
	mixed := sizeResult{api: apiT9k, size: size{jobs: 1, podsPerJob: 5000, thenJobs: 50, thenPodsPerJob: 8}, run: 2, runs: 2}
	cases := map[string]struct{ got, want string }{
		"one run's label is the size's":        {one.label(), "t9k 200x8"},
		"one run's window is the size's":       {one.windowName("start"), "t9k 200x8 start"},
		"one run's files are the size's":       {one.fileName(), "t9k-200x8"},
		"one run's jobs are the size's":        {one.jobNames()[0][7], "s200x8-007"},
		"a run of several is named in the log": {second.label(), "t9k 200x8 run 2/3"},
		"a run of several has its own window":  {second.windowName(""), "t9k 200x8 run 2/3"},
		"a run of several has its own files":   {second.fileName(), "t9k-200x8-run2"},
		"a run of several has its own jobs":    {second.jobNames()[0][7], "r2-s200x8-007"},
		"a mixed size's big job is its own":    {mixed.jobNames()[0][0], "r2-m1x5000"},
		"a mixed size's burst is its own":      {mixed.jobNames()[1][7], "r2-m50x8-007"},
		"a mixed size has its own files":       {mixed.fileName(), "t9k-1x5000+50x8-run2"},
		"the floor's files":                    {floorResult{size: one.size}.fileName(), "floor-200x8"},
		"the T9k floor's files":                {floorResult{size: one.size, services: servicePerGroup}.fileName(), "floor-200x8-service-per-job"},
		"the kubeflow.org floor's files":       {floorResult{size: one.size, services: servicePerPod}.fileName(), "floor-200x8-services"},
	}
	for name, c := range cases {
		if c.got != c.want {
			t.Errorf("%s: %q, want %q", name, c.got, c.want)
		}
	}
}

func TestParseFlagsRuns(t *testing.T) {
	cases := map[string]struct {
		args    []string
		want    int
		wantErr bool
	}{
		"one run by default": {want: 1},
		"runs given":         {args: []string{"--runs=3"}, want: 3},
		"no run is refused":  {args: []string{"--runs=0"}, wantErr: true},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			o, parsed := parsedFlags(t, c.args, c.wantErr)
			if parsed && o.runs != c.want {
				t.Errorf("runs = %d, want %d", o.runs, c.want)
			}
		})
	}
}
