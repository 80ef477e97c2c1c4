package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/source"
	"sigs.k8s.io/yaml"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
)

// The dashboard and the alerts a platform team installs query the operator's metrics by name;
// a renamed or dropped metric would leave a panel empty or an alert silent. These are checked
// against the names the operator itself exports.
var (
	dashboardFile = filepath.Join("..", "docs", "grafana", "trainyard.json")
	alertsFile    = filepath.Join("..", "docs", "prometheus", "trainyard-alerts.yaml")
)

// prometheusSeries are series Prometheus writes itself for every target it scrapes.
var prometheusSeries = []string{"up"}

func TestDashboardAndAlertsQueryOnlyExportedMetrics(t *testing.T) {
	exported := exportedSeries(t)
	queries := map[string][]string{} // file: its PromQL expressions
	queries[dashboardFile] = dashboardQueries(t)
	queries[alertsFile] = alertQueries(t)
	for file, exprs := range queries {
		if len(exprs) == 0 {
			t.Errorf("%s: no query found", file)
		}
		for _, expr := range exprs {
			names, err := metricNames(expr)
			if err != nil {
				t.Errorf("%s: %v", file, err)
				continue
			}
			if len(names) == 0 {
				t.Errorf("%s: %q queries no metric", file, expr)
			}
			for _, n := range names {
				if !exported[n] && !slices.Contains(prometheusSeries, n) {
					t.Errorf("%s queries %s, which the operator does not export: %q", file, n, expr)
				}
			}
		}
	}
}

// exportedSeries runs the operator's metrics as Run registers them, beside controller-runtime's,
// drives them (a job's pods created, a worker restarted, a reconcile through a controller-runtime
// controller with its work queue) so that every vector has a series, and returns the series names
// a scrape shows: a histogram's _bucket, _sum and _count.
func exportedSeries(t *testing.T) map[string]bool {
	t.Helper()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := newCluster(t, testJob(1, batch.RestartPolicyExitCode))
	r := newTestReconciler(c, &now)
	// As Run does, into controller-runtime's registry; under -count=2 the first run's are there.
	if err := r.metrics.register(); err != nil && !errors.As(err, new(prometheus.AlreadyRegisteredError)) {
		t.Fatal(err)
	}
	reconcileOnce(t, r) // the pods are created
	c.setPod("j-master-0", corev1.PodRunning, nil)
	c.setPod("j-worker-0", corev1.PodRunning, nil)
	now = now.Add(5 * time.Second)
	reconcileOnce(t, r)
	code := int32(137)
	c.setPod("j-worker-0", corev1.PodFailed, &code)
	now = now.Add(time.Second)
	reconcileOnce(t, r) // the worker is restarted: deleted, then created again
	now = now.Add(time.Second)
	reconcileOnce(t, r)

	// A controller-runtime controller of the operator's name reconciles the job once: the
	// controller_runtime_* and workqueue_* series are created as the manager's controllers create
	// them.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	skip := true
	ctl, err := controller.NewUnmanaged(pyTorchKind.gvk.Kind, controller.Options{Reconciler: r, SkipNameValidation: &skip})
	if err != nil {
		t.Fatal(err)
	}
	events := make(chan event.GenericEvent, 1)
	if err := ctl.Watch(source.Channel(events, &handler.EnqueueRequestForObject{})); err != nil {
		t.Fatal(err)
	}
	go func() { _ = ctl.Start(ctx) }()
	job, _ := c.get()
	events <- event.GenericEvent{Object: job}

	// The metrics of Trainyard's own the docs list, and the controller's and work queue's, must be
	// among them: this proves the driving above reached every vector. Note: the controller creates
	// its work queue (and its series) as it starts, in its own goroutine, so the series are waited
	// for, not read once.
	want := []string{"trainyard_jobs", "trainyard_pods_created_total", "trainyard_pods_deleted_total",
		"trainyard_restarts_total", "trainyard_job_pods_created_seconds_bucket", "controller_runtime_reconcile_total",
		"controller_runtime_reconcile_errors_total", "controller_runtime_reconcile_time_seconds_bucket", "workqueue_depth"}
	var series map[string]bool
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		families, err := crmetrics.Registry.Gather()
		if err != nil {
			t.Fatal(err)
		}
		series = map[string]bool{}
		for _, f := range families {
			switch f.GetType() {
			case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
				series[f.GetName()+"_bucket"], series[f.GetName()+"_sum"], series[f.GetName()+"_count"] = true, true, true
			case dto.MetricType_SUMMARY:
				series[f.GetName()], series[f.GetName()+"_sum"], series[f.GetName()+"_count"] = true, true, true
			default:
				series[f.GetName()] = true
			}
		}
		var missing []string
		for _, n := range want {
			if !series[n] {
				missing = append(missing, n)
			}
		}
		if reconciled(families, pyTorchKind.gvk.Kind) && len(missing) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("10 s after a job's pods were created, a worker restarted and the controller was started, the operator's registry has no series %v (reconciled: %v)", missing, reconciled(families, pyTorchKind.gvk.Kind))
		}
	}
	return series
}

