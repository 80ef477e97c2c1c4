package cli

import (
	"bytes"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestDocumentedFlagsExist: the README's command table documents every verb, and every flag it
// gives a verb is one that verb takes.
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
			for _, f := range flagRE.FindAllStringSubmatch(m[2], -1) {
				name := f[1] + f[2]
				if !regexp.MustCompile(`(?m)^  -` + regexp.QuoteMeta(name) + `(\s|$)`).MatchString(usage.String()) {
					t.Errorf("README: trainyard %s lists -%s, which it does not take:\n%s", m[1], name, usage.String())
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
