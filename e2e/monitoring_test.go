//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"
	"sigs.k8s.io/yaml"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
	kubeflowv1 "github.com/trainyard/trainyard/apis/kubeflow/v1"
)

// The dashboard and the alerts the docs ship, as a platform team installs them.
var (
	dashboardJSON = filepath.Join(repoRoot, "docs", "grafana", "trainyard.json")
	alertsYAML    = filepath.Join(repoRoot, "docs", "prometheus", "trainyard-alerts.yaml")
)

// The labels a Prometheus that scrapes the chart's ServiceMonitor gives the operator's series:
// job is the metrics Service's name, namespace the install's.
const (
	metricsJob       = "trainyard-metrics"
	metricsNamespace = "trainyard-system"
)

// TestMonitoring: a real Prometheus (hack/tools.sh builds it from the module proxy) scrapes the
// operator while a job restarts and succeeds, beside a job of each other kind. Every query of the
// Grafana dashboard then returns series, with every kind the dashboard offers and with all of
// them, its variables list the operator's job and namespace, and the shipped alerts evaluate
// without error, none firing.
func TestMonitoring(t *testing.T) {
	f := features.New("monitoring").
		WithLabel("area", "monitoring").
		Assess("a real Prometheus scraping the operator fills every dashboard panel and evaluates every alert", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			operatorMu.Lock()
			target := sharedOperator.Metrics
			operatorMu.Unlock()
			prom := startPrometheus(t, target)

			// A job that restarts its gang once and succeeds: pods created (Start, Replace) and
			// deleted (Restart, CleanUp), a restart, a Succeeded job. Beside it, a job of each
			// other kind the dashboard offers, which runs to Succeeded.
			c, ns := namespaced(ctx, t, cfg, "monitoring")
			create(ctx, t, c, ns, pyTorchJob("mon").Workers(2, sim("", "")).Policy(batch.RestartPolicyOnFailure).Obj())
			create(ctx, t, c, ns, tensorFlowJob("mon-tf").
				Replica(batch.TensorFlowReplicaChief, 1, sim("2s", "0")).
				Replica(batch.TensorFlowReplicaWorker, 1, sim("", "")).Obj())
			for _, kf := range []struct{ kind, name, specs, leader, container string }{
				{"PyTorchJob", "mon-kf", "pytorchReplicaSpecs", "Master", "pytorch"},
				{"TFJob", "mon-kftf", "tfReplicaSpecs", "Chief", "tensorflow"},
			} {
				applyYAML(ctx, t, ns, fmt.Sprintf("apiVersion: kubeflow.org/v1\nkind: %s\nmetadata: {name: %s}\nspec:\n  %s:\n    %s:\n      replicas: 1",
					kf.kind, kf.name, kf.specs, kf.leader)+kfPod(kf.container, fmt.Sprintf(simExits0After, "2s"))+
					"\n    Worker:\n      replicas: 1"+kfPod(kf.container, simRunsForever))
			}
			old := runningPods(ctx, t, c, ns, "mon", 3)
			annotatePod(ctx, t, c, ns, "mon-worker-1", simExitCode, "1")
			waitReplaced(ctx, t, c, ns, "mon", old, []string{"mon-master-0", "mon-worker-0", "mon-worker-1"}, 3, true)
			annotatePod(ctx, t, c, ns, "mon-master-0", simExitCode, "0")
			waitPhase(ctx, t, c, ns, "mon", batch.JobSucceeded)
			waitPhase(ctx, t, c, ns, "mon-tf", batch.JobSucceeded)
			waitKubeflow(ctx, t, c, ns, "mon-kf", kubeflowv1.JobSucceeded)
			waitKubeflow(ctx, t, c, ns, "mon-kftf", kubeflowv1.JobSucceeded)
			eventually(t, 60*time.Second, "Prometheus has scraped the job's outcome and its clean-up", func() (bool, string) {
				var missing []string
				for _, sel := range []string{
					`trainyard_jobs{kind="PyTorchTrainingJob", phase="Succeeded"} >= 1`,
					`trainyard_pods_deleted_total{kind="PyTorchTrainingJob", reason="CleanUp"} > 0`,
					`trainyard_restarts_total{kind="PyTorchTrainingJob"} >= 1`,
				} {
					if prom.value(t, sel) == "" {
						missing = append(missing, sel)
					}
				}
				return len(missing) == 0, "no series yet for " + strings.Join(missing, ", ")
			})

			checkDashboard(t, prom)
			checkAlerts(t, prom)
			return ctx
		}).
		Feature()
	testenv.Test(t, f)
}

