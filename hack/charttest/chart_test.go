//go:build chart

// Package charttest renders charts/trainyard with the pinned helm and checks it against the
// kustomize install (rendered by the pinned kubectl) and the documented alerts: make test-chart.
package charttest

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite docs/prometheus/trainyard-alerts.yaml from the chart")

var (
	root  = mustAbs(filepath.Join("..", ".."))
	chart = filepath.Join(root, "charts", "trainyard")
	// alertsDoc is the chart's PrometheusRule as its defaults render it, for a kustomize install.
	alertsDoc = filepath.Join(root, "docs", "prometheus", "trainyard-alerts.yaml")
)

// The release the comparisons render: the name and namespace kustomize/default installs as.
const (
	release   = "trainyard"
	namespace = "trainyard-system"
)

// object is one rendered manifest, decoded as JSON decodes it (numbers are float64 on both sides).
type object = map[string]any

// TestChartRendersWhatKustomizeDoes: for the defaults the chart makes the objects kustomize/default
// makes, and with kubeflow.enabled those of kustomize/kubeflow, field for field, but for the
// differences allowed in allowedDifferences.
func TestChartRendersWhatKustomizeDoes(t *testing.T) {
	cases := map[string]struct {
		set     []string
		overlay string
	}{
		"the defaults render kustomize/default":       {overlay: "default"},
		"kubeflow.enabled renders kustomize/kubeflow": {set: []string{"kubeflow.enabled=true"}, overlay: "kubeflow"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			want := allowedDifferences(t, kustomize(t, tc.overlay), "kustomize")
			got := allowedDifferences(t, helmTemplate(t, tc.set...), "helm")
			if diff := cmp.Diff(keys(want), keys(got)); diff != "" {
				t.Errorf("objects (-kustomize/%s +chart):\n%s", tc.overlay, diff)
			}
			for _, k := range keys(got) {
				if w, ok := want[k]; ok {
					if diff := cmp.Diff(w, got[k]); diff != "" {
						t.Errorf("%s (-kustomize/%s +chart):\n%s", k, tc.overlay, diff)
					}
				}
			}
		})
	}
}

// allowedDifferences takes out of one side what only that side has, for a reason given here, and
// returns the objects keyed by kind/namespace/name.
func allowedDifferences(t *testing.T, objs []object, side string) map[string]object {
	t.Helper()
	out := map[string]object{}
	for _, o := range objs {
		switch {
		case side == "kustomize" && kind(o) == "Namespace":
			// Helm installs into a namespace that exists (or that --create-namespace makes first); a
			// chart that also declared it would fail Helm's ownership check on that namespace.
			// docs/operating.md creates it with the same Pod Security label.
			continue
		case side == "helm" && kind(o) == "CustomResourceDefinition":
			// helm.sh/resource-policy=keep (crds.keep) leaves the CRDs, and every job, in place on
			// `helm uninstall`; kubectl delete -k has no such notion.
			meta := o["metadata"].(map[string]any)
			annotations, _ := meta["annotations"].(map[string]any)
			if annotations["helm.sh/resource-policy"] != "keep" {
				t.Errorf("%s: no helm.sh/resource-policy=keep annotation", key(o))
			}
			delete(annotations, "helm.sh/resource-policy")
		}
		k := key(o)
		if _, dup := out[k]; dup {
			t.Errorf("%s renders %s twice", side, k)
		}
		out[k] = o
	}
	return out
}

