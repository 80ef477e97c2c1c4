package render

import (
	"os"
	"path/filepath"
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
` + torchrunSummary, "torchrun: rank 1 (local_rank: 0) failed first with exitcode 1"},
		{"a killed rank is the cause, not a peer's exception on the lost rank", "[rank1]: RuntimeError: Connection reset by peer\n" + strings.Replace(strings.Replace(torchrunSummary, "exitcode  : 1 (pid: 7409)", "exitcode  : -9 (pid: 7409)", 1),
			"traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html", "traceback : Signal 9 (SIGKILL) received by PID 7409", 1),
			"torchrun: rank 1 (local_rank: 0) failed first with exitcode -9: Signal 9 (SIGKILL) received by PID 7409"},
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

// The kubelet's tails of real torchrun containers (testdata/torchrun-tails: the last 80 lines, at
// most 2,048 bytes, of torchrun's output, run on this machine with Debian's torch 1.13 and 2.6)
// whose ranks raised, with and without @record, or were killed. With 8 local ranks the ranks' own
// lines fall out of the tail (torch 1.13: the summary of 8 failures; 2.6: torchrun's traceback),
// and only the summary's root cause is left to name.
func TestLastWordsOfRealTorchrunTails(t *testing.T) {
	for file, want := range map[string]string{
		"torch-1.13-8-ranks-raise.txt":        "torchrun: rank 0 (local_rank: 0) failed first with exitcode 1",
		"torch-2.6-8-ranks-raise.txt":         "torchrun: rank 0 (local_rank: 0) failed first with exitcode 1",
		"torch-1.13-8-ranks-raise-record.txt": "RuntimeError: rank 0 cannot load its shard",
		"torch-2.6-8-ranks-raise-record.txt":  "RuntimeError: rank 2 cannot load its shard",
		"torch-1.13-2-ranks-sigkill.txt":      "torchrun: rank 0 (local_rank: 0) failed first with exitcode -9: Signal 9 (SIGKILL) received by PID 25827",
		"torch-2.6-2-ranks-sigkill.txt":       "torchrun: rank 0 (local_rank: 0) failed first with exitcode -9: Signal 9 (SIGKILL) received by PID 25835",
	} {
		data, err := os.ReadFile(filepath.Join("testdata", "torchrun-tails", file))
		if err != nil {
			t.Fatal(err)
		}
		if len(data) > 2048 {
			t.Errorf("%s: %d bytes, more than the kubelet keeps", file, len(data))
		}
		if got := lastWords(string(data)); got != want {
			t.Errorf("%s: lastWords = %q; want %q", file, got, want)
		}
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
		"Root Cause (first observed failure):\n[0]:\n  rank      : 3 (local_rank: 3)\n  exitcode  : -9 (pid: 1)\n  traceback : Signal 9 (SIGKILL) received by PID 1\n=====\n",
		"",
	} {
		once := LastWords(msg)
		if twice := LastWords(once); twice != once {
			t.Errorf("LastWords(%q) = %q, and of that %q", msg, once, twice)
		}
	}
}
