// Package localrun runs the operator against a loopback cluster of its own, for the commands
// under hack/ that exercise the whole system (benchscale, soak): the cluster of hack/cluster.sh
// in a work dir and under a name of the caller's (so it never touches the developer's or the e2e
// cluster), the CRDs installed as `make install` does, and bin/trainyard as a child process on
// loopback ports, stopped, killed and measured (RSS, metrics) by its PID.
package localrun

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// Logf prints one line of progress; each command prefixes its own name.
type Logf func(format string, args ...any)

// FindRepo walks up from the working directory to the module's root.
func FindRepo() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.Contains(string(data), "module github.com/trainyard/trainyard\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("run from inside the trainyard repository (no go.mod of github.com/trainyard/trainyard above the working directory)")
		}
		dir = parent
	}
}

// InRepo resolves a path relative to the repository; an absolute path stays as it is.
func InRepo(repo, path string) string {
	if filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(repo, path)
}

// Commit names the checked-out commit, and says so when the work tree has uncommitted changes
// to tracked files: what a recorded figure was measured on.
func Commit(repo string) string {
	commit := strings.TrimSpace(gitOutput(repo, "rev-parse", "--short", "HEAD"))
	if commit == "" {
		commit = "unknown"
	}
	if strings.TrimSpace(gitOutput(repo, "status", "--porcelain", "--untracked-files=no")) != "" {
		commit += " + uncommitted changes"
	}
	return commit
}

// Machine says what the figures were measured with: the Go release, the CPUs and, where Linux
// names it, their model and clock (figures from machines of different CPUs do not compare: the
// same floor cost the control plane a third more CPU-seconds on one than on another).
func Machine() string {
	m := fmt.Sprintf("%s, %d CPUs", runtime.Version(), runtime.NumCPU())
	if cpuinfo, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		if model := cpuModel(string(cpuinfo)); model != "" {
			m += " (" + model + ")"
		}
	}
	return m
}

// cpuModel is the first processor's "model name" in /proc/cpuinfo's text, with its "cpu MHz"
// when given: "Intel(R) Xeon(R) Processor, 2600 MHz"; "" when it names none.
func cpuModel(cpuinfo string) string {
	var model, mhz string
	for line := range strings.Lines(cpuinfo) {
		key, value, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		switch {
		case key == "model name" && model == "":
			model = value
		case key == "cpu MHz" && mhz == "":
			mhz = value
			if strings.Contains(mhz, ".") {
				mhz = strings.TrimSuffix(strings.TrimRight(mhz, "0"), ".")
			}
		}
	}
	if model != "" && mhz != "" {
		return model + ", " + mhz + " MHz"
	}
	return model
}

func gitOutput(repo string, args ...string) string {
	out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).Output()
	if err != nil {
		return ""
	}
	return string(out)
}

// Sleep waits for d or until ctx is done, whichever comes first.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// LoadAverage is the machine's 1, 5 and 15 minute load averages (/proc/loadavg), as text.
func LoadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