// prometheus is a Prometheus server the test started, on loopback.
type prometheus struct{ addr string }

// startPrometheus runs the pinned Prometheus scraping the operator's metrics at target every
// second with the ServiceMonitor's labels, and the shipped alerts loaded; it stops with the test.
func startPrometheus(t *testing.T, target string) prometheus {
	t.Helper()
	dir, err := versionsVar("PROMETHEUS_BIN")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "prometheus")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("the pinned Prometheus is not built (run make tools): %v", err)
	}
	work := t.TempDir()
	rules := alertGroups(t)
	if err := os.WriteFile(filepath.Join(work, "rules.yaml"), rules, 0o644); err != nil {
		t.Fatal(err)
	}
	config := fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files: [rules.yaml]
scrape_configs:
- job_name: %s
  static_configs:
  - targets: [%q]
    labels: {namespace: %s}
`, metricsJob, target, metricsNamespace)
	if err := os.WriteFile(filepath.Join(work, "prometheus.yml"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := freeLoopbackAddr(t)
	logFile, err := os.Create(filepath.Join(work, "prometheus.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config.file=prometheus.yml", "--storage.tsdb.path=data",
		"--web.listen-address="+addr, "--log.level=warn")
	cmd.Dir = work
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		logFile.Close()
		if t.Failed() {
			if log, err := os.ReadFile(logFile.Name()); err == nil {
				t.Logf("prometheus log:\n%s", log)
			}
		}
	})
	p := prometheus{addr: addr}
	eventually(t, 60*time.Second, "Prometheus is ready and has scraped the operator", func() (bool, string) {
		select {
		case err := <-exited:
			exited <- err
			return true, fmt.Sprintf("exited: %v", err)
		default:
		}
		resp, err := http.Get("http://" + addr + "/-/ready")
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return false, resp.Status
		}
		return p.value(t, fmt.Sprintf(`up{job=%q} == 1`, metricsJob)) != "", "the operator not scraped yet"
	})
	select {
	case err := <-exited:
		t.Fatalf("prometheus exited: %v", err)
	default:
	}
	return p
}

// alertGroups is the shipped PrometheusRule's spec, as a Prometheus rules file.
func alertGroups(t *testing.T) []byte {
	t.Helper()
	data, err := os.ReadFile(alertsYAML)
	if err != nil {
		t.Fatal(err)
	}
	var rule struct {
		Spec map[string]any `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &rule); err != nil {
		t.Fatalf("%s: %v", alertsYAML, err)
	}
	out, err := yaml.Marshal(rule.Spec)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// get reads a Prometheus API path into out's data; an error status fails the test.
func (p prometheus) get(t *testing.T, path string, q url.Values, out any) {
	t.Helper()
	resp, err := http.Get("http://" + p.addr + path + "?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("%s?%s: %v: %s", path, q.Encode(), err, body)
	}
	if r.Status != "success" {
		t.Fatalf("%s?%s: %s: %s", path, q.Encode(), r.Status, r.Error)
	}
	if err := json.Unmarshal(r.Data, out); err != nil {
		t.Fatalf("%s: %v: %s", path, err, r.Data)
	}
}

// sample is one series of an instant query's answer.
type sample struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
}

// query runs an instant query; a query Prometheus refuses fails the test.
func (p prometheus) query(t *testing.T, expr string) []sample {
	t.Helper()
	var data struct {
		ResultType string   `json:"resultType"`
		Result     []sample `json:"result"`
	}
	p.get(t, "/api/v1/query", url.Values{"query": {expr}}, &data)
	if data.ResultType != "vector" {
		t.Fatalf("%q answered a %s; want a vector", expr, data.ResultType)
	}
	return data.Result
}

