//go:build torch

package torchtest

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/trainyard/trainyard/render"
)

// The pods' network: 10.244.0.0/24 on a bridge in a namespace of the test's own, so the addresses
// exist only inside the namespaces the test creates and nothing reaches the host's network.
const (
	subnetPrefix = "10.244.0."
	subnetBits   = "/24"
)

// network is the namespaces of one job: a bridge namespace and one namespace per pod, named
// <prefix>-br and <prefix>-p<i>, where the prefix carries the test process's PID so a later run
// can tell its own leftovers from another run's.
type network struct {
	prefix string
	pods   map[string]*podNet
	order  []string
	procs  []*process
}

type podNet struct {
	netns string
	ip    string
	pod   *corev1.Pod
}

func newNetwork(t *testing.T, prefix string) *network {
	n := &network{prefix: prefix, pods: map[string]*podNet{}}
	t.Cleanup(func() { n.remove(t) })
	n.ip(t, "netns", "add", n.bridgeNS())
	n.ip(t, "-n", n.bridgeNS(), "link", "add", "br0", "type", "bridge")
	n.ip(t, "-n", n.bridgeNS(), "link", "set", "br0", "up")
	return n
}

func (n *network) bridgeNS() string { return n.prefix + "-br" }

// addPod gives the pod a namespace with loopback and eth0, a veth whose peer is on the bridge.
func (n *network) addPod(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	i := len(n.order)
	p := &podNet{netns: fmt.Sprintf("%s-p%d", n.prefix, i), ip: subnetPrefix + strconv.Itoa(i+2), pod: pod}
	n.pods[pod.Name] = p
	n.order = append(n.order, pod.Name)
	veth := "v" + strconv.Itoa(i)
	n.ip(t, "netns", "add", p.netns)
	n.ip(t, "-n", n.bridgeNS(), "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", p.netns)
	n.ip(t, "-n", n.bridgeNS(), "link", "set", veth, "master", "br0")
	n.ip(t, "-n", n.bridgeNS(), "link", "set", veth, "up")
	n.ip(t, "-n", p.netns, "addr", "add", p.ip+subnetBits, "dev", "eth0")
	n.ip(t, "-n", p.netns, "link", "set", "eth0", "up")
	n.ip(t, "-n", p.netns, "link", "set", "lo", "up")
}

// writeResolution writes each pod's /etc/hosts and /etc/resolv.conf where `ip netns exec`
// mounts them (/etc/netns/<netns>/). The hosts file is the kubelet's for the pod (its own line
// first, so its canonical name is what a real pod's is), followed by the records cluster DNS
// serves for the job's Services, under every name the pod's search path reaches them by: a
// hosts file is not searched, so each suffix the resolver would append is spelled out.
func (n *network) writeResolution(t *testing.T, out *render.Output) {
	t.Helper()
	records := n.dnsRecords(out)
	for _, name := range n.order {
		p := n.pods[name]
		ns := p.pod.Namespace
		var b strings.Builder
		b.WriteString("# Kubernetes-managed hosts file (as the kubelet writes it).\n")
		b.WriteString("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n")
		b.WriteString("fe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n")
		b.WriteString(kubeletHostsLine(p))
		b.WriteString("# Cluster DNS, as the search path below reaches it.\n")
		for _, fqdn := range slices.Sorted(maps.Keys(records)) {
			fmt.Fprintf(&b, "%s\t%s\n", records[fqdn], strings.Join(searchNames(fqdn, ns), " "))
		}
		resolv := fmt.Sprintf("search %[1]s.svc.%[2]s svc.%[2]s %[2]s\nnameserver 127.0.0.1\noptions ndots:5\n", ns, render.DefaultClusterDomain)
		dir := filepath.Join("/etc/netns", p.netns)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "hosts"), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "resolv.conf"), []byte(resolv), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// kubeletHostsLine is the pod's own line: with a subdomain, hostname.subdomain.<ns>.svc.<domain>
// then the hostname; without one, the hostname alone.
func kubeletHostsLine(p *podNet) string {
	host := p.pod.Spec.Hostname
	if host == "" {
		host = p.pod.Name
	}
	if sub := p.pod.Spec.Subdomain; sub != "" {
		return fmt.Sprintf("%s\t%s.%s.%s.svc.%s\t%s\n", p.ip, host, sub, p.pod.Namespace, render.DefaultClusterDomain, host)
	}
	return fmt.Sprintf("%s\t%s\n", p.ip, host)
}

// dnsRecords are the A records cluster DNS serves for the job, by FQDN: for a headless Service,
// <hostname>.<service>.<ns>.svc.<domain> of each selected pod whose subdomain is the Service, and
// <service>.<ns>.svc.<domain> with the addresses of the pods it selects (one, for Kubeflow's
// per-replica Services).
func (n *network) dnsRecords(out *render.Output) map[string]string {
	services := out.ReplicaServices.All()
	if out.Service != nil {
		services = append(services, out.Service)
	}
	records := map[string]string{}
	for _, svc := range services {
		sel := labels.SelectorFromSet(svc.Spec.Selector)
		var selected []*podNet
		for _, name := range n.order {
			if p := n.pods[name]; sel.Matches(labels.Set(p.pod.Labels)) {
				selected = append(selected, p)
			}
		}
		base := svc.Name + "." + svc.Namespace + ".svc." + render.DefaultClusterDomain
		if len(selected) == 1 {
			records[base] = selected[0].ip
		}
		for _, p := range selected {
			if p.pod.Spec.Subdomain == svc.Name && p.pod.Spec.Hostname != "" {
				records[p.pod.Spec.Hostname+"."+base] = p.ip
			}
		}
	}
	return records
}

