// Command testsummary reads `go test -json` on stdin, prints the tests' output as `go test -v`
// would, and ends with what each failed test said: the lines its test code logged (file:line
// lines, each with a few of its continuation lines), so the failure stays in the last screen of a
// long run (CI keeps only a part of a layer's output). It exits 1 when a test or package failed.
//
//	go test -json ./... | go run ./hack/testsummary
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
)

// event is the part of test2json's event that matters here.
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

// said matches a line a test logged: indented, led by its file and line.
var said = regexp.MustCompile(`^\s+\S+_test\.go:\d+: `)

const (
	// continuation is how many of a logged line's following lines are kept (a diff, a message
	// over several lines); a process's output logged whole is not.
	continuation = 6
	// perTest bounds a failed test's summary.
	perTest = 40
)

func main() {
	failed, err := summarize(os.Stdin, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testsummary:", err)
		os.Exit(2)
	}
	if failed {
		os.Exit(1)
	}
}

// summarize copies the output and appends the summary; it reports whether anything failed.
func summarize(in io.Reader, out io.Writer) (bool, error) {
	type test struct{ lines []string }
	tests := map[string]*test{}
	var failures []string
	anyFailed := false
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			// Not an event (a build error printed as text): pass it on.
			fmt.Fprintln(out, sc.Text())
			continue
		}
		key := e.Package + " " + e.Test
		switch e.Action {
		case "output":
			fmt.Fprint(out, e.Output)
			if e.Test != "" {
				if tests[key] == nil {
					tests[key] = &test{}
				}
				tests[key].lines = append(tests[key].lines, strings.TrimRight(e.Output, "\n"))
			}
		case "build-output":
			fmt.Fprint(out, e.Output)
		case "fail", "build-fail":
			anyFailed = true
			if e.Test != "" {
				failures = append(failures, key)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return anyFailed, err
	}
	// A parent fails with its failed subtests: report the leaves only.
	leaves := failures[:0:0]
	for _, f := range failures {
		parent := false
		for _, g := range failures {
			if strings.HasPrefix(g, f+"/") {
				parent = true
				break
			}
		}
		if !parent {
			leaves = append(leaves, f)
		}
	}
	if len(leaves) > 0 {
		fmt.Fprintf(out, "\n== %d failed: what each said (its own lines; the whole output is above)\n", len(leaves))
	}
	for _, f := range leaves {
		fmt.Fprintf(out, "--- %s\n", f)
		kept, follow := 0, 0
		for _, l := range tests[f].lines {
			switch {
			case said.MatchString(l):
				follow = continuation
			case follow > 0 && strings.HasPrefix(l, "    "):
				follow--
			default:
				follow = 0
				continue
			}
			if kept++; kept > perTest {
				fmt.Fprintln(out, "    ...")
				break
			}
			fmt.Fprintln(out, l)
		}
	}
	return anyFailed, nil
}
