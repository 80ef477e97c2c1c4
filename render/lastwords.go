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
// failed: the last Python exception line (a rank's own, not its launcher's), else the last line
// that is neither blank nor a rule of = or -, a terminal's colours left out. Empty when the message has none, or when its only
// exception is a launcher's: what follows that is the launcher's summary, what precedes it its
// traceback, neither of which says why the rank failed (the rank's own exception then fell out of
// the kubelet's 2 KiB). The line is cut to lastWordsMax bytes at a rune, control characters
// dropped.
func lastWords(msg string) string {
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
				return clipLine(line)
			}
			launcher, fallback = true, ""
		}
		if fallback == "" && !launcher {
			fallback = line
		}
	}
	return clipLine(fallback)
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
