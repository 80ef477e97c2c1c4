package cli

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSplitVerb(t *testing.T) {
	cases := map[string]struct {
		args     []string
		wantVerb string
		wantRest []string
		wantOK   bool
	}{
		"the verb first": {
			args: []string{"get", "-A"}, wantVerb: "get", wantRest: []string{"-A"}, wantOK: true,
		},
		"kubectl's global flags before the verb come first after it": {
			args:     []string{"--kubeconfig", "k", "-n", "team", "describe", "job", "--context=c"},
			wantVerb: "describe", wantRest: []string{"--kubeconfig", "k", "-n", "team", "job", "--context=c"}, wantOK: true,
		},
		"a flag's value that is a verb is not the verb": {
			args: []string{"-n", "logs", "get"}, wantVerb: "get", wantRest: []string{"-n", "logs"}, wantOK: true,
		},
		"flags with their values joined": {
			args: []string{"--namespace=team", "logs", "job"}, wantVerb: "logs", wantRest: []string{"--namespace=team", "job"}, wantOK: true,
		},
		"an operator flag before a verb is the operator's command line": {
			args: []string{"--leader-elect", "get"},
		},
		"no verb: the operator's flags": {
			args: []string{"--kubeconfig", "k", "--metrics-bind-address=0"},
		},
		"no arguments": {},
		"a global flag without its value": {
			args: []string{"--kubeconfig"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			verb, rest, ok := SplitVerb(tc.args)
			if verb != tc.wantVerb || ok != tc.wantOK {
				t.Errorf("SplitVerb(%q) = %q, ok %v; want %q, ok %v", tc.args, verb, ok, tc.wantVerb, tc.wantOK)
			}
			if diff := cmp.Diff(tc.wantRest, rest); diff != "" {
				t.Errorf("rest (-want +got):\n%s", diff)
			}
		})
	}
}
