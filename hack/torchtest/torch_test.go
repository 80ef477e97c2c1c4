//go:build torch

// Package torchtest runs the pods Trainyard renders as real PyTorch processes: for each job shape
// in testdata/, every pod's training container command starts with exactly the pod's environment,
// in a network namespace of its own, under the pod's hostname, resolving names as cluster DNS and
// the kubelet's hosts file would let it. The job's script is ours (python/train.py): it joins the
// process group, all-reduces its rank and prints the result, which the test checks against what
// torch defines RANK, WORLD_SIZE and LOCAL_RANK to be. Every shape runs under each runtime: Debian
// 12's torch 1.13 on this machine and Debian 13's torch 2.x in a root of its own (runtime_test.go).
//
// Run by `make test-torch` (root, Debian's python3-torch and iproute2, the root hack/torch.sh
// builds). Without them the test skips with one line saying what is missing, unless
// TRAINYARD_REQUIRE_TORCH=1 (set by CI), where a skip is a failure.
package torchtest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/trainyard/trainyard/render"
)

// jobTimeout bounds one job's run so that a rendezvous that never forms fails the test instead
// of hanging it; it is a safety net, not a measurement (the elastic shapes wait torchrun's
// 30 s last call on purpose).
const jobTimeout = 4 * time.Minute

// shape is one job of the table and what torch must report for it.
type shape struct {
	file string
	// procsPerPod is the number of training processes each pod starts (torchrun's
	// --nproc_per_node, else 1).
	procsPerPod int
	// torchrun: the processes are torchrun's workers, so LOCAL_RANK and GROUP_RANK are set and
	// global ranks are assigned by the rendezvous; without it each pod is one rank, its RANK the
	// one Trainyard rendered.
	torchrun bool
	// cpus: torchrun decides the processes per pod (procPerNode cpu or auto, no CUDA): the
	// machine's CPU count, os.cpu_count() in Python, which procsPerPod is set to when the case runs.
	cpus bool
	// argv, when set, is the script's arguments every process must see.
	argv []string
}

var shapes = map[string]shape{
	"PyTorchTrainingJob plain DDP, master and 2 workers":                    {file: "ptj-plain.yaml", procsPerPod: 1},
	"PyTorchTrainingJob torchrun fixed, procPerNode 2":                      {file: "ptj-torchrun.yaml", procsPerPod: 2, torchrun: true},
	"PyTorchTrainingJob torchrun elastic, min 1 max 4 expected 3":           {file: "ptj-elastic.yaml", procsPerPod: 1, torchrun: true},
	"PyTorchTrainingJob torchrun procPerNode gpu, 2 GPUs a pod":             {file: "ptj-gpu.yaml", procsPerPod: 2, torchrun: true},
	"PyTorchJob Master and Workers":                                         {file: "pj-master-workers.yaml", procsPerPod: 1},
	"PyTorchJob elasticPolicy through PET_ variables":                       {file: "pj-elastic.yaml", procsPerPod: 1, torchrun: true},
	"PyTorchJob Workers only":                                               {file: "pj-workers-only.yaml", procsPerPod: 1},
	"PyTorchTrainingJob torchrun procPerNode cpu, command python3 train.py": {file: "ptj-cpu.yaml", torchrun: true, cpus: true, argv: []string{"--fast"}},
	"PyTorchTrainingJob torchrun procPerNode auto, extraOptions":            {file: "ptj-auto.yaml", torchrun: true, cpus: true},
	"PyTorchTrainingJob torchrun, command sh -c without args":               {file: "ptj-shell.yaml", procsPerPod: 2, torchrun: true},
}

// result is what one training process printed.
type result struct {
	Hostname     string  `json:"hostname"`
	Rank         int     `json:"rank"`
	World        int     `json:"world"`
	EnvRank      *string `json:"env_rank"`
	EnvWorldSize *string `json:"env_world_size"`
	EnvLocalRank *string `json:"env_local_rank"`
	EnvGroupRank *string `json:"env_group_rank"`
	Sum          int     `json:"sum"`
	// RestartCount is torchrun's TORCHELASTIC_RESTART_COUNT: how often the agent restarted its
	// workers.
	RestartCount *string `json:"restart_count"`
	// Argv is the script's arguments.
	Argv []string `json:"argv"`
}

func TestRealPyTorchJoins(t *testing.T) {
	underEachRuntime(t, shapes, 0, runShape)
}

// underEachRuntime runs every case, in the order of their names, under each runtime; n numbers the
// cases (their network namespaces) from first on.
func underEachRuntime[C any](t *testing.T, cases map[string]C, first int, run func(t *testing.T, c C, rt runtime, workdir string, n int)) {
	rts, workdir := setUp(t)
	names := slices.Sorted(maps.Keys(cases))
	n := first
	for _, rt := range rts {
		t.Run(rt.name(), func(t *testing.T) {
			for _, name := range names {
				n++
				t.Run(name, func(t *testing.T) {
					run(t, cases[name], rt, workdir, n)
				})
			}
		})
	}
}

