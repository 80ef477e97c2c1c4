package main

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseSideBySide(t *testing.T) {
	cases := map[string]struct {
		in      string
		want    []player
		wantErr bool
	}{
		"labels and dirs": {in: "Trainyard=a/trainyard, Kubeflow tuned=a/peer-tuned",
			want: []player{{label: "Trainyard", dir: "a/trainyard"}, {label: "Kubeflow tuned", dir: "a/peer-tuned"}}},
		"one run is nothing to compare": {in: "Trainyard=a", wantErr: true},
		"a pair without a dir":          {in: "Trainyard=a,peer", wantErr: true},
		"an empty label":                {in: "Trainyard=a,=b", wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := parseSideBySide(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want one: %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(player{})); diff != "" {
				t.Errorf("players (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSideBySideReadsWhatARunWrote(t *testing.T) {
	table := func(running, completionWorst float64, runningText string) figuresTable {
		return figuresTable{API: "kubeflow", Size: "200x8", Title: "200 jobs x 8 (1,600 pods)", Rows: []figuresRow{
			{Figure: "every job Running", Measured: runningText, Target: "≤ 36.1 s", Values: []float64{running}},
			{Figure: "master Succeeded → job Succeeded: median, worst", Measured: "m", Values: []float64{0.05, completionWorst}},
			{Figure: "… the status counting all pods running", Measured: "x"},
		}}
	}
	dirs := map[string]figuresFile{
		"ty": {Operator: "bin/trainyard", Header: "Run A.  \nCluster B.", Tables: []figuresTable{table(33, 0.25, "33.0 s"),
			{API: "t9k", Size: "200x8", Title: "the other API", Rows: []figuresRow{{Figure: "every job Running", Measured: "30 s"}}}}},
		"tuned": {Operator: "bin/peer/training-operator.v1 --controller-threads=16", Tables: []figuresTable{table(51.5, 0.6, "51.5 s")}},
		"slow":  {Operator: "bin/peer/training-operator.v1", Tables: []figuresTable{table(33, 0.2, "33.0 s")}},
		"none":  {Operator: "bin/peer/training-operator.v1"},
	}
	root := t.TempDir()
	ps := []player{{label: "Trainyard", dir: "ty"}, {label: "tuned", dir: "tuned"}, {label: "slow", dir: root + "/slow"}, {label: "none", dir: "none"}}
	for dir, f := range dirs {
		if err := writeFigures(mkdir(t, root+"/"+dir), f); err != nil {
			t.Fatal(err)
		}
	}
	if err := readPlayers(root, ps); err != nil {
		t.Fatal(err)
	}
	got := sideBySide(ps)
	for _, want := range []string{
		"**Trainyard** (`bin/trainyard`, ty): Run A. Cluster B.",
		"## kubeflow.org/v1 PyTorchJob, 200 jobs x 8 (1,600 pods)",
		"| figure | Trainyard | tuned | slow | none | target | Trainyard ahead of tuned | Trainyard ahead of slow | Trainyard ahead of none |",
		// Running: ahead of the tuned peer, level with the slow one, not compared where not played.
		"| every job Running | 33.0 s | 51.5 s | 33.0 s | not played | ≤ 36.1 s | yes | level | – |",
		// Completion: the medians are equal, so at best level; the slow peer's worst is lower.
		"| master Succeeded → job Succeeded: median, worst | m | m | m | not played | – | level | **no** | – |",
		"| … the status counting all pods running | x | x | x | not played | – | – | – | – |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("side by side lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "the other API") {
		t.Errorf("the first run's other API, which no other played, is set side by side:\n%s", got)
	}
	if err := readPlayers(root, []player{{label: "gone", dir: "missing"}}); err == nil || !strings.Contains(err.Error(), "gone") {
		t.Errorf("a run without figures: error %v, want one naming it", err)
	}
}

func mkdir(t *testing.T, dir string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}
