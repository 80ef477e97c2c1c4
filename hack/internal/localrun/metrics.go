package localrun

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"
)

// SumSamples adds up the samples of the metric name, in the Prometheus text format, whose labels
// include every pair of match (e.g. rest_client_requests_total with code="429", over every host
// and method).
func SumSamples(r io.Reader, name string, match map[string]string) (float64, error) {
	sum, _, err := sumSamples(r, name, match)
	return sum, err
}

// sumSamples is SumSamples, and whether any sample matched.
func sumSamples(r io.Reader, name string, match map[string]string) (sum float64, found bool, _ error) {
	s := bufio.NewScanner(r)
	s.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for s.Scan() {
		line := s.Text()
		rest, ok := strings.CutPrefix(line, name)
		if !ok || rest == "" || (rest[0] != '{' && rest[0] != ' ') {
			continue // another metric whose name starts with name
		}
		labels := ""
		if rest[0] == '{' {
			end := strings.LastIndexByte(rest, '}')
			if end < 0 {
				continue
			}
			labels, rest = rest[1:end], rest[end+1:]
		}
		if !labelsMatch(labels, match) {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			return 0, false, fmt.Errorf("%q: %w", line, err)
		}
		sum += v
		found = true
	}
	return sum, found, s.Err()
}

// labelsMatch: the label set (`a="x",b="y"`) has every pair of match. Label values with commas or
// escaped quotes are not expected among the metrics read here.
func labelsMatch(labels string, match map[string]string) bool {
	n := 0
	for _, pair := range strings.Split(labels, ",") {
		k, v, ok := strings.Cut(pair, "=")
		if !ok {
			continue
		}
		if want, ok := match[strings.TrimSpace(k)]; ok && strings.Trim(v, `"`) == want {
			n++
		}
	}
	return n == len(match)
}

// MetricSum reads the operator's metrics endpoint and sums the samples of name matching match.
func (op *Operator) MetricSum(ctx context.Context, name string, match map[string]string) (float64, error) {
	text, err := op.metrics(ctx)
	if err != nil {
		return 0, err
	}
	return SumSamples(bytes.NewReader(text), name, match)
}

// metrics reads the operator's metrics endpoint.
func (op *Operator) metrics(ctx context.Context) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	body, err := op.get(ctx, op.MetricsAddr, "/metrics")
	if err != nil {
		return nil, err
	}
	defer body.Close()
	return io.ReadAll(body)
}

// MetricValues reads the operator's metrics endpoint once and returns, by name, the sum of each
// name's samples; a name the operator does not serve is left out.
func (op *Operator) MetricValues(ctx context.Context, names ...string) (map[string]float64, error) {
	text, err := op.metrics(ctx)
	if err != nil {
		return nil, err
	}
	values := map[string]float64{}
	for _, name := range names {
		sum, found, err := sumSamples(bytes.NewReader(text), name, nil)
		if err != nil {
			return nil, err
		}
		if found {
			values[name] = sum
		}
	}
	return values, nil
}

// Metric reads one unlabelled sample (e.g. go_goroutines) from the operator's metrics endpoint.
func (op *Operator) Metric(ctx context.Context, name string) (float64, error) {
	return op.MetricSum(ctx, name, nil)
}

// get GETs path from one of the operator's local endpoints (metrics or pprof); a status other
// than 200 is an error. The caller closes the body.
func (op *Operator) get(ctx context.Context, addr, path string) (io.ReadCloser, error) {
	if addr == "" {
		return nil, fmt.Errorf("GET %s: the operator has no such endpoint", path)
	}
	url := "http://" + addr + path
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	// Uncompressed: compressing the metrics page cost the operator a third more CPU (6 ms a read
	// against 4.4, measured), which the bench's CPU figures include; the bytes go over loopback.
	req.Header.Set("Accept-Encoding", "identity")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		resp.Body.Close()
		return nil, fmt.Errorf("GET %s: %s: %s", url, resp.Status, msg)
	}
	return resp.Body, nil
}

// APIServerMetricSum reads the API server's /metrics with cfg (an identity allowed to) and sums
// the samples of name matching match: e.g. apiserver_flowcontrol_rejected_requests_total of one
// priority level.
func APIServerMetricSum(ctx context.Context, cfg *rest.Config, name string, match map[string]string) (float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	body, err := apiServerGet(ctx, cfg, "/metrics")
	if err != nil {
		return 0, err
	}
	defer body.Close()
	return SumSamples(body, name, match)
}