// TestChartAlertsAreDocumented: docs/prometheus/trainyard-alerts.yaml is the chart's PrometheusRule
// as the defaults render it (go test -tags chart ./hack/charttest -update rewrites it).
func TestChartAlertsAreDocumented(t *testing.T) {
	objs := helmTemplate(t, "prometheusRule.enabled=true")
	var rules []object
	for _, o := range objs {
		if kind(o) == "PrometheusRule" {
			rules = append(rules, o)
		}
	}
	if len(rules) != 1 {
		t.Fatalf("prometheusRule.enabled rendered %d PrometheusRules; want 1", len(rules))
	}
	if *update {
		data, err := yaml.Marshal(rules[0])
		if err != nil {
			t.Fatal(err)
		}
		header := "# Trainyard's alerts as a PrometheusRule (the Prometheus operator's CRD) for the install of\n" +
			"# kustomize/default: kubectl apply -f docs/prometheus/trainyard-alerts.yaml. The chart makes the same\n" +
			"# object with --set prometheusRule.enabled=true. Generated from the chart:\n" +
			"# go test -tags chart ./hack/charttest -run Alerts -update\n"
		if err := os.WriteFile(alertsDoc, append([]byte(header), data...), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(alertsDoc)
	if err != nil {
		t.Fatal(err)
	}
	docs := decode(t, data)
	if len(docs) != 1 {
		t.Fatalf("%s holds %d objects; want 1", alertsDoc, len(docs))
	}
	if diff := cmp.Diff(docs[0], rules[0]); diff != "" {
		t.Errorf("%s differs from the chart's PrometheusRule (-docs +chart; -update rewrites it):\n%s", alertsDoc, diff)
	}
}

// TestChartValues: the values other than the defaults reach the objects.
func TestChartValues(t *testing.T) {
	cases := map[string]struct {
		set       []string
		wantArgs  []string // the manager container's args, in order
		wantKinds []string // kinds beyond the default install's
		wantErr   string   // helm template fails, saying this
		check     func(t *testing.T, objs map[string]object)
	}{
		"two replicas elect a leader even with leaderElection off": {
			set:      []string{"replicas=2", "leaderElection.enabled=false"},
			wantArgs: []string{"--leader-elect", "--metrics-bind-address=:8080", "--health-probe-bind-address=:8081"},
		},
		"one replica without leader election": {
			set:      []string{"leaderElection.enabled=false"},
			wantArgs: []string{"--metrics-bind-address=:8080", "--health-probe-bind-address=:8081"},
			// No lease keeps a rolling update's new pod from reconciling beside the old one.
			check: func(t *testing.T, objs map[string]object) {
				spec := objs["Deployment/trainyard-system/trainyard"]["spec"].(map[string]any)
				strategy, _ := spec["strategy"].(map[string]any)
				if strategy["type"] != "Recreate" {
					t.Errorf("the Deployment's strategy is %v; want Recreate: without leader election a rolling update runs two operators at once", spec["strategy"])
				}
			},
		},
		"a mistyped value is refused by the chart's schema": {
			set:     []string{"operator.kubeAPIBuurst=3"},
			wantErr: "additional properties 'kubeAPIBuurst' not allowed",
		},
		"the operator's flags and extra arguments": {
			set: []string{"operator.clusterDomain=example.org", "operator.maxConcurrentReconciles=8", "operator.kubeAPIQPS=50",
				"operator.kubeAPIBurst=100", "operator.createParallelism=16", "operator.maxUnscheduledPodsPerJob=300", "operator.maxUnscheduledPods=600", "operator.statusBatchInterval=2s",
				"operator.logLevel=debug", "operator.extraArgs={--zap-encoder=console}", "metrics.port=9090", "health.port=9091"},
			wantArgs: []string{"--leader-elect", "--metrics-bind-address=:9090", "--health-probe-bind-address=:9091",
				"--cluster-domain=example.org", "--max-concurrent-reconciles=8", "--kube-api-qps=50", "--kube-api-burst=100",
				"--create-parallelism=16", "--max-unscheduled-pods-per-job=300", "--max-unscheduled-pods=600", "--status-batch-interval=2s", "--zap-log-level=debug", "--zap-encoder=console"},
		},
		"numbers from a values file (JSON numbers) stay integers": {
			set:      []string{"json:operator.kubeAPIBurst=2000000", "json:operator.createParallelism=128"},
			wantArgs: []string{"--leader-elect", "--metrics-bind-address=:8080", "--health-probe-bind-address=:8081", "--kube-api-burst=2000000", "--create-parallelism=128"},
		},
		"image, pull policy and the ServiceMonitor": {
			set: []string{"image.repository=registry.example/trainyard", "image.tag=v1.2.3", "image.pullPolicy=Always",
				"metrics.serviceMonitor.enabled=true", "metrics.serviceMonitor.labels.release=prometheus", "fullnameOverride=ty"},
			wantArgs:  []string{"--leader-elect", "--metrics-bind-address=:8080", "--health-probe-bind-address=:8081"},
			wantKinds: []string{"ServiceMonitor"},
			check: func(t *testing.T, objs map[string]object) {
				c := container(t, objs["Deployment/trainyard-system/ty"])
				if c["image"] != "registry.example/trainyard:v1.2.3" || c["imagePullPolicy"] != "Always" {
					t.Errorf("image %v, pullPolicy %v", c["image"], c["imagePullPolicy"])
				}
				sm := objs["ServiceMonitor/trainyard-system/ty"]
				labels := sm["metadata"].(map[string]any)["labels"].(map[string]any)
				if labels["release"] != "prometheus" {
					t.Errorf("ServiceMonitor labels %v; want release=prometheus among them", labels)
				}
				svc := objs["Service/trainyard-system/ty-metrics"]
				sel := sm["spec"].(map[string]any)["selector"].(map[string]any)["matchLabels"].(map[string]any)
				for k, v := range sel {
					if svc["metadata"].(map[string]any)["labels"].(map[string]any)[k] != v {
						t.Errorf("the ServiceMonitor selects %s=%v, which the metrics Service lacks", k, v)
					}
				}
				binding := objs["ClusterRoleBinding//ty-manager"]
				subject := binding["subjects"].([]any)[0].(map[string]any)
				if subject["name"] != "ty" || subject["namespace"] != "trainyard-system" {
					t.Errorf("the ClusterRoleBinding's subject is %v; want the ServiceAccount ty", subject)
				}
			},
		},
	}
	defaults := map[string]bool{}
	for _, o := range helmTemplate(t) {
		defaults[kind(o)] = true
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if tc.wantErr != "" {
				out, err := helmTemplateErr(t, tc.set...)
				if err == nil || !strings.Contains(out, tc.wantErr) {
					t.Errorf("helm template: %v; want an error saying %q\n%s", err, tc.wantErr, out)
				}
				return
			}
			objs := map[string]object{}
			var deployment object
			var extra []string
			for _, o := range helmTemplate(t, tc.set...) {
				objs[key(o)] = o
				if kind(o) == "Deployment" {
					deployment = o
				}
				if !defaults[kind(o)] {
					extra = append(extra, kind(o))
				}
			}
			var args []string
			for _, a := range container(t, deployment)["args"].([]any) {
				args = append(args, a.(string))
			}
			if diff := cmp.Diff(tc.wantArgs, args); diff != "" {
				t.Errorf("args (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantKinds, extra); diff != "" {
				t.Errorf("kinds beyond the defaults' (-want +got):\n%s", diff)
			}
			if tc.check != nil {
				tc.check(t, objs)
			}
		})
	}
}

func container(t *testing.T, deployment object) map[string]any {
	t.Helper()
	if deployment == nil {
		t.Fatal("no Deployment rendered")
	}
	spec := deployment["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
	return spec["containers"].([]any)[0].(map[string]any)
}

// helmTemplate renders the chart as the release trainyard in trainyard-system, with --set values
// ("json:" before one: --set-json, whose numbers are float64 as a values file's are).
func helmTemplate(t *testing.T, set ...string) []object {
	t.Helper()
	return decode(t, run(t, tool(t, "HELM"), templateArgs(set)...))
}

// helmTemplateErr renders as helmTemplate, for a render that should fail: helm's output and error.
func helmTemplateErr(t *testing.T, set ...string) (string, error) {
	t.Helper()
	cmd := command(tool(t, "HELM"), templateArgs(set)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func templateArgs(set []string) []string {
	args := []string{"template", release, chart, "--namespace", namespace}
	for _, s := range set {
		if v, ok := strings.CutPrefix(s, "json:"); ok {
			args = append(args, "--set-json", v)
			continue
		}
		args = append(args, "--set", s)
	}
	return args
}

// kustomize renders an overlay of kustomize/ with the pinned kubectl.
func kustomize(t *testing.T, overlay string) []object {
	t.Helper()
	return decode(t, run(t, tool(t, "KUBECTL"), "kustomize", filepath.Join(root, "kustomize", overlay)))
}

func run(t *testing.T, bin string, args ...string) []byte {
	t.Helper()
	cmd := command(bin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(bin), strings.Join(args, " "), err, stderr.String())
	}
	return out
}

func command(bin string, args ...string) *exec.Cmd {
	cmd := exec.Command(bin, args...)
	// Helm's own files stay in the repo's ignored .cache/, whatever the machine's home holds.
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+filepath.Join(root, ".cache", "helm"),
		"HELM_CONFIG_HOME="+filepath.Join(root, ".cache", "helm", "config"), "HELM_DATA_HOME="+filepath.Join(root, ".cache", "helm", "data"))
	return cmd
}

// tool is the binary the Makefile passes in the environment variable (the pinned helm or kubectl).
func tool(t *testing.T, env string) string {
	t.Helper()
	p := os.Getenv(env)
	if p == "" {
		t.Fatalf("%s is not set: run make test-chart, which passes the pinned binaries", env)
	}
	return p
}

func decode(t *testing.T, data []byte) []object {
	t.Helper()
	var objs []object
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		var o object
		if err := yaml.Unmarshal(doc, &o); err != nil {
			t.Fatalf("%v\n%s", err, doc)
		}
		if len(o) > 0 {
			objs = append(objs, o)
		}
	}
	return objs
}

func kind(o object) string { s, _ := o["kind"].(string); return s }

func key(o object) string {
	meta, _ := o["metadata"].(map[string]any)
	ns, _ := meta["namespace"].(string)
	name, _ := meta["name"].(string)
	return fmt.Sprintf("%s/%s/%s", kind(o), ns, name)
}

func keys(m map[string]object) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func mustAbs(p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		panic(err)
	}
	return a
}