// value is the first series' value of an instant query, empty if there is none.
func (p prometheus) value(t *testing.T, expr string) string {
	t.Helper()
	r := p.query(t, expr)
	if len(r) == 0 {
		return ""
	}
	v, _ := r[0].Value[1].(string)
	return v
}

// dashboard holds the dashboard's panel queries (by panel title) and its variables.
type dashboard struct {
	queries []panelQuery
	vars    map[string]string // name: label_values(...) query, for the query variables
	kinds   []string          // the custom kind variable's values
}

type panelQuery struct{ title, expr string }

func readDashboard(t *testing.T) dashboard {
	t.Helper()
	data, err := os.ReadFile(dashboardJSON)
	if err != nil {
		t.Fatal(err)
	}
	type panel struct {
		Title   string  `json:"title"`
		Panels  []panel `json:"panels"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	}
	var dash struct {
		Panels     []panel `json:"panels"`
		Templating struct {
			List []struct {
				Name  string `json:"name"`
				Type  string `json:"type"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatalf("%s: %v", dashboardJSON, err)
	}
	d := dashboard{vars: map[string]string{}}
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			for _, tg := range p.Targets {
				d.queries = append(d.queries, panelQuery{p.Title, tg.Expr})
			}
			walk(p.Panels)
		}
	}
	walk(dash.Panels)
	for _, v := range dash.Templating.List {
		switch v.Type {
		case "query":
			q, _ := v.Query.(map[string]any)
			s, _ := q["query"].(string)
			d.vars[v.Name] = s
		case "custom":
			s, _ := v.Query.(string)
			d.kinds = strings.Split(s, ",")
		}
	}
	if len(d.queries) == 0 || len(d.kinds) == 0 || d.vars["job"] == "" || d.vars["namespace"] == "" {
		t.Fatalf("%s: found %d queries, kinds %q, variables %v; want queries, the kind list and the job and namespace variables", dashboardJSON, len(d.queries), d.kinds, d.vars)
	}
	return d
}

// expand puts values in for the dashboard's variables as Grafana does: the query variables' "All"
// is .*, and $__rate_interval is a minute, what Grafana takes for a 15 s scrape interval.
func expand(expr, job, namespace, kind string) string {
	return strings.NewReplacer(`"$job"`, fmt.Sprintf("%q", job), `"$namespace"`, fmt.Sprintf("%q", namespace),
		`"$kind"`, fmt.Sprintf("%q", kind), "$__rate_interval", "1m").Replace(expr)
}

