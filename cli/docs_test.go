package cli

import (
	"bytes"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestDocumentedFlagsExist: every flag the README's command table gives a verb is one that verb
// takes.
func TestDocumentedFlagsExist(t *testing.T) {
	data, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	rowRE := regexp.MustCompile("^\\| `trainyard ([a-z]+)([^`]*)`")
	flagRE := regexp.MustCompile(`--([a-z-]+)|(?:^|[ \[])-([a-zA-Z])\b`)
	rows := 0
	for _, line := range strings.Split(string(data), "\n") {
		m := rowRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		rows++
		var usage bytes.Buffer
		_ = Run(m[1], []string{"-h"}, &usage, &usage)
		for _, f := range flagRE.FindAllStringSubmatch(m[2], -1) {
			name := f[1] + f[2]
			if !regexp.MustCompile(`(?m)^  -` + regexp.QuoteMeta(name) + `(\s|$)`).MatchString(usage.String()) {
				t.Errorf("README: trainyard %s lists -%s, which it does not take:\n%s", m[1], name, usage.String())
			}
		}
	}
	if rows != 4 {
		t.Errorf("found %d trainyard commands in the README's table, want 4", rows)
	}
}
