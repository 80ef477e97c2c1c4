package render

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

var update = flag.Bool("update", false, "rewrite the expected output of the golden cases")

// defaultNow is the time every golden case renders at unless its folder holds a file "now".
const defaultNow = "2026-01-01T00:00:00Z"

// TestGolden renders each case under testdata/<case>/:
//
//	job.yaml       the job, status included (the counters and phase render builds on)
//	observed.yaml  optional: the pods the job owns, with status (render.trainyard.dev/observed
//	               marks those someone else deleted), their nodes, and installed PodGroup CRDs
//	now            optional: the time to render at (RFC3339); default 2026-01-01T00:00:00Z
//	want.yaml      the expected output: objects, then the decisions
//	want.err       instead of want.yaml, for input render refuses: the expected error
//
// `go test ./render/... -update` rewrites want.yaml / want.err.
func TestGolden(t *testing.T) {
	dirs, err := filepath.Glob("testdata/*/job.yaml")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no golden cases found: %v", err)
	}
	for _, jobFile := range dirs {
		dir := filepath.Dir(jobFile)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			got, gotErr := renderCase(t, dir)
			if gotErr != nil {
				checkGolden(t, filepath.Join(dir, "want.err"), []byte(gotErr.Error()+"\n"))
				return
			}
			checkGolden(t, filepath.Join(dir, "want.yaml"), got)
		})
	}
}

func renderCase(t *testing.T, dir string) ([]byte, error) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "job.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	job, err := ReadJob(data)
	if err != nil {
		return nil, err
	}
	in := Input{Job: job, Now: mustTime(t, defaultNow)}
	if data, err := os.ReadFile(filepath.Join(dir, "observed.yaml")); err == nil {
		if err := in.Observe(data); err != nil {
			t.Fatalf("observed.yaml: %v", err)
		}
	}
	if data, err := os.ReadFile(filepath.Join(dir, "now")); err == nil {
		in.Now = mustTime(t, strings.TrimSpace(string(data)))
	}
	out, err := Render(in)
	if err != nil {
		return nil, err
	}
	checkOnlyPodsToCreate(t, in, out)
	doc, err := Print(out)
	if err != nil {
		t.Fatalf("printing the output: %v", err)
	}
	// The same input must give byte-identical output.
	again, _ := Render(in)
	if doc2, _ := Print(again); string(doc2) != string(doc) {
		t.Fatalf("rendering twice gave different output:\n%s", cmp.Diff(string(doc), string(doc2)))
	}
	return doc, nil
}

// checkOnlyPodsToCreate: with Input.OnlyPodsToCreate, render decides the same and returns exactly
// the pods of Decisions.Create, as the full render has them; with MaxPodsToCreate too, the first
// of them.
func checkOnlyPodsToCreate(t *testing.T, in Input, full *Output) {
	t.Helper()
	in.OnlyPodsToCreate = true
	lean, err := Render(in)
	if err != nil {
		t.Fatalf("OnlyPodsToCreate: %v", err)
	}
	if diff := cmp.Diff(full.Decisions, lean.Decisions); diff != "" {
		t.Errorf("OnlyPodsToCreate changed the decisions (-full +lean):\n%s", diff)
	}
	var want []*corev1.Pod
	for _, p := range full.Pods {
		if slices.Contains(full.Decisions.Create, p.Name) {
			want = append(want, p)
		}
	}
	if diff := cmp.Diff(want, lean.Pods, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("OnlyPodsToCreate pods (-want +got):\n%s", diff)
	}
	// With a bound, the same decisions and the first pods of them, in order.
	for _, bound := range []int{1, 2} {
		in.MaxPodsToCreate = bound
		sliced, err := Render(in)
		if err != nil {
			t.Fatalf("MaxPodsToCreate %d: %v", bound, err)
		}
		if diff := cmp.Diff(full.Decisions, sliced.Decisions); diff != "" {
			t.Errorf("MaxPodsToCreate %d changed the decisions (-full +sliced):\n%s", bound, diff)
		}
		if diff := cmp.Diff(want[:min(bound, len(want))], sliced.Pods, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("MaxPodsToCreate %d pods (-want +got):\n%s", bound, diff)
		}
	}
}

func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	other := strings.TrimSuffix(path, filepath.Ext(path))
	if filepath.Ext(path) == ".err" {
		other += ".yaml"
	} else {
		other += ".err"
	}
	if *update {
		_ = os.Remove(other)
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s differs (-want +got):\n%s", path, diff)
	}
}

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatalf("bad time %q: %v", s, err)
	}
	return v
}
