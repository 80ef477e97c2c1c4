package render

import (
	"os/exec"
	"strings"
	"testing"
)

// TestRenderTalksToNoCluster: render's dependencies include no API client, so nothing in it can
// reach a cluster; every observation is an argument.
func TestRenderTalksToNoCluster(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	forbidden := []string{
		"k8s.io/client-go/rest",
		"k8s.io/client-go/kubernetes",
		"k8s.io/client-go/dynamic",
		"sigs.k8s.io/controller-runtime/pkg/client",
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list -deps listed only %d packages: %q", len(deps), out)
	}
	for _, dep := range deps {
		for _, f := range forbidden {
			if dep == f || strings.HasPrefix(dep, f+"/") {
				t.Errorf("render depends on %s", dep)
			}
		}
	}
}
