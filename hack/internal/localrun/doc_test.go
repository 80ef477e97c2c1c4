package localrun

import "testing"

func TestCPUModel(t *testing.T) {
	cases := map[string]struct{ cpuinfo, want string }{
		"model and clock":          {"processor\t: 0\nmodel name\t: Intel(R) Xeon(R) Processor\ncpu MHz\t\t: 2600.000\nprocessor\t: 1\nmodel name\t: Other\n", "Intel(R) Xeon(R) Processor, 2600 MHz"},
		"a fraction of a MHz kept": {"model name\t: AMD EPYC 7B13\ncpu MHz\t\t: 2449.998\n", "AMD EPYC 7B13, 2449.998 MHz"},
		"a whole clock kept":       {"model name\t: X\ncpu MHz\t\t: 2000\n", "X, 2000 MHz"},
		"no clock":                 {"model name\t: Neoverse-N1\n", "Neoverse-N1"},
		"no model":                 {"processor\t: 0\nBogoMIPS\t: 50.00\n", ""},
	}
	for name, c := range cases {
		if got := cpuModel(c.cpuinfo); got != c.want {
			t.Errorf("%s: %q, want %q", name, got, c.want)
		}
	}
}

func TestFlagValue(t *testing.T) {
	args := []string{"/bin/kube-scheduler", "--bind-address=127.0.0.1", "--secure-port=32761", "--leader-elect=false", ""}
	if got := flagValue(args, "--secure-port"); got != "32761" {
		t.Errorf("--secure-port: %q, want 32761", got)
	}
	if got := flagValue(args, "--port"); got != "" {
		t.Errorf("--port, not given: %q, want none", got)
	}
}
