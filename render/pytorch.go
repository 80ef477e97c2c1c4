package render

import (
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// PyTorch environment variables, set in the training container of every pod.
const (
	EnvMasterAddr       = "MASTER_ADDR"
	EnvMasterPort       = "MASTER_PORT"
	EnvWorldSize        = "WORLD_SIZE"
	EnvRank             = "RANK"
	EnvPythonUnbuffered = "PYTHONUNBUFFERED"
)

// pytorchEnv is the torch.distributed contract: every pod finds the master at MASTER_ADDR and
// MASTER_PORT, knows WORLD_SIZE and its own global RANK.
type pytorchEnv struct {
	masterAddr string
	masterPort string
	// worldSize counts pods, or processes under torchrun; empty when torchrun resolves the
	// process count itself (procPerNode cpu or auto).
	worldSize string
	// firstRank is the global rank of replica 0 of each type: the master is rank 0, then the
	// other replicas in spec order, by index.
	firstRank map[string]int32
}

func newPyTorchEnv(j *Job) *pytorchEnv {
	m := masterTypeIndex(j.Replicas)
	master := &j.Replicas[m]
	e := &pytorchEnv{
		masterAddr: PodName(j.Name, master.Type, 0) + "." + j.Name,
		masterPort: strconv.Itoa(int(masterPort(j))),
		firstRank:  map[string]int32{},
	}
	order := append([]int{m}, others(len(j.Replicas), m)...)
	var rank, world int32
	known := true
	for _, i := range order {
		t := &j.Replicas[i]
		e.firstRank[t.Type] = rank
		rank += t.Replicas
		n, ok := j.procsPerPod(t)
		known = known && ok
		world += t.Replicas * n
	}
	if known {
		e.worldSize = strconv.Itoa(int(world))
	}
	return e
}

func (e *pytorchEnv) names() []string {
	return []string{EnvMasterAddr, EnvMasterPort, EnvWorldSize, EnvRank, EnvPythonUnbuffered}
}

func (e *pytorchEnv) vars(t *ReplicaType, index int32) []corev1.EnvVar {
	vars := []corev1.EnvVar{
		{Name: EnvMasterAddr, Value: e.masterAddr},
		{Name: EnvMasterPort, Value: e.masterPort},
	}
	if e.worldSize != "" {
		vars = append(vars, corev1.EnvVar{Name: EnvWorldSize, Value: e.worldSize})
	}
	return append(vars,
		corev1.EnvVar{Name: EnvRank, Value: strconv.Itoa(int(e.firstRank[t.Type] + index))},
		corev1.EnvVar{Name: EnvPythonUnbuffered, Value: "1"},
	)
}

// masterPort is the master's training container port named pytorch, else 29500.
func masterPort(j *Job) int32 {
	return j.portOf(&j.Replicas[masterTypeIndex(j.Replicas)])
}

// procsPerPod is the number of training processes in one pod of type t: 1 without torchrun,
// else procPerNode, with gpu resolved to the training container's nvidia.com/gpu limit. It
// reports false for cpu and auto, which torchrun resolves on the node.
func (j *Job) procsPerPod(t *ReplicaType) (int32, bool) {
	if j.Torchrun == nil {
		return 1, true
	}
	switch p := j.Torchrun.ProcPerNode; p {
	case "":
		return 1, true
	case "gpu":
		return gpuLimit(j.templateContainer(t)), true
	case "cpu", "auto":
		return 0, false
	default:
		n, err := strconv.Atoi(p)
		return int32(n), err == nil
	}
}

// gpuLimit is a container's nvidia.com/gpu limit, else its request, else 0.
func gpuLimit(c *corev1.Container) int32 {
	if c == nil {
		return 0
	}
	q, ok := c.Resources.Limits[GPUResource]
	if !ok {
		q = c.Resources.Requests[GPUResource]
	}
	return int32(q.Value())
}

// torchrunCommand makes the training container run
// `torchrun <flags> <extraOptions...> <args...>`: its command is replaced and its args are the
// script and its arguments.
func (r *renderer) torchrunCommand(t *ReplicaType, c *corev1.Container) {
	tr := r.job.Torchrun
	script := c.Args
	noPython := false
	switch {
	case len(c.Command) == 0:
	case len(script) == 0 || strings.HasPrefix(path.Base(c.Command[0]), "python") && len(c.Command) > 1:
		// Note: a template that puts the script in command (python train.py, its arguments in
		// command or args) is common; torchrun runs the interpreter itself, so a leading python
		// is dropped and the rest kept, before args.
		script = c.Command
		if strings.HasPrefix(path.Base(script[0]), "python") {
			script = script[1:]
		} else {
			// Note: a command that is no interpreter (sh -c ..., a binary) is run as it is
			// (--no_python): torchrun would otherwise start `python <command>`, which fails
			// ("SyntaxError ... in file /bin/sh", torch 1.13).
			noPython = true
		}
		script = append(slices.Clip(script), c.Args...)
		as := "as the script (put the script and its arguments in args)"
		if noPython {
			as = "to run as it is, without python (--no_python)"
		}
		r.warn(WarnTorchrunCommand, fmt.Sprintf("replica type %s: torchrun replaces the container's command; %q is passed to torchrun %s", t.Type, strings.Join(script, " "), as))
	default:
		// A command that is no interpreter (an entrypoint) is not a script torchrun could run.
		r.warn(WarnTorchrunCommand, fmt.Sprintf("replica type %s: torchrun replaces the container's command; %q is dropped and args (%q) are torchrun's script and its arguments", t.Type, strings.Join(c.Command, " "), strings.Join(c.Args, " ")))
	}
	nnodes := strconv.Itoa(int(r.job.PodCount()))
	if e := r.job.Elastic; e != nil {
		nnodes = fmt.Sprintf("%d:%d", e.Min, e.Max)
	}
	nproc := tr.ProcPerNode
	if n, ok := r.job.procsPerPod(t); ok {
		nproc = strconv.Itoa(int(n))
	}
	backend := tr.RdzvBackend
	if backend == "" {
		backend = DefaultRdzvBackend
	}
	env := r.env.(*pytorchEnv)
	// Note: torchrun before torch 2.0 knows only the underscore spellings of these flags; 2.x
	// still accepts them beside the dashed ones, so underscores start every release.
	args := []string{
		"--nnodes=" + nnodes,
		"--nproc_per_node=" + nproc,
		"--rdzv_backend=" + backend,
		"--rdzv_endpoint=" + r.rendezvousHost() + ":" + env.masterPort,
		"--rdzv_id=" + string(r.job.UID),
	}
	if tr.MaxRestarts != nil {
		args = append(args, "--max_restarts="+strconv.Itoa(int(*tr.MaxRestarts)))
	}
	if noPython {
		args = append(args, "--no_python")
	}
	args = append(args, tr.ExtraOptions...)
	c.Command = []string{"torchrun"}
	c.Args = append(args, script...)
}

// rendezvousHost is the host of torchrun's rendezvous endpoint: the master pod's fully
// qualified name, J-master-0.J.<namespace>.svc.<cluster domain>.
//
// Note: torchrun's c10d backend hosts the rendezvous store only in the agent whose machine
// "matches" the endpoint host (_matches_machine_hostname in
// torch/distributed/elastic/rendezvous/utils.py); every other agent dials it. torch 1.13 accepts
// the host when it equals gethostname() or the canonical name getaddrinfo(gethostname(),
// AI_CANONNAME) gives; torch 2.x also when the host's addresses include the machine's own. In the
// master pod gethostname() is J-master-0 (spec.hostname), which other pods cannot resolve (the
// headless Service's records are under the subdomain), and the canonical name is the first name
// on the kubelet's hosts-file line for the pod: J-master-0.J.<namespace>.svc.<domain>. The FQDN
// is therefore the one name every release matches in the master and every pod resolves through
// cluster DNS. The short J-master-0.J resolves too but matches only on 2.x, by address, so
// on 1.x no agent would host the store and every agent times out. make test-torch runs both
// releases (Debian's 1.13 and 2.6); changed to the short name, 2.6 still joins.
func (r *renderer) rendezvousHost() string {
	domain := r.in.ClusterDomain
	if domain == "" {
		domain = DefaultClusterDomain
	}
	m := &r.job.Replicas[masterTypeIndex(r.job.Replicas)]
	return PodName(r.job.Name, m.Type, 0) + "." + r.job.Name + "." + r.job.Namespace + ".svc." + domain
}

// others lists 0..n-1 without skip.
func others(n, skip int) []int {
	out := make([]int, 0, n)
	for i := 0; i < n; i++ {
		if i != skip {
			out = append(out, i)
		}
	}
	return out
}
