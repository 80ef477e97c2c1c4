package main

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseFlagsSizes(t *testing.T) {
	cases := map[string]struct {
		args      []string
		wantAPIs  []api
		wantSizes string
		wantErr   bool
	}{
		"the default plays both APIs at issue 19's four sizes": {
			wantAPIs: []api{apiT9k, apiKubeflow}, wantSizes: "[50x8 1x1000 200x8 1x5000]",
		},
		"small scale plays the light sizes": {
			args: []string{"--scale=small"}, wantAPIs: []api{apiT9k, apiKubeflow}, wantSizes: "[10x4 1x100 20x4 1x300]",
		},
		"sizes and APIs given keep their order": {
			args: []string{"--apis=kubeflow,t9k", "--sizes=1x1000, 50x8"}, wantAPIs: []api{apiKubeflow, apiT9k}, wantSizes: "[1x1000 50x8]",
		},
		"a mixed size is two parts joined by +": {
			args: []string{"--sizes=50x8,1x5000+50x8"}, wantAPIs: []api{apiT9k, apiKubeflow}, wantSizes: "[50x8 1x5000+50x8]",
		},
		"a mixed size without its second part is refused": {args: []string{"--sizes=1x5000+"}, wantErr: true},
		"an unknown API is refused":                       {args: []string{"--apis=tfjob"}, wantErr: true},
		"a size without jobs is refused":                  {args: []string{"--sizes=x8"}, wantErr: true},
		"sizes beside the earlier scenarios is refused":   {args: []string{"--scenarios=sizes,big"}, wantErr: true},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			o, parsed := parsedFlags(t, c.args, c.wantErr)
			if !parsed {
				return
			}
			if diff := cmp.Diff(c.wantAPIs, o.apis); diff != "" {
				t.Errorf("apis (-want +got):\n%s", diff)
			}
			if got := fmtSizes(o.sizes); got != c.wantSizes {
				t.Errorf("sizes = %s, want %s", got, c.wantSizes)
			}
		})
	}
}

func TestParseFlagsEarlierScenarios(t *testing.T) {
	o, err := parseFlags([]string{"--scenarios=gang-restart"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"big": true, "gang-restart": true}
	if diff := cmp.Diff(want, o.scenarios); diff != "" {
		t.Errorf("scenarios (-want +got):\n%s", diff)
	}
}

func TestSizeNames(t *testing.T) {
	cases := map[string]struct {
		s                  size
		wantTitle, wantJob string
	}{
		"a burst names its jobs by index":   {size{jobs: 200, podsPerJob: 8}, "200 jobs x 8 (1,600 pods)", "s200x8-007"},
		"a big job is named after its size": {size{jobs: 1, podsPerJob: 5000}, "1 x 5,000", "s1x5000"},
		"big jobs together by index":        {size{jobs: 3, podsPerJob: 1500}, "3 jobs x 1500 (4,500 pods)", "s3x1500-007"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if got := c.s.title(); got != c.wantTitle {
				t.Errorf("title = %q, want %q", got, c.wantTitle)
			}
			if got := c.s.jobName(7); got != c.wantJob {
				t.Errorf("jobName(7) = %q, want %q", got, c.wantJob)
			}
		})
	}
}

func TestMixedSize(t *testing.T) {
	s, err := parseSize("1x5000+50x8")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.title(), "1 x 5,000, then 50 jobs x 8 (400 pods)"; got != want {
		t.Errorf("title = %q, want %q", got, want)
	}
	if got, want := s.pods(), 5400; got != want {
		t.Errorf("pods = %d, want %d", got, want)
	}
	want := []size{{jobs: 1, podsPerJob: 5000}, {jobs: 50, podsPerJob: 8}}
	if diff := cmp.Diff(want, s.parts(), cmp.AllowUnexported(size{})); diff != "" {
		t.Errorf("parts (-want +got):\n%s", diff)
	}
	if got := burstJobs(s.parts(), [][]string{{"big"}, {"a", "b"}}); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("burst jobs = %v, want the second part's", got)
	}
	// Big jobs together are not a burst: their masters run until deleted.
	s, err = parseSize("3x1500+50x8")
	if err != nil {
		t.Fatal(err)
	}
	if got := burstJobs(s.parts(), [][]string{{"b1", "b2", "b3"}, {"a", "b"}}); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("burst jobs of 3x1500+50x8 = %v, want the second part's", got)
	}
}

func fmtSizes(s []size) string {
	out := "["
	for i, x := range s {
		if i > 0 {
			out += " "
		}
		out += x.String()
	}
	return out + "]"
}
