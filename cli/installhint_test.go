package cli

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trainyard/trainyard/controller"
)

// The hint for a kubeflow.org kind not installed fits the cluster the CLI talks to: on the local
// cluster of make run (its kubeconfig's context), make install-kubeflow; it said `kubectl apply -k
// kustomize/kubeflow` there too, which also installs the in-cluster operator's RBAC and
// namespace, of no use beside make run's operator.
func TestTheKubeflowInstallHintFitsTheCluster(t *testing.T) {
	// An API server that serves the core group only.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/api":
			_, _ = w.Write([]byte(`{"kind":"APIVersions","versions":["v1"]}`))
		case "/apis":
			_, _ = w.Write([]byte(`{"kind":"APIGroupList","apiVersion":"v1","groups":[]}`))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: `+srv.URL+`}}]
users: [{name: u, user: {}}]
contexts:
- {name: `+controller.LocalClusterContext+`, context: {cluster: c, user: u}}
- {name: prod, context: {cluster: c, user: u}}
current-context: `+controller.LocalClusterContext+`
`), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"":     "make install-kubeflow",
		"prod": "kubectl apply -k kustomize/kubeflow, or the chart's kubeflow.enabled=true",
	} {
		s, err := (&clusterFlags{kubeconfig: kubeconfig, context: name, namespace: "ns"}).connect()
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.findJob(t.Context(), "pytorchjob/p")
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("context %q: findJob: %v; want the hint %q", name, err, want)
		}
	}
}
