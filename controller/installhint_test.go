package controller

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
)

// The operator's hint for a kubeflow.org kind not installed comes from its kubeconfig's context:
// make install-kubeflow on the local cluster of make run, the overlay or the chart elsewhere and
// in a pod (no kubeconfig).
func TestTheOperatorsKubeflowHintFollowsItsContext(t *testing.T) {
	dir := t.TempDir()
	for current, want := range map[string]string{
		LocalClusterContext: "make install-kubeflow",
		"prod":              "kubectl apply -k kustomize/kubeflow, or the chart's kubeflow.enabled=true",
		"":                  "kubectl apply -k kustomize/kubeflow, or the chart's kubeflow.enabled=true",
	} {
		path := filepath.Join(dir, "kubeconfig-"+current)
		if err := os.WriteFile(path, []byte("apiVersion: v1\nkind: Config\ncurrent-context: \""+current+"\"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		rules := &clientcmd.ClientConfigLoadingRules{ExplicitPath: path}
		if got := KubeflowInstall(currentContext(clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, nil))); !strings.Contains(got, want) {
			t.Errorf("context %q: %q; want %q", current, got, want)
		}
	}
}
