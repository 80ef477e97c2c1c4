package cli

import (
	"bytes"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestDocumentedFlagsExist: the README's command table documents every verb, every flag it gives
// a verb is one that verb takes, and every flag a verb takes is in its row (a flag or its
// shorthand), but the cluster flags, which the README names once for all.
func TestDocumentedFlagsExist(t *testing.T) {
	data, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	cmdRE := regexp.MustCompile("`trainyard ([a-z]+)([^`]*)`")
	flagRE := regexp.MustCompile(`--([a-z-]+)|(?:^|[ \[])-([a-zA-Z])\b`)
	documented := map[string]bool{}
	for _, line := range strings.Split(string(data), "\n") {
		if !strings.HasPrefix(line, "| `trainyard ") {
			continue
		}
		// The first cell names the commands; the second says what they do.
		cell := strings.SplitN(strings.TrimPrefix(line, "|"), "|", 2)[0]
		for _, m := range cmdRE.FindAllStringSubmatch(cell, -1) {
			documented[m[1]] = true
			var usage bytes.Buffer
			_ = Run(m[1], []string{"-h"}, &usage, &usage)
			listed := map[string]bool{}
			for _, f := range flagRE.FindAllStringSubmatch(m[2], -1) {
				name := f[1] + f[2]
				listed[name] = true
				if !regexp.MustCompile(`(?m)^  -` + regexp.QuoteMeta(name) + `(\s|$)`).MatchString(usage.String()) {
					t.Errorf("README: trainyard %s lists -%s, which it does not take:\n%s", m[1], name, usage.String())
				}
			}
			taken := takenFlags(usage.String())
			for name := range listed {
				listed[taken[name]] = true // -A lists --all-namespaces too
			}
			for name, long := range taken {
				if !listed[name] && !listed[long] && !clusterFlag[name] {
					t.Errorf("README: trainyard %s takes -%s, which its row does not list", m[1], name)
				}
			}
		}
	}
	for _, v := range Verbs {
		if !documented[v] {
			t.Errorf("the README's command table has no row for trainyard %s", v)
		}
	}
}

// clusterFlag: the flags for reaching a cluster, which the README names once, above its table.
var clusterFlag = map[string]bool{"kubeconfig": true, "context": true, "namespace": true, "n": true}

// takenFlags reads a flag set's usage: each flag's name, with the long name it is a shorthand
// for (or its own).
func takenFlags(usage string) map[string]string {
	flags := map[string]string{}
	lines := strings.Split(usage, "\n")
	nameRE := regexp.MustCompile(`^  -([a-zA-Z][a-zA-Z-]*)`)
	shortRE := regexp.MustCompile(`shorthand for --([a-z-]+)`)
	for i, line := range lines {
		m := nameRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		flags[m[1]] = m[1]
		desc := line
		if i+1 < len(lines) {
			desc += lines[i+1]
		}
		if s := shortRE.FindStringSubmatch(desc); s != nil {
			flags[m[1]] = s[1]
		}
	}
	return flags
}