func checkDashboard(t *testing.T, prom prometheus) {
	t.Helper()
	d := readDashboard(t)

	// The variables: label_values(selector, label) is Grafana's call to the label values API.
	for name, want := range map[string]string{"job": metricsJob, "namespace": metricsNamespace} {
		q := d.vars[name]
		sel, label, ok := strings.Cut(strings.TrimSuffix(strings.TrimPrefix(q, "label_values("), ")"), ", ")
		if !ok || label != name {
			t.Errorf("variable %s: %q is not label_values(selector, %s)", name, q, name)
			continue
		}
		var values []string
		prom.get(t, "/api/v1/label/"+label+"/values", url.Values{"match[]": {expand(sel, ".*", ".*", ".*")}}, &values)
		if !slices.Contains(values, want) {
			t.Errorf("variable %s offers %q; want %q among them (%s)", name, values, want, q)
		}
	}

	// Each kind the dashboard offers names the operator's controller and work queue of that kind,
	// which the panels filter on.
	for _, k := range d.kinds {
		for _, sel := range []string{`controller_runtime_reconcile_total{controller=%q}`, `workqueue_depth{name=%q}`, `trainyard_jobs{kind=%q}`} {
			if len(prom.query(t, fmt.Sprintf(sel, k))) == 0 {
				t.Errorf("the dashboard's kind %s: %s has no series", k, fmt.Sprintf(sel, k))
			}
		}
	}

	// Every panel's query has series with every kind (All) and with the kind the job is.
	for _, q := range d.queries {
		for _, kind := range []string{".*", "PyTorchTrainingJob"} {
			expr := expand(q.expr, metricsJob, metricsNamespace, kind)
			if strings.Contains(expr, "$") {
				t.Errorf("panel %q: a variable is left in %q", q.title, expr)
				continue
			}
			if r := prom.query(t, expr); len(r) == 0 {
				t.Errorf("panel %q, kind %s: no series for %s", q.title, kind, expr)
			}
		}
	}

	// What the job did shows where a user looks for it, above zero: its restart, its pods
	// created to replace the gang, deleted for the restart and by the clean-up, its outcome.
	// (A counter's first increment shows only if its series was there before: Prometheus's
	// rate and increase start from a series' first sample.)
	for _, c := range []struct {
		title, label string
		want         []string
	}{
		{"Replica restarts", "", []string{""}},
		{"Pods created by reason", "reason", []string{"Replace", "Start"}},
		{"Pods deleted by reason", "reason", []string{"CleanUp", "Restart"}},
		{"Jobs by phase", "phase", []string{"Succeeded"}},
	} {
		i := slices.IndexFunc(d.queries, func(q panelQuery) bool { return q.title == c.title })
		if i < 0 {
			t.Errorf("the dashboard has no panel %q", c.title)
			continue
		}
		shown := map[string]string{}
		for _, s := range prom.query(t, expand(d.queries[i].expr, metricsJob, metricsNamespace, "PyTorchTrainingJob")) {
			v, _ := s.Value[1].(string)
			shown[s.Metric[c.label]] = v
		}
		for _, w := range c.want {
			if v, err := strconv.ParseFloat(shown[w], 64); err != nil || v <= 0 {
				t.Errorf("panel %q shows %v; want %s above 0", c.title, shown, strings.TrimSpace(c.label+" "+w))
			}
		}
	}
	if v := prom.value(t, expand(d.queries[0].expr, metricsJob, metricsNamespace, ".*")); d.queries[0].title != "Operator replicas up" || v != "1" {
		t.Errorf("panel %q shows %q; want \"Operator replicas up\" showing 1", d.queries[0].title, v)
	}
	t.Logf("%d panel queries answered with series for every kind and for PyTorchTrainingJob", len(d.queries))
}

// checkAlerts: each shipped alert is loaded, evaluates against the operator's series without an
// error, and none fires for an operator that is up and a job that succeeded.
func checkAlerts(t *testing.T, prom prometheus) {
	t.Helper()
	var data struct {
		Groups []struct {
			Rules []struct {
				Name           string    `json:"name"`
				State          string    `json:"state"`
				Health         string    `json:"health"`
				LastError      string    `json:"lastError"`
				LastEvaluation time.Time `json:"lastEvaluation"`
			} `json:"rules"`
		} `json:"groups"`
	}
	var names []string
	eventually(t, 30*time.Second, "every alert evaluated", func() (bool, string) {
		prom.get(t, "/api/v1/rules", url.Values{"type": {"alert"}}, &data)
		names = names[:0]
		for _, g := range data.Groups {
			for _, r := range g.Rules {
				if r.LastEvaluation.IsZero() || r.LastEvaluation.Year() < 2000 {
					return false, r.Name + " not evaluated yet"
				}
				names = append(names, r.Name)
			}
		}
		return len(names) > 0, "no alert loaded"
	})
	for _, g := range data.Groups {
		for _, r := range g.Rules {
			if r.Health != "ok" || r.LastError != "" {
				t.Errorf("alert %s: health %q, error %q", r.Name, r.Health, r.LastError)
			}
			if r.State == "firing" || (r.Name == "TrainyardOperatorDown" && r.State != "inactive") {
				t.Errorf("alert %s is %s with the operator up and its job Succeeded", r.Name, r.State)
			}
		}
	}
	t.Logf("alerts loaded and evaluated without error, none firing: %s", strings.Join(names, ", "))
}