func reconciled(families []*dto.MetricFamily, controllerName string) bool {
	for _, f := range families {
		if f.GetName() != "controller_runtime_reconcile_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" && l.GetValue() == controllerName && m.GetCounter().GetValue() > 0 {
					return true
				}
			}
		}
	}
	return false
}

// dashboardQueries returns every "expr" of the dashboard's targets, and the PromQL inside its
// variables' label_values(...) queries.
func dashboardQueries(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var dash any
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	var exprs []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if s, ok := x.(string); ok && k == "expr" {
					exprs = append(exprs, s)
				}
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(dash)
	templating, _ := dash.(map[string]any)["templating"].(map[string]any)
	vars, _ := templating["list"].([]any)
	for _, v := range vars {
		v, _ := v.(map[string]any)
		if v["type"] != "query" {
			continue
		}
		q, _ := v["query"].(map[string]any)
		s, _ := q["query"].(string)
		m := labelValues.FindStringSubmatch(s)
		if m == nil {
			t.Errorf("%s: variable %v: want label_values(<PromQL>, <label>), got %q", dashboardFile, v["name"], s)
			continue
		}
		exprs = append(exprs, m[1])
	}
	return exprs
}

// labelValues is Grafana's variable query label_values(<series selector>, <label>).
var labelValues = regexp.MustCompile(`^\s*label_values\((.*),\s*[a-zA-Z_][a-zA-Z0-9_]*\s*\)\s*$`)

// alertQueries returns the expressions of the PrometheusRule's rules.
func alertQueries(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(alertsFile)
	if err != nil {
		t.Fatal(err)
	}
	var rule struct {
		Spec struct {
			Groups []struct {
				Rules []struct {
					Alert, Record, Expr string
				}
			}
		}
	}
	if err := yaml.Unmarshal(data, &rule); err != nil {
		t.Fatalf("%s: %v", alertsFile, err)
	}
	var exprs []string
	for _, g := range rule.Spec.Groups {
		for _, r := range g.Rules {
			exprs = append(exprs, r.Expr)
		}
	}
	return exprs
}

// PromQL words that are not metric names: aggregation operators, set and grouping keywords,
// modifiers and literals. A function is recognised by the "(" after it, whatever its name.
var promqlKeywords = map[string]bool{
	"sum": true, "min": true, "max": true, "avg": true, "group": true, "stddev": true, "stdvar": true,
	"count": true, "count_values": true, "bottomk": true, "topk": true, "quantile": true, "limitk": true,
	"limit_ratio": true, "by": true, "without": true, "on": true, "ignoring": true, "group_left": true,
	"group_right": true, "bool": true, "and": true, "or": true, "unless": true, "atan2": true,
	"offset": true, "start": true, "end": true, "inf": true, "nan": true,
}

