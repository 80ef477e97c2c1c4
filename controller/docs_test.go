package controller

import (
	"flag"
	"os"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// TestDocumentedFlagsExist: every flag the operator's flag table in docs/operating.md lists is a
// flag the operator takes, so the docs never send a user to a flag that is gone; and every flag
// the operator takes, but controller-runtime's logging ones, is in the table.
func TestDocumentedFlagsExist(t *testing.T) {
	data, err := os.ReadFile("../docs/operating.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	start := strings.Index(doc, "## The operator's flags")
	if start < 0 {
		t.Fatal(`docs/operating.md has no "## The operator's flags" section`)
	}
	section := doc[start+3:]
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	var o Options
	fs := NewFlagSet(&o, &zap.Options{})
	flagRE := regexp.MustCompile("`--([a-z0-9-]+)")
	seen := 0
	documented := map[string]bool{}
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "| `--") {
			continue
		}
		first := strings.SplitN(line, "|", 3)[1]
		for _, m := range flagRE.FindAllStringSubmatch(first, -1) {
			seen++
			documented[m[1]] = true
			if fs.Lookup(m[1]) == nil {
				t.Errorf("docs/operating.md lists --%s, which the operator does not take", m[1])
			}
		}
	}
	if seen < 10 {
		t.Errorf("found only %d flags in the docs' table; the table's format changed?", seen)
	}
	logging := flag.NewFlagSet("zap", flag.ContinueOnError)
	(&zap.Options{}).BindFlags(logging)
	fs.VisitAll(func(f *flag.Flag) {
		if logging.Lookup(f.Name) == nil && !documented[f.Name] {
			t.Errorf("the operator takes --%s, which docs/operating.md's flag table does not list", f.Name)
		}
	})
}