// APIServerProfile writes a CPU profile of the API server over the next seconds to path, read
// from its /debug/pprof/profile (served while the server runs with --profiling, its default) with
// cfg, an identity allowed to read it (the admin).
func APIServerProfile(ctx context.Context, cfg *rest.Config, seconds int, path string) error {
	return cpuProfile(ctx, cfg, seconds, path)
}

// SchedulerProfile writes a CPU profile of the cluster's kube-scheduler over the next seconds to
// path. The scheduler serves /debug/pprof on its secure port (its --secure-port, read from its
// command line) on loopback, to anyone: hack/cluster.sh makes it an always-allowed path, since the
// scheduler has no delegated authorization there. Its serving certificate is its own self-signed
// one, not verified.
func (c Cluster) SchedulerProfile(ctx context.Context, cfg *rest.Config, seconds int, path string) error {
	pids, err := c.ControlPlanePIDs()
	if err != nil {
		return err
	}
	pid, ok := pids["kube-scheduler"]
	if !ok {
		return fmt.Errorf("no kube-scheduler among the cluster's processes")
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return err
	}
	port := flagValue(strings.Split(string(cmdline), "\x00"), "--secure-port")
	if port == "" {
		return fmt.Errorf("the kube-scheduler (pid %d) has no --secure-port", pid)
	}
	sched := rest.CopyConfig(cfg)
	sched.Host = "https://127.0.0.1:" + port
	sched.TLSClientConfig.Insecure = true
	sched.TLSClientConfig.CAData, sched.TLSClientConfig.CAFile = nil, ""
	return cpuProfile(ctx, sched, seconds, path)
}

// flagValue is the value of --name=value among args; "" when it is not there.
func flagValue(args []string, name string) string {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v
		}
	}
	return ""
}

// cpuProfile writes the CPU profile that cfg's server takes over the next seconds to path.
func cpuProfile(ctx context.Context, cfg *rest.Config, seconds int, path string) error {
	body, err := apiServerGet(ctx, cfg, fmt.Sprintf("/debug/pprof/profile?seconds=%d", seconds))
	if err != nil {
		return err
	}
	defer body.Close()
	return writeFile(path, body)
}

// apiServerGet GETs path from cfg's server (the API server, or another control plane process)
// with cfg's credentials; a status other than 200 is an error. The caller closes the body.
func apiServerGet(ctx context.Context, cfg *rest.Config, path string) (io.ReadCloser, error) {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, cfg.Host+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		resp.Body.Close()
		return nil, fmt.Errorf("GET %s: %s: %s", path, resp.Status, msg)
	}
	return resp.Body, nil
}

// writeFile copies r into a new file at path.
func writeFile(path string, r io.Reader) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// CPUSeconds is the CPU time the operator has used so far, user and system
// (/proc/<pid>/stat utime + stime).
func (op *Operator) CPUSeconds() (float64, error) { return ProcessCPUSeconds(op.PID) }

// ProcessCPUSeconds is the CPU time process pid has used so far, user and system
// (/proc/<pid>/stat utime + stime).
func ProcessCPUSeconds(pid int) (float64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces: the fields that follow start after its ')'.
	i := strings.LastIndexByte(string(data), ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no ')'", pid)
	}
	fields := strings.Fields(string(data[i+1:]))
	if len(fields) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields after the name", pid, len(fields))
	}
	// fields[0] is field 3 (state): utime is field 14, stime field 15.
	utime, err1 := strconv.ParseUint(fields[11], 10, 64)
	stime, err2 := strconv.ParseUint(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: utime %q, stime %q", pid, fields[11], fields[12])
	}
	return float64(utime+stime) / clockTicks(), nil
}

var clockTicksOnce = sync.OnceValue(func() float64 {
	out, err := exec.Command("getconf", "CLK_TCK").Output()
	if err == nil {
		if v, err := strconv.ParseFloat(strings.TrimSpace(string(out)), 64); err == nil && v > 0 {
			return v
		}
	}
	return 100 // USER_HZ on every Linux this runs on
})

// clockTicks is the unit of /proc's CPU times, per second.
func clockTicks() float64 { return clockTicksOnce() }
