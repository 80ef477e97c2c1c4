package render

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// A replica that fails is replaced by a new pod, and the failed pod's log goes with it (unlike a
// container the kubelet restarts in place, whose previous log `kubectl logs --previous` reads). So
// that the reason survives the restart, the training container's terminationMessagePolicy
// defaults to FallbackToLogsOnError (pod.go): the kubelet then copies the tail of a failed
// container's log (its last 80 lines, at most 2 KiB) into the container's terminated state,
// unless the program wrote its own termination message. Render reads that message back and names
// the line that says why in how the replica ended ("exited with code 1 after logging
// "RuntimeError: CUDA out of memory ..."), which the restart's event, the back-off's Waiting
// condition and the job's Failed condition carry.

// lastWordsMax bounds the line quoted, in bytes: a condition's message stays readable.
const lastWordsMax = 200

// pythonException is the last line of a Python traceback: the exception's class, dotted or not,
// alone or followed by its message ("RuntimeError: ...", "torch.OutOfMemoryError: ...",
// "KeyboardInterrupt").
var pythonException = regexp.MustCompile(`^(?:[A-Za-z_][A-Za-z0-9_]*\.)*[A-Za-z_][A-Za-z0-9_]*(?:Error|Exception|Exit|Interrupt)(?::.*)?$`)

// linePrefix is what launchers put before a rank's lines, one or more: torchrun's "[rank0]:" and
// "[default0]:".
var linePrefix = regexp.MustCompile(`^(?:\[[A-Za-z0-9_,:-]+\]:\s*)+`)

// terminalEscape is a terminal's colour or cursor sequence (CSI), which a log may carry.
var terminalEscape = regexp.MustCompile("\x1b\\[[0-9;?]*[A-Za-z]")

// launcherExceptions are the exceptions a launcher raises when a rank it started failed: their
// line says only that a child failed, never why, so the rank's own exception is looked for
// before them.
var launcherExceptions = []string{"ChildFailedError"}

// LastWords is lastWords, for a cache that keeps of a termination message only what render
// reads: lastWords(LastWords(m)) is LastWords(m).
func LastWords(msg string) string { return lastWords(msg) }

// lastWords picks, from a failed container's termination message, the line that says why it
// failed: the last Python exception line (a rank's own, not its launcher's); else, where the tail
// holds torchrun's summary, its root cause (rootCause); else the last line that is neither blank
// nor a rule of = or -, a terminal's colours left out. A root cause that names a signal comes
// first: the rank it names was killed and logged no exception, so any other in the tail is a
// peer's, failing on the lost rank. Empty when the message has none of these, or when its only
// exception is a launcher's: what follows that is the launcher's summary, what precedes it its
// traceback, neither of which says why the rank failed. The line is cut to lastWordsMax bytes at
// a rune, control characters dropped.
func lastWords(msg string) string {
	cause, signal := rootCause(msg)
	if signal {
		return clipLine(cause)
	}
	words, own := lastLine(msg)
	if !own && cause != "" {
		return clipLine(cause)
	}
	return words
}

// lastLine scans msg from its end: the first Python exception line that is not a launcher's
// (own true), else the fallback lastWords describes (own false).
func lastLine(msg string) (words string, own bool) {
	fallback, launcher := "", false
	for rest := strings.TrimRight(msg, " \t\r\n"); rest != ""; {
		line := rest
		if i := strings.LastIndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[i+1:], rest[:i]
		} else {
			rest = ""
		}
		line = terminalEscape.ReplaceAllString(line, "")
		line = strings.TrimSpace(linePrefix.ReplaceAllString(strings.TrimSpace(line), ""))
		if line == "" || strings.Trim(line, "=-") == "" {
			continue
		}
		if pythonException.MatchString(line) {
			if !isLauncherException(line) {
				return clipLine(line), true
			}
			launcher, fallback = true, ""
		}
		if fallback == "" && !launcher {
			fallback = line
		}
	}
	return clipLine(fallback), false
}

// rootCauseHeading opens the block of torchrun's summary (torch 1.13 to 2.x) that names the rank
// that failed first; its fields follow as "key : value" lines until a rule.
const rootCauseHeading = "Root Cause (first observed failure):"

// rootCause is torchrun's root cause, when the message holds its summary: "torchrun: rank 0
// (local_rank: 0) failed first with exitcode -9: Signal 9 (SIGKILL) received by PID 412".
// Several local ranks failing (a node's 8 GPUs) fill the kubelet's 2 KiB with the summary, and
// torchrun's traceback pushes a rank's own lines out too (seen on torch 1.13 and 2.6); the root
// cause comes last and stays. Its traceback field is named when it says something of its own,
// a signal (then signal is true), not when it only points at torch's docs (a rank whose main is
// not decorated with @record) or holds the rank's traceback, whose exception lastLine finds.
// "" without the block or its rank.
func rootCause(msg string) (cause string, signal bool) {
	i := strings.LastIndex(msg, rootCauseHeading)
	if i < 0 {
		return "", false
	}
	fields := map[string]string{}
	for _, line := range strings.Split(msg[i+len(rootCauseHeading):], "\n") {
		line = strings.TrimSpace(terminalEscape.ReplaceAllString(line, ""))
		if line != "" && strings.Trim(line, "=-") == "" {
			break
		}
		if key, value, ok := strings.Cut(line, ":"); ok {
			if key = strings.TrimSpace(key); fields[key] == "" {
				fields[key] = strings.TrimSpace(value)
			}
		}
	}
	rank, code := fields["rank"], fields["exitcode"]
	if rank == "" {
		return "", false
	}
	code, _, _ = strings.Cut(code, " (pid:")
	cause = "torchrun: rank " + rank + " failed first"
	if code != "" {
		cause += " with exitcode " + code
	}
	if tb := fields["traceback"]; tb != "" && !strings.HasPrefix(tb, "To enable traceback") && !strings.HasPrefix(tb, "Traceback") {
		return cause + ": " + tb, true
	}
	return cause, false
}

func isLauncherException(line string) bool {
	class, _, _ := strings.Cut(line, ":")
	for _, e := range launcherExceptions {
		if class == e || strings.HasSuffix(class, "."+e) {
			return true
		}
	}
	return false
}

// clipLine drops control characters and cuts s to lastWordsMax bytes at a rune boundary, marking
// a cut with an ellipsis.
func clipLine(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == utf8.RuneError {
			return -1
		}
		return r
	}, s)
	if len(s) <= lastWordsMax {
		return s
	}
	cut := lastWordsMax - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// notableExitReason is the kubelet's reason for a container's end when it says more than that
// the container exited ("Error", "Completed"): OOMKilled, ContainerCannotRun, DeadlineExceeded.
func notableExitReason(reason string) string {
	switch reason {
	case "", "Error", "Completed":
		return ""
	}
	return clipLine(reason)
}
