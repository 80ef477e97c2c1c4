package render

import (
	"strings"
	"testing"
)

// lastWords finds why a rank failed in the tail of its log that the kubelet keeps, in the shapes
// real launchers leave it (torchrun 1.13 and 2.6 were run to see them).
func TestLastWordsFindsWhyARankFailed(t *testing.T) {
	torchrunSummary := `torch.distributed.elastic.multiprocessing.errors.ChildFailedError: 
============================================================
train.py FAILED
------------------------------------------------------------
Failures:
  <NO_OTHER_FAILURES>
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-12-01_11:05:55
  host      : ty-worker-1
  rank      : 1 (local_rank: 0)
  exitcode  : 1 (pid: 7409)
  error_file: <N/A>
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
============================================================
`
	long := "ValueError: " + strings.Repeat("é", 150)
	cases := []struct{ name, msg, want string }{
		{"a rank's exception above torchrun's own", `  File "train.py", line 4, in f
    raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")
RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB
ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 0 (pid: 7409) of binary: /usr/bin/python3.11
Traceback (most recent call last):
  File "/usr/bin/torchrun", line 33, in <module>
    raise ChildFailedError(
` + torchrunSummary, "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB"},
		{"a rank's lines behind torchrun's prefix", "[rank1]: Traceback (most recent call last):\n[rank1]:   File \"train.py\", line 9\n[rank1]: torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled system error\n" + torchrunSummary,
			"torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled system error"},
		{"the rank's exception fell out of the tail", `    return launch_agent(self._config, self._entrypoint, list(args))
  File "/usr/lib/python3/dist-packages/torch/distributed/launcher/api.py", line 269, in launch_agent
    raise ChildFailedError(
` + torchrunSummary, ""},
		{"torchrun's summary of a rank that recorded its error", strings.Replace(torchrunSummary, "traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html",
			"traceback : Traceback (most recent call last):\n    File \"train.py\", line 12, in main\n      step()\n  KeyError: 'labels'", 1), "KeyError: 'labels'"},
		{"a Python exception, then a log line", "Traceback (most recent call last):\nKeyboardInterrupt\nINFO: shutting down\n", "KeyboardInterrupt"},
		{"no Python: the last line", "loading shard 3\nSegmentation fault (core dumped)\n\n", "Segmentation fault (core dumped)"},
		{"a rule is no line", "fatal: cannot open /data/x\n==========\n", "fatal: cannot open /data/x"},
		{"colours and control characters dropped", "\x1b[31mAssertionError\x1b[0m\n", "AssertionError"},
		{"a bell", "boom\a\n", "boom"},
		{"cut at a rune, marked", long, long[:lastWordsMax-len("…")-1] + "…"},
		{"nothing", " \n\n", ""},
	}
	for _, c := range cases {
		if got := lastWords(c.msg); got != c.want {
			t.Errorf("%s: lastWords = %q; want %q", c.name, got, c.want)
		}
	}
	if got := len(lastWords(long)); got > lastWordsMax {
		t.Errorf("a cut line has %d bytes; want at most %d", got, lastWordsMax)
	}
}

// The kubelet's reason is named when it says more than that the container exited.
func TestNotableExitReason(t *testing.T) {
	for reason, want := range map[string]string{"": "", "Error": "", "Completed": "", "OOMKilled": "OOMKilled", "ContainerCannotRun": "ContainerCannotRun"} {
		if got := notableExitReason(reason); got != want {
			t.Errorf("notableExitReason(%q) = %q; want %q", reason, got, want)
		}
	}
}

// A cache may keep LastWords of a message in its place: render reads the same line from it.
func TestLastWordsOfLastWordsIsTheSame(t *testing.T) {
	for _, msg := range []string{
		"[rank0]: RuntimeError: x\nChildFailedError:\n=====\n",
		"\x1b[31mAssertionError\x1b[0m",
		"ValueError: " + strings.Repeat("é", 150),
		"[default0]: [rank0]: boom",
		"Segmentation fault\n",
		"",
	} {
		once := LastWords(msg)
		if twice := LastWords(once); twice != once {
			t.Errorf("LastWords(%q) = %q, and of that %q", msg, once, twice)
		}
	}
}
