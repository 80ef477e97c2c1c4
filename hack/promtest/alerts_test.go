//go:build prometheus

// Package promtest plays the alerts of docs/prometheus/trainyard-alerts.yaml with Prometheus's own
// promtool (make test-monitoring; PROMTOOL names the pinned binary hack/tools.sh builds): the
// rules load, and each alert fires where its text says it does and stays silent where it should
// (testdata/alerts.test.yaml). The dashboard's queries are run against a real Prometheus scraping
// the operator in the e2e suite (e2e/monitoring_test.go).
package promtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

var (
	alertsDoc = filepath.Join("..", "..", "docs", "prometheus", "trainyard-alerts.yaml")
	testsFile = filepath.Join("testdata", "alerts.test.yaml")
)

// ruleGroups is what a PrometheusRule's spec and a Prometheus rules file share.
type ruleGroups struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []struct {
			Alert string `json:"alert,omitempty"`
			Expr  string `json:"expr"`
		} `json:"rules"`
	} `json:"groups"`
}

// ruleTests is the part of promtool's test file the coverage check reads.
type ruleTests struct {
	RuleFiles []string `json:"rule_files"`
	Tests     []struct {
		Name      string `json:"name"`
		AlertTest []struct {
			Alert     string `json:"alertname"`
			ExpAlerts []any  `json:"exp_alerts"`
		} `json:"alert_rule_test"`
	} `json:"tests"`
}

func TestAlertsFireAsDocumented(t *testing.T) {
	promtool := os.Getenv("PROMTOOL")
	if promtool == "" {
		t.Fatal("PROMTOOL is not set: run make test-monitoring, which builds the pinned promtool")
	}
	dir := t.TempDir()
	alerts := writeRulesFile(t, filepath.Join(dir, "rules.yaml"))
	tests, err := os.ReadFile(testsFile)
	if err != nil {
		t.Fatal(err)
	}
	var rt ruleTests
	if err := yaml.Unmarshal(tests, &rt); err != nil {
		t.Fatalf("%s: %v", testsFile, err)
	}
	if !slices.Equal(rt.RuleFiles, []string{"rules.yaml"}) {
		t.Fatalf("%s: rule_files is %q; want [rules.yaml], the file this test writes", testsFile, rt.RuleFiles)
	}
	if err := os.WriteFile(filepath.Join(dir, "alerts.test.yaml"), tests, 0o644); err != nil {
		t.Fatal(err)
	}

	// Every alert is played both ways: a new alert without a test fails here.
	fires, silent := map[string]bool{}, map[string]bool{}
	for _, tc := range rt.Tests {
		for _, at := range tc.AlertTest {
			if len(at.ExpAlerts) > 0 {
				fires[at.Alert] = true
			} else {
				silent[at.Alert] = true
			}
		}
	}
	for _, a := range alerts {
		if !fires[a] {
			t.Errorf("%s: no test has %s firing", testsFile, a)
		}
		if !silent[a] {
			t.Errorf("%s: no test has %s silent", testsFile, a)
		}
	}

	check := run(t, dir, promtool, "check", "rules", "rules.yaml")
	t.Logf("promtool check rules:\n%s", check)
	if want := fmt.Sprintf("SUCCESS: %d rules found", len(alerts)); !strings.Contains(check, want) {
		t.Errorf("promtool check rules said %q; want %q", check, want)
	}
	t.Logf("promtool test rules:\n%s", run(t, dir, promtool, "test", "rules", "alerts.test.yaml"))
}

// writeRulesFile writes the PrometheusRule's groups as a Prometheus rules file and returns the
// alerts' names.
func writeRulesFile(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(alertsDoc)
	if err != nil {
		t.Fatal(err)
	}
	var rule struct {
		Kind string     `json:"kind"`
		Spec ruleGroups `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &rule); err != nil {
		t.Fatalf("%s: %v", alertsDoc, err)
	}
	if rule.Kind != "PrometheusRule" {
		t.Fatalf("%s holds a %q; want a PrometheusRule", alertsDoc, rule.Kind)
	}
	var alerts []string
	for _, g := range rule.Spec.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				alerts = append(alerts, r.Alert)
			}
		}
	}
	if len(alerts) == 0 {
		t.Fatalf("%s has no alert", alertsDoc)
	}
	// The spec is written whole, not through ruleGroups, which keeps only what the checks read.
	var whole struct {
		Spec map[string]any `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &whole); err != nil {
		t.Fatal(err)
	}
	out, err := yaml.Marshal(whole.Spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return alerts
}

// run runs promtool in dir and returns its output; a non-zero exit fails the test with it.
func run(t *testing.T, dir, promtool string, args ...string) string {
	t.Helper()
	cmd := exec.Command(promtool, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}