// groupingKeywords are followed by a parenthesised list of label names.
var groupingKeywords = map[string]bool{"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true}

// metricNames returns the metric names a PromQL expression selects, sorted: identifiers outside
// label matchers ({...}), range and subquery brackets ([...]), strings and the label lists of
// by/without/on/ignoring/group_left/group_right, that are neither a keyword nor a function
// (followed by "("); and the value of a __name__ matcher. Grafana's $variables are skipped.
func metricNames(expr string) ([]string, error) {
	var names []string
	braces, brackets := 0, 0
	labelList := false     // inside the (...) of a grouping keyword
	afterGrouping := false // a grouping keyword was the last word: its "(" opens a label list
	lastLabel := ""        // the label name last seen inside braces, for __name__="..."
	i := 0
	for i < len(expr) {
		ch := expr[i]
		switch {
		case ch == '"' || ch == '\'' || ch == '`':
			end := i + 1
			for end < len(expr) && expr[end] != ch {
				if expr[end] == '\\' && ch != '`' {
					end++
				}
				end++
			}
			if end >= len(expr) {
				return nil, fmt.Errorf("unterminated string in %q", expr)
			}
			if braces > 0 && lastLabel == "__name__" {
				names = append(names, expr[i+1:end])
			}
			i = end + 1
			continue
		case ch == '$': // a Grafana variable: $name, ${name...}, $__rate_interval
			i++
			if i < len(expr) && expr[i] == '{' {
				for i < len(expr) && expr[i] != '}' {
					i++
				}
				i++
				continue
			}
			for i < len(expr) && isWordChar(expr[i]) {
				i++
			}
			continue
		case ch == '{':
			braces++
		case ch == '}':
			braces--
			lastLabel = ""
		case ch == '[':
			brackets++
		case ch == ']':
			brackets--
		case ch == '(':
			if afterGrouping {
				labelList = true
			}
			afterGrouping = false
		case ch == ')':
			labelList = false
		case ch >= '0' && ch <= '9' || ch == '.' && i+1 < len(expr) && expr[i+1] >= '0' && expr[i+1] <= '9':
			// A number or a duration (5m, 1h30m, 1e3, 0x1f): one token, never a name.
			for i < len(expr) && (isWordChar(expr[i]) || expr[i] == '.') {
				i++
			}
			continue
		case isWordStart(ch):
			start := i
			for i < len(expr) && (isWordChar(expr[i]) || expr[i] == ':') {
				i++
			}
			word := expr[start:i]
			next := i
			for next < len(expr) && (expr[next] == ' ' || expr[next] == '\t' || expr[next] == '\n') {
				next++
			}
			switch {
			case braces > 0:
				lastLabel = word
			case brackets > 0 || labelList:
			case groupingKeywords[word]:
				afterGrouping = true
			case promqlKeywords[strings.ToLower(word)]:
			case next < len(expr) && expr[next] == '(':
				// a function
			default:
				names = append(names, word)
			}
			continue
		}
		if ch != ' ' && ch != '\t' && ch != '\n' && ch != '(' {
			afterGrouping = false
		}
		i++
	}
	if braces != 0 || brackets != 0 {
		return nil, fmt.Errorf("unbalanced braces or brackets in %q", expr)
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}

func isWordStart(c byte) bool {
	return c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}
func isWordChar(c byte) bool { return isWordStart(c) || c >= '0' && c <= '9' }

func TestMetricNames(t *testing.T) {
	cases := map[string]struct {
		expr string
		want []string
	}{
		"a bare name": {"up", []string{"up"}},
		"a selector's label names and values are not names": {`trainyard_jobs{job="x", phase=~"Pend.*"}`, []string{"trainyard_jobs"}},
		"functions, aggregations and grouping labels are not names": {
			`histogram_quantile(0.99, sum by (le, controller) (rate(controller_runtime_reconcile_time_seconds_bucket{controller=~"$kind"}[$__rate_interval])))`,
			[]string{"controller_runtime_reconcile_time_seconds_bucket"},
		},
		"a grouping clause after the aggregated expression": {`sum(rate(a_total[5m])) without (pod)`, []string{"a_total"}},
		"both sides of a binary operator, on() and group_left labels": {
			`a / on (kind) group_left (phase) b > 0.1 unless ignoring(x) c`, []string{"a", "b", "c"},
		},
		"a range with an offset and a subquery": {`max_over_time(deriv(x[5m] offset 1h)[30m:1m])`, []string{"x"}},
		"a __name__ matcher":                    {`{__name__="workqueue_depth", name="q"}`, []string{"workqueue_depth"}},
		"Grafana variables and numbers":         {`sum(y{a="$job"}) * 1e3 + ${factor} - 2`, []string{"y"}},
		"recording-rule names with colons":      {`job:trainyard_jobs:sum > 0`, []string{"job:trainyard_jobs:sum"}},
		"bool and a name followed by a space":   {`absent(up{job="j"} == bool 1) or vector(0)`, []string{"up"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := metricNames(tc.expr)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("metricNames(%q) (-want +got):\n%s", tc.expr, diff)
			}
		})
	}
}
