package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestTheSummaryRepeatsWhatTheFailedTestSaid: after the whole output, the failed leaf test's own
// lines come again (its assertion with a few lines of its diff, the head of a logged dump), and
// nothing of the tests that passed.
func TestTheSummaryRepeatsWhatTheFailedTestSaid(t *testing.T) {
	var in strings.Builder
	emit := func(action, test, output string) {
		b, _ := json.Marshal(event{Action: action, Package: "p", Test: test, Output: output})
		in.Write(append(b, '\n'))
	}
	emit("output", "TestA", "=== RUN   TestA\n")
	emit("output", "TestA/one", "    a_test.go:10: all fine\n")
	emit("pass", "TestA/one", "")
	emit("output", "TestA/two", "    a_test.go:20: pods restarted (-want +got):\n")
	emit("output", "TestA/two", "          []string{\n")
	emit("output", "TestA/two", "        - \"scale-worker-0\",\n")
	for i := 0; i < 50; i++ {
		emit("output", "TestA/two", "        TRAINYARD_STEP 1 2 3\n")
	}
	emit("output", "TestA/two", "    --- FAIL: TestA/two (1.00s)\n")
	emit("fail", "TestA/two", "")
	emit("fail", "TestA", "")
	emit("fail", "", "")
	var out strings.Builder
	failed, err := summarize(strings.NewReader(in.String()), &out)
	if err != nil || !failed {
		t.Fatalf("summarize: failed %v, err %v; want a failure reported", failed, err)
	}
	all := out.String()
	head, summary, ok := strings.Cut(all, "\n== 1 failed")
	if !ok {
		t.Fatalf("no summary of 1 failed test in:\n%s", all)
	}
	if !strings.Contains(head, "all fine") || strings.Count(head, "TRAINYARD_STEP") != 50 {
		t.Errorf("the output before the summary is not the whole output:\n%s", head)
	}
	for _, want := range []string{"--- p TestA/two\n", "a_test.go:20: pods restarted", `- "scale-worker-0"`} {
		if !strings.Contains(summary, want) {
			t.Errorf("summary lacks %q:\n%s", want, summary)
		}
	}
	if strings.Contains(summary, "all fine") || strings.Contains(summary, "--- p TestA\n") || strings.Count(summary, "TRAINYARD_STEP") > continuation {
		t.Errorf("summary says more than the failed leaf's own lines:\n%s", summary)
	}
}