// setUp returns the runtimes to run under and a working directory holding the job's script, or
// skips (fails where TRAINYARD_REQUIRE_TORCH=1) when something is missing.
func setUp(t *testing.T) ([]runtime, string) {
	t.Helper()
	rts, missing := runtimes()
	if missing != "" {
		if os.Getenv("TRAINYARD_REQUIRE_TORCH") == "1" {
			t.Fatalf("the torch layer cannot run here and TRAINYARD_REQUIRE_TORCH=1: %s", missing)
		}
		t.Skipf("skipping the real-PyTorch layer: %s (make test-torch as root on Debian installs what it needs)", missing)
	}
	removeStaleNamespaces(t)
	workdir := t.TempDir()
	for _, f := range []string{"train.py", "sitecustomize.py"} {
		data, err := os.ReadFile(filepath.Join("python", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(workdir, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return rts, workdir
}

func runShape(t *testing.T, s shape, rt runtime, workdir string, n int) {
	out := renderJob(t, s.file)
	if s.cpus {
		s.procsPerPod = cpuCount(t, rt)
		if w := envOf(out.Pods[0])["WORLD_SIZE"]; w != "" {
			t.Errorf("WORLD_SIZE=%s rendered where torchrun decides the processes per pod", w)
		}
	}
	net := newNetwork(t, fmt.Sprintf("trainyard-torch-%d-%d", os.Getpid(), n))
	for _, pod := range out.Pods {
		net.addPod(t, pod)
	}
	net.writeResolution(t, out)

	start := time.Now()
	procs := make([]*process, 0, len(out.Pods))
	for _, pod := range out.Pods {
		procs = append(procs, net.start(t, pod, rt, workdir))
	}
	deadline := time.After(jobTimeout)
	for _, p := range procs {
		select {
		case <-p.done:
		case <-deadline:
			for _, p := range procs {
				t.Logf("%s output:\n%s", p.pod, p.output())
			}
			t.Fatalf("the job did not finish within %s", jobTimeout)
		}
	}
	t.Logf("every process finished %.1f s after the pods started", time.Since(start).Seconds())

	var all []result
	for i, p := range procs {
		if p.err != nil {
			t.Errorf("pod %s: %v; output:\n%s", p.pod, p.err, p.output())
			continue
		}
		got := p.results(t)
		if len(got) != s.procsPerPod {
			t.Errorf("pod %s: %d training processes reported, want %d; output:\n%s", p.pod, len(got), s.procsPerPod, p.output())
		}
		checkPod(t, s, out.Pods[i], got)
		all = append(all, got...)
	}
	if t.Failed() {
		return
	}
	world := len(out.Pods) * s.procsPerPod
	ranks := make([]int, 0, len(all))
	for _, r := range all {
		ranks = append(ranks, r.Rank)
		if r.World != world {
			t.Errorf("rank %d on %s: world size %d, want %d", r.Rank, r.Hostname, r.World, world)
		}
		if want := world * (world - 1) / 2; r.Sum != want {
			t.Errorf("rank %d on %s: all_reduce sum %d, want %d", r.Rank, r.Hostname, r.Sum, want)
		}
		if r.EnvRank == nil || *r.EnvRank != strconv.Itoa(r.Rank) {
			t.Errorf("rank %d on %s: RANK=%v, want the process group's rank", r.Rank, r.Hostname, str(r.EnvRank))
		}
		if s.argv != nil && !slices.Equal(r.Argv, s.argv) {
			t.Errorf("rank %d on %s: the script's arguments %q, want %q", r.Rank, r.Hostname, r.Argv, s.argv)
		}
		if r.EnvWorldSize == nil || *r.EnvWorldSize != strconv.Itoa(world) {
			t.Errorf("rank %d on %s: WORLD_SIZE=%v, want %d", r.Rank, r.Hostname, str(r.EnvWorldSize), world)
		}
	}
	sort.Ints(ranks)
	want := make([]int, world)
	for i := range want {
		want[i] = i
	}
	if diff := cmp.Diff(want, ranks); diff != "" {
		t.Errorf("global ranks (-want +got):\n%s", diff)
	}
	if !t.Failed() {
		t.Logf("joined: %d pods, %d processes, ranks 0-%d, all_reduce sum %d", len(out.Pods), world, world-1, world*(world-1)/2)
	}
}

// checkPod checks the processes of one pod against what torch defines: under torchrun each
// process has a LOCAL_RANK 0..n-1 and the pod's GROUP_RANK; without it the process's rank is the
// RANK Trainyard rendered and no LOCAL_RANK is set.
func checkPod(t *testing.T, s shape, pod *corev1.Pod, got []result) {
	t.Helper()
	for _, r := range got {
		if r.Hostname != pod.Spec.Hostname && r.Hostname != pod.Name {
			t.Errorf("pod %s: a process ran with hostname %q", pod.Name, r.Hostname)
		}
	}
	if !s.torchrun {
		rendered := envOf(pod)["RANK"]
		for _, r := range got {
			if strconv.Itoa(r.Rank) != rendered {
				t.Errorf("pod %s: rank %d, want the rendered RANK %s", pod.Name, r.Rank, rendered)
			}
			if r.EnvLocalRank != nil {
				t.Errorf("pod %s: LOCAL_RANK=%s without a launcher", pod.Name, *r.EnvLocalRank)
			}
		}
		return
	}
	var local []string
	group := map[string]bool{}
	for _, r := range got {
		local = append(local, str(r.EnvLocalRank))
		group[str(r.EnvGroupRank)] = true
	}
	slices.Sort(local)
	var want []string
	for i := 0; i < s.procsPerPod; i++ {
		want = append(want, strconv.Itoa(i))
	}
	if diff := cmp.Diff(want, local); diff != "" {
		t.Errorf("pod %s: LOCAL_RANK of its processes (-want +got):\n%s", pod.Name, diff)
	}
	if len(group) != 1 {
		t.Errorf("pod %s: its processes report GROUP_RANKs %v, want one", pod.Name, group)
	}
}

func str(s *string) string {
	if s == nil {
		return "<unset>"
	}
	return *s
}

// renderJob renders the job of a testdata manifest as the operator would on a new cluster: no pod
// observed yet, no gang scheduler.
func renderJob(t *testing.T, file string) *render.Output {
	t.Helper()
	out, err := render.Render(render.Input{Job: readJob(t, file), Now: time.Now()})
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	if len(out.Pods) == 0 {
		t.Fatalf("%s: no pods rendered", file)
	}
	return out
}

// readJob reads the job of a testdata manifest, with a UID as the API server would give it.
func readJob(t *testing.T, file string) render.Job {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	job, err := render.ReadJob(data)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	job.UID = "5e1f0000-0000-4000-8000-00000000000a"
	return job
}

// trainingContainer is the pod's container named pytorch, the one Trainyard configures.
func trainingContainer(t *testing.T, pod *corev1.Pod) *corev1.Container {
	t.Helper()
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == "pytorch" {
			return &pod.Spec.Containers[i]
		}
	}
	t.Fatalf("pod %s has no container named pytorch", pod.Name)
	return nil
}

// envOf is the literal environment of the pod's training container.
func envOf(pod *corev1.Pod) map[string]string {
	env := map[string]string{}
	for _, c := range pod.Spec.Containers {
		if c.Name != "pytorch" {
			continue
		}
		for _, e := range c.Env {
			env[e.Name] = e.Value
		}
	}
	return env
}

// process is one pod's training container, started as a real process.
type process struct {
	pod  string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error
	// started and finished are when the process started and ended (finished is set before done
	// closes): the container's startedAt and finishedAt the kubelet would report.
	started, finished time.Time
}

func (p *process) output() string {
	data, _ := os.ReadFile(p.log)
	return string(data)
}

// results are the TRAINYARD_RESULT lines the pod's processes printed.
func (p *process) results(t *testing.T) []result {
	t.Helper()
	var out []result
	for _, line := range p.tagged(t, "TRAINYARD_RESULT ") {
		var r result
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("pod %s: %q: %v", p.pod, line, err)
		}
		out = append(out, r)
	}
	return out
}

// tagged is what follows tag on each line of the process's output that has it.
func (p *process) tagged(t *testing.T, tag string) []string {
	t.Helper()
	f, err := os.Open(p.log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		// Note: a tagged line may follow other output on its line (a worker's line without its end).
		if _, rest, ok := strings.Cut(sc.Text(), tag); ok {
			out = append(out, rest)
		}
	}
	return out
}

// cpuCount is os.cpu_count() in the runtime: what torchrun's --nproc_per_node=cpu (and auto, without
// CUDA) starts a pod.
func cpuCount(t *testing.T, rt runtime) int {
	t.Helper()
	cmd := exec.Command("unshare", append([]string{"--mount", "--propagation", "private", "--"}, rt.wrap(os.TempDir(), []string{python, "-c", "import os; print(os.cpu_count())"})...)...)
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("os.cpu_count() in the runtime: %v: %s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	n, err := strconv.Atoi(lines[len(lines)-1])
	if err != nil {
		t.Fatalf("os.cpu_count() in the runtime: %q", out)
	}
	return n
}
