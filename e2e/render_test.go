//go:build e2e

package e2e

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"
)

// TestRenderDryRun: what `trainyard render` prints for each example is accepted by the real API
// server (`kubectl apply --dry-run=server`), so the rendered objects are valid as they stand.
// The PodGroup CRDs are declared installed, so examples that choose a gang scheduler render
// their PodGroup and pods too.
func TestRenderDryRun(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(repoRoot, "examples", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	f := features.New("trainyard render").WithLabel("area", "render")
	for _, file := range files {
		f = f.Assess(filepath.Base(file)+" renders to objects the API server accepts", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			rendered, err := exec.CommandContext(ctx, filepath.Join(repoRoot, "bin", "trainyard"), "render", "-f", file, "--observed", podGroupCRDs).Output()
			if err != nil {
				t.Fatalf("trainyard render -f %s: %v", file, err)
			}
			out, err := kubectl(ctx, cfg, string(rendered), "apply", "-n", "default", "--dry-run=server", "-f", "-")
			if err != nil {
				t.Fatal(err)
			}
			objects := strings.Count(strings.TrimSpace(out), "\n") + 1
			if objects < 2 || !strings.Contains(out, "pod/") || !strings.Contains(out, "(server dry run)") {
				t.Errorf("the dry run did not accept the rendered pods and Service:\n%s", out)
			}
			t.Logf("%s: %d objects accepted by the API server (dry run)", filepath.Base(file), objects)
			return ctx
		})
	}
	testenv.Test(t, f.Feature())
}