// searchNames is fqdn under each name that the resolver's search path (<ns>.svc.<domain>,
// svc.<domain>, <domain>) completes to it, the fqdn itself first.
func searchNames(fqdn, ns string) []string {
	names := []string{fqdn}
	for _, suffix := range []string{"." + render.DefaultClusterDomain, ".svc." + render.DefaultClusterDomain, "." + ns + ".svc." + render.DefaultClusterDomain} {
		if short, ok := strings.CutSuffix(fqdn, suffix); ok && short != "" {
			names = append(names, short)
		}
	}
	return names
}

// start runs the pod's training container command with exactly its environment (plus PATH, and
// PYTHONPATH for the test's sitecustomize), in the pod's namespace under its hostname, under the
// runtime's torch, in a process group of its own so that torchrun's workers are stopped with it.
func (n *network) start(t *testing.T, pod *corev1.Pod, rt runtime, workdir string) *process {
	t.Helper()
	p := n.pods[pod.Name]
	c := trainingContainer(t, pod)
	argv := append(slices.Clone(c.Command), c.Args...)
	if len(c.Command) == 0 {
		t.Fatalf("pod %s: the container has no command (the image's entrypoint is not modelled)", pod.Name)
	}
	env := []string{"PATH=/usr/bin:/bin", "PYTHONPATH=" + rt.workdir(workdir), "HOME=" + rt.workdir(workdir)}
	env = append(env, rt.env...)
	for _, e := range c.Env {
		if e.ValueFrom != nil {
			t.Fatalf("pod %s: env %s comes from %v, which the test cannot resolve", pod.Name, e.Name, e.ValueFrom)
		}
		env = append(env, e.Name+"="+e.Value)
	}
	host := pod.Spec.Hostname
	if host == "" {
		host = pod.Name
	}
	args := append([]string{"netns", "exec", p.netns, "unshare", "--uts", "--", "/bin/sh", "-c", `hostname "$0" && exec "$@"`, host}, rt.wrap(workdir, argv)...)
	log := filepath.Join(t.TempDir(), pod.Name+".log")
	f, err := os.Create(log)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("ip", args...)
	cmd.Dir = workdir
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	started := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	proc := &process{pod: pod.Name, cmd: cmd, log: log, done: make(chan struct{}), started: started}
	n.procs = append(n.procs, proc)
	go func() {
		proc.err = cmd.Wait()
		proc.finished = time.Now()
		f.Close()
		close(proc.done)
	}()
	return proc
}

// remove stops the job's processes (their process groups, by the PIDs the test started, and
// whatever else runs in the pods' namespaces) and deletes its namespaces and their /etc/netns
// files, also after a failure.
func (n *network) remove(t *testing.T) {
	for _, p := range n.procs {
		select {
		case <-p.done:
			// Note: once the group's leader has been reaped its PID may be reused, so a group is
			// only signalled while the test still holds its leader.
		default:
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			<-p.done
		}
	}
	for _, name := range n.order {
		n.killPod(t, name)
	}
	for _, name := range n.order {
		deleteNamespace(t, n.pods[name].netns)
	}
	deleteNamespace(t, n.bridgeNS())
}

// killPod ends every process in the pod's network namespace with SIGKILL, as a container's end
// takes all its processes: torch 2.x starts torchrun's workers in sessions of their own, so the
// agent's process group does not hold them. Every such process descends from one the test started.
func (n *network) killPod(t *testing.T, name string) {
	out, err := exec.Command("ip", "netns", "pids", n.pods[name].netns).Output()
	if err != nil {
		t.Errorf("ip netns pids %s: %v", n.pods[name].netns, err)
		return
	}
	for _, field := range strings.Fields(string(out)) {
		if pid, err := strconv.Atoi(field); err == nil {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

func deleteNamespace(t *testing.T, name string) {
	if out, err := exec.Command("ip", "netns", "delete", name).CombinedOutput(); err != nil && !strings.Contains(string(out), "No such file") {
		t.Errorf("ip netns delete %s: %v: %s", name, err, out)
	}
	if err := os.RemoveAll(filepath.Join("/etc/netns", name)); err != nil {
		t.Error(err)
	}
}

// removeStaleNamespaces deletes the namespaces an earlier run of this test left when it was
// killed: those named trainyard-torch-<pid>-... whose PID is no longer running.
func removeStaleNamespaces(t *testing.T) {
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		t.Fatalf("ip netns list: %v", err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		name, _, _ := strings.Cut(strings.TrimSpace(line), " ")
		rest, ok := strings.CutPrefix(name, "trainyard-torch-")
		if !ok {
			continue
		}
		pidText, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid == os.Getpid() {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			t.Logf("removing %s, left by an earlier run (pid %d)", name, pid)
			deleteNamespace(t, name)
		}
	}
}

func (n *network) ip(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}
