package controller

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/trainyard/trainyard/render"
)

// The operator's cache keeps only part of each pod (trimPod). Every render decision must come out
// the same from the trimmed pods as from the whole ones: each golden case of render/testdata is
// rendered both ways.
func TestTrimmedPodsDecideAsWholeOnes(t *testing.T) {
	dirs, err := filepath.Glob("../render/testdata/*/observed.yaml")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no golden cases with observed pods found (%v)", err)
	}
	for _, path := range dirs {
		dir := filepath.Dir(path)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			in, ok := goldenInput(t, dir)
			if !ok {
				t.Skip("the case's job is refused by render")
			}
			whole, err := render.Render(in)
			if err != nil {
				t.Skipf("render refuses the case: %v", err)
			}
			trimmed := in
			trimmed.Pods = make([]*corev1.Pod, len(in.Pods))
			for i, p := range in.Pods {
				trimmed.Pods[i] = p.DeepCopy()
				trimPod(trimmed.Pods[i])
			}
			trimmed.DeletedPods = make([]corev1.Pod, len(in.DeletedPods))
			for i := range in.DeletedPods {
				in.DeletedPods[i].DeepCopyInto(&trimmed.DeletedPods[i])
				trimPod(&trimmed.DeletedPods[i])
			}
			got, err := render.Render(trimmed)
			if err != nil {
				t.Fatalf("render of the trimmed pods: %v", err)
			}
			if diff := cmp.Diff(whole.Decisions, got.Decisions); diff != "" {
				t.Errorf("decisions from trimmed pods differ (-whole +trimmed):\n%s", diff)
			}
		})
	}
}

// goldenInput reads a golden case's job, observations and time as render's golden test does.
func goldenInput(t *testing.T, dir string) (render.Input, bool) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "job.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	job, err := render.ReadJob(data)
	if err != nil {
		return render.Input{}, false
	}
	now, _ := time.Parse(time.RFC3339, "2026-01-01T00:00:00Z")
	if b, err := os.ReadFile(filepath.Join(dir, "now")); err == nil {
		if now, err = time.Parse(time.RFC3339, strings.TrimSpace(string(b))); err != nil {
			t.Fatal(err)
		}
	}
	in := render.Input{Job: job, Now: now}
	obs, err := os.ReadFile(filepath.Join(dir, "observed.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := in.Observe(obs); err != nil {
		t.Fatal(err)
	}
	return in, true
}
