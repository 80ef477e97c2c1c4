package render

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
)

// RetryableExitCodes are the exit codes the ExitCode restart policy restarts on: a process
// ended by a signal from outside (SIGINT 130, SIGKILL 137, SIGUSR1 138, SIGTERM 143), as by an
// out-of-memory kill or a node shutdown, rather than by its own error.
var RetryableExitCodes = map[int32]bool{130: true, 137: true, 138: true, 143: true}

// verdict is what becomes of a terminated replica.
type verdict int

const (
	keep    verdict = iota // leave it as it is
	restart                // delete it and create it again
	fail                   // it failed for good: the job fails
)

// restartVerdict applies a replica's restart policy to how its pod ended.
//
// Never: never restarts. OnFailure: restarts on a non-zero exit or a disruption. Always: restarts
// on any end (the job's own success is decided before this). ExitCode: restarts on a retryable
// exit code or a disruption; any other non-zero code is permanent.
func restartVerdict(policy batch.RestartPolicy, p *observedPod) verdict {
	// Note: a pod that exited 0 finished its work, even if a disruption was under way.
	if p.succeeded {
		if policy == batch.RestartPolicyAlways {
			return restart
		}
		return keep
	}
	switch policy {
	case batch.RestartPolicyOnFailure, batch.RestartPolicyAlways:
		return restart
	case batch.RestartPolicyExitCode:
		if p.disrupted || (p.exitCode != nil && RetryableExitCodes[*p.exitCode]) {
			return restart
		}
	}
	return fail
}

// launcherRestarts is how often torchrun's agents may restart their workers: torchrunConfig's
// maxRestarts, or a Kubeflow elasticPolicy's; 0 without torchrun or when unset (torchrun's default).
// A --max_restarts (or, torch 2.x, --max-restarts) in torchrunConfig.extraOptions is what torchrun
// uses: the options follow the rendered flags, and torchrun's parser keeps the last value given.
func (j *Job) launcherRestarts() int32 {
	switch {
	case j.Torchrun != nil && extraMaxRestarts(j.Torchrun.ExtraOptions) != nil:
		return *extraMaxRestarts(j.Torchrun.ExtraOptions)
	case j.Torchrun != nil && j.Torchrun.MaxRestarts != nil:
		return *j.Torchrun.MaxRestarts
	case j.Kubeflow != nil && j.Kubeflow.Elastic != nil && j.Kubeflow.Elastic.MaxRestarts != nil:
		return *j.Kubeflow.Elastic.MaxRestarts
	}
	return 0
}

// elastic reports whether torchrun's agents run with --nnodes=min:max (elastic, or a Kubeflow
// elasticPolicy), so that pods may join or leave their rendezvous while they run.
func (j *Job) elastic() bool {
	return j.Elastic != nil || j.Kubeflow != nil && j.Kubeflow.Elastic != nil
}

// extraMaxRestarts is the last --max_restarts value of torchrun's extra options, written as
// --max_restarts=N or --max_restarts N (or dashed), or nil when they have none; a value that is not
// a number is left to torchrun, which refuses it.
func extraMaxRestarts(opts []string) *int32 {
	var out *int32
	for i, o := range opts {
		name, value, ok := strings.Cut(o, "=")
		if name != "--max_restarts" && name != "--max-restarts" {
			continue
		}
		if !ok {
			if i+1 >= len(opts) {
				continue
			}
			value = opts[i+1]
		}
		if n, err := strconv.ParseInt(value, 10, 32); err == nil {
			out = ptr(int32(n))
		}
	}
	return out
}

// EnvTorchSharedStoreOff is torch's switch (2.4 and later; earlier releases ignore it) that turns
// off the TCPStore torchrun's c10d rendezvous shares with the training processes.
const EnvTorchSharedStoreOff = "TORCH_DISABLE_SHARE_RDZV_TCP_STORE"

// rejoinableRendezvous lets a replaced replica's torchrun agent join its survivors: where the agents
// have restarts to spare (the replica alone is restarted), and in every elastic job (a pod added by
// a scale-up joins the running agents' next round, which needs no restart to spare), the training
// container gets TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1 unless its template sets the variable.
//
// Note: with the shared store (torch 2.4 and later by default), an agent learns the store's
// address from keys that rank 0 writes only in its own first rendezvous round. A replacement joins
// a later round, waits for those keys until its timeout, and the survivors wait for it in turn:
// make test-torch saw the job fail on torch 2.6 and 2.14 after such a restart, and recover 26 s
// after the kill with the shared store off. A scaled-up elastic job is the same case: the new pod's
// agent joins a later round, and on torch 2.6 without the variable the training never ran in the
// larger world (make test-torch, TestAnElasticJobScalesWhileItTrains).
func (r *renderer) rejoinableRendezvous(c *corev1.Container) {
	if r.job.Framework != PyTorch || r.job.launcherRestarts() == 0 && !r.job.elastic() {
		return
	}
	for _, e := range c.Env {
		if e.Name == EnvTorchSharedStoreOff {
			return
		}
	}
	c.Env = append(c.Env, corev1.EnvVar{Name: EnvTorchSharedStoreOff, Value: "1"})
}

// restartScopeOf is what is restarted when the replica in slot s must be: the scope the user
// chose, else what can recover.
//
//   - PyTorch without torchrun (a Kubeflow PyTorchJob without elasticPolicy counts as such):
//     the gang. Static torch.distributed forms its process group once; a replaced rank cannot
//     join it, and the survivors block in a collective until a timeout, then fail one by one.
//   - PyTorch with torchrun and restarts to spare (--max_restarts, PET_MAX_RESTARTS, above 0): the
//     replica. The survivors' workers fail on the lost peer, their agents restart them and
//     re-rendezvous with the new one. Not the replica whose agent hosts the c10d rendezvous
//     store (rendezvousStoreHost): the survivors' agents lose the store, which torch does not
//     fail over, and end one after another, so it takes the gang. (Torch's maintainers say a
//     c10d job has no failover of its store host; an agent that loses the store raises
//     RendezvousConnectionError from its monitoring loop. make test-torch kills a worker, not
//     the master: this case is not played with real torch yet.)
//   - PyTorch with torchrun and no restarts (--max_restarts unset or 0, torchrun's default): the
//     gang. The survivors' agents may not restart their failed workers, so they end too; replaced
//     one by one, a single failure would cost a restart per pod (make test-torch plays both).
//   - TensorFlow with parameter servers: a worker or an evaluator alone; a failed parameter server
//     or chief (or master) takes the gang, since every worker holds sessions to it.
//   - TensorFlow without parameter servers (collective strategies): the gang, as for PyTorch; an
//     evaluator, which is never part of the collective group, alone.
func (j *Job) restartScopeOf(s slot) batch.RestartScope {
	if j.RestartScope != "" {
		return j.RestartScope
	}
	if j.Framework == PyTorch {
		if host, ok := j.rendezvousStoreHost(); j.launcherRestarts() > 0 && (!ok || s != host) {
			return batch.RestartScopeReplica
		}
		return batch.RestartScopeGang
	}
	switch s.typ {
	case "evaluator":
		return batch.RestartScopeReplica
	case "worker":
		if j.hasParameterServers() {
			return batch.RestartScopeReplica
		}
	}
	return batch.RestartScopeGang
}

// rendezvousStoreHost is the replica whose torchrun agent hosts the rendezvous store: with the
// c10d backend (the default), the one the rendezvous endpoint names (the master; a Kubeflow
// elastic PyTorchJob's Worker-0, else its Master, as Kubeflow's operator sets PET_RDZV_ENDPOINT).
// ok is false when no replica of the job does: no torchrun, another backend (etcd), or a Kubeflow
// rdzvHost the user chose.
func (j *Job) rendezvousStoreHost() (host slot, ok bool) {
	backend, master := "", masterTypeIndex(j.Replicas)
	switch {
	case j.Torchrun != nil:
		backend = j.Torchrun.RdzvBackend
	case j.Kubeflow != nil && j.Kubeflow.Elastic != nil:
		if j.Kubeflow.Elastic.RdzvHost != "" {
			return slot{}, false
		}
		backend = j.Kubeflow.Elastic.RdzvBackend
		if hasType(j, "worker") {
			return slot{"worker", 0}, cmp.Or(backend, DefaultRdzvBackend) == DefaultRdzvBackend
		}
	default:
		return slot{}, false
	}
	if master < 0 || cmp.Or(backend, DefaultRdzvBackend) != DefaultRdzvBackend {
		return slot{}, false
	}
	return slot{j.Replicas[master].Type, 0}, true
}

func (j *Job) hasParameterServers() bool {
	for _, t := range j.Replicas {
		if t.Type == "ps" && t.Replicas > 0 {
			return true
		}
	}
	return false
}

// ran reports whether the pod's containers may have started: it was seen Running, or ended
// after the scheduler bound it. A pod still Pending has joined no peer, nor has one that ended
// while the scheduler said it could not place it (failed by Kueue while unschedulable on the node
// it was given, say).
func (p *observedPod) ran() bool {
	if p.pod.Status.Phase == corev1.PodPending || p.pod.Status.Phase == "" {
		return false
	}
	return !slices.ContainsFunc(p.pod.Status.Conditions, func(c corev1.PodCondition) bool {
		return c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse
	})
}

// current reports whether p is a pod of the job as it now runs: of the current run mode and
// created under the current gang (not one a gang restart is deleting). Only such a pod's end
// decides anything.
func (r *renderer) current(p *observedPod) bool {
	return p != nil && !r.otherRunMode(p) && p.gangRestarts >= r.job.Status.GangRestarts
}

// deleteEarlierGangs deletes the pods created before the last gang restart (a restart the
// controller stopped in the middle of), and holds every creation until they are all gone: the new
// gang starts together, never beside a survivor of the old one.
func (r *renderer) deleteEarlierGangs() {
	for _, p := range r.allObserved() {
		if p.gangRestarts < r.job.Status.GangRestarts {
			r.delete(p, DeleteRestart)
			r.holdCreates = true
		}
	}
}

// observeDeletions reads Input.DeletedPods: a pod still observed is marked as deleted by someone
// else; one already gone from a slot that is still empty ended as a disruption, to be restarted.
// Gone pods of an earlier gang or run mode, of slots no longer wanted, or that had succeeded are
// no loss.
func (r *renderer) observeDeletions() {
	if len(r.in.DeletedPods) == 0 {
		return
	}
	byUID := make(map[string]*observedPod, len(r.observed)+len(r.others))
	for _, p := range r.allObserved() {
		byUID[string(p.pod.UID)] = p
	}
	for i := range r.in.DeletedPods {
		d := &r.in.DeletedPods[i]
		if p := byUID[string(d.UID)]; p != nil && d.UID != "" {
			p.deletedByOther = true
			if p.cause == "" {
				p.cause = causeDeleted
			}
			continue
		}
		o := classify(r.job, d)
		if !r.job.fills(o) || r.observed[o.slot] != nil || r.vanished[o.slot] != nil || !r.current(o) || o.succeeded {
			continue
		}
		if o.exitedBeforeDeletion() {
			// Its failure came first: the deletion does not make it a disruption.
			o.gone, o.deletedByOther = true, true
			r.vanished[o.slot] = o
			continue
		}
		o.terminated, o.disrupted, o.gone = true, true, true
		if o.cause == "" {
			o.cause = causeDeleted
		}
		r.vanished[o.slot] = o
	}
}

// exitedBeforeDeletion reports whether a pod someone else deleted had already exited non-zero by
// itself: its training container finished before the deletion was asked for (deletionTimestamp
// less the grace period), or it is Failed with no deletion time. Its failure happened first and
// is counted as one; the deletion (kubectl delete pod during its back-off, a tool that clears
// failed pods) used to turn it into a disruption, uncounted, so that a crash loop whose failed pods
// were deleted never reached backoffLimit. A pod that ended on the deletion's signal is disrupted.
func (p *observedPod) exitedBeforeDeletion() bool {
	if !p.terminated || p.succeeded || p.disrupted || p.exitCode == nil || *p.exitCode == 0 || p.finished.IsZero() {
		return false
	}
	ts := p.pod.DeletionTimestamp
	if ts == nil {
		return true
	}
	asked := ts.Time
	if g := p.pod.DeletionGracePeriodSeconds; g != nil {
		asked = asked.Add(-time.Duration(*g) * time.Second)
	}
	return p.finished.Before(asked)
}

// ended lists, in spec order, the replicas whose end this round decides on: terminated pods still
// there (or on a lost node, which they never leave by themselves), pods deleted by someone else
// and already gone, and, where the gang restarts, pods that ran and that someone else is deleting
// or is about to (a DisruptionTarget condition): to their peers they are lost already.
func (r *renderer) ended() []*observedPod {
	var out []*observedPod
	for _, t := range r.job.Replicas {
		for i := int32(0); i < t.Replicas; i++ {
			s := slot{t.Type, i}
			gang := r.job.restartScopeOf(s) == batch.RestartScopeGang
			p := r.observed[s]
			if p == nil {
				if v := r.vanished[s]; v != nil {
					out = append(out, v)
				}
				continue
			}
			if p.deleting || !r.current(p) {
				continue
			}
			going := p.pod.DeletionTimestamp != nil
			switch {
			case p.terminated && (!going || p.nodeLost):
				out = append(out, p)
			case gang && going && p.deletedByOther && p.exitedBeforeDeletion():
				out = append(out, p)
			case gang && p.ran() && !p.succeeded && ((going && p.deletedByOther) || (!going && p.disrupted)):
				p.disrupted = true
				out = append(out, p)
			}
		}
	}
	return out
}

// judgeEnded applies each replica's restart policy to the ended replicas that judge keeps: it
// returns those due a restart, or fails the job on the first that its policy does not restart
// (reporting true).
func (r *renderer) judgeEnded(judge func(*observedPod) bool) (due []*observedPod, failed bool) {
	d := &r.out.Decisions
	for _, p := range r.ended() {
		r.endedOnScaleDown(p)
		if !judge(p) {
			continue
		}
		policy := r.job.replicaType(p.slot.typ).RestartPolicy
		switch restartVerdict(policy, p) {
		case fail:
			if r.job.Kubeflow != nil && r.job.Kubeflow.DynamicWorker && p.slot.typ == "worker" {
				// enableDynamicWorker: Workers come and go, so one that fails for good leaves the
				// job running (Kubeflow's v1.8.1 does the same); its pod stays, counted failed.
				continue
			}
			d.Phase, d.Reason = batch.JobFailed, batch.ReasonFailed
			d.Message = fmt.Sprintf("%s %s and restartPolicy %s does not restart it", p.pod.Name, howItEnded(p), policy)
			return nil, true
		case restart:
			due = append(due, p)
		}
	}
	return due, false
}

// outcome decides whether the job has just finished, and restarts what its policies restart.
// It reports true when the job is now Succeeded or Failed.
func (r *renderer) outcome() bool {
	d := &r.out.Decisions
	if r.succeeded() {
		return true
	}
	if r.deadlinePassed() {
		d.Phase, d.Reason = batch.JobFailed, batch.ReasonDeadlineExceeded
		d.Message = fmt.Sprintf("the job ran longer than runPolicy.activeDeadlineSeconds (%ds)", *r.job.ActiveDeadlineSeconds)
		return true
	}
	due, failed := r.judgeEnded(func(*observedPod) bool { return true })
	if failed {
		return true
	}
	if due = r.holdForBackoff(due); len(due) > 0 {
		return r.restart(due)
	}
	return false
}

// succeeded decides the job Succeeded when its leader (or, under successPolicy AllWorkers, every
// worker) has succeeded in the current run.
func (r *renderer) succeeded() bool {
	d := &r.out.Decisions
	leaderSlot := r.leaderSlot()
	if r.job.Kubeflow != nil && r.job.Kubeflow.AllWorkers && leaderSlot.typ == "worker" {
		if r.allWorkersSucceeded() {
			d.Phase, d.Reason = batch.JobSucceeded, batch.ReasonSucceeded
			d.Message = "every worker succeeded (successPolicy AllWorkers)"
			return true
		}
	} else if leader := r.observed[leaderSlot]; leader != nil && leader.succeeded && r.current(leader) {
		d.Phase, d.Reason = batch.JobSucceeded, batch.ReasonSucceeded
		d.Message = fmt.Sprintf("%s succeeded", leader.pod.Name)
		return true
	}
	return false
}

// restart restarts the replicas that are due, or the whole gang when any of them is of a type
// whose scope is the gang. A restart decided by an exit code counts toward backoffLimit
// (backoffCount); one after a disruption counts apart (disruptionCount). A gang restart counts
// once, by exit code if any of its causes is one. It reports true when the job fails instead:
// the restart would exceed backoffLimit.
func (r *renderer) restart(due []*observedPod) bool {
	d := &r.out.Decisions
	gang, exits, backoff := r.restartCost(due)
	if r.exceedsBackoffLimit(backoff) {
		d.Phase, d.Reason = batch.JobFailed, batch.ReasonBackoffLimitExceeded
		switch {
		case gang:
			d.Message = fmt.Sprintf("%s %s; restarting the job's pods would exceed runPolicy.backoffLimit (%d)", exits[0].pod.Name, howItEnded(exits[0]), r.job.BackoffLimit)
		case len(exits) == 1:
			d.Message = fmt.Sprintf("%s %s; restarting it would exceed runPolicy.backoffLimit (%d)", exits[0].pod.Name, howItEnded(exits[0]), r.job.BackoffLimit)
		default:
			// Note: replicas restarted alone take one each, so several that end together may
			// exceed the limit where one would not: the message names them all and the count.
			parts := make([]string, 0, min(len(exits), EndingsListed))
			for _, p := range exits[:min(len(exits), EndingsListed)] {
				parts = append(parts, p.pod.Name+" "+howItEnded(p))
			}
			d.Message = fmt.Sprintf("%s; restarting the %d of them, one backoff each, would take backoffCount from %d to %d, past runPolicy.backoffLimit (%d)",
				ListEndings(parts, len(exits)), len(exits), d.BackoffCount, int64(d.BackoffCount)+backoff, r.job.BackoffLimit)
		}
		return true
	}
	d.BackoffCount += int32(backoff)
	if gang {
		if backoff == 0 {
			d.DisruptionCount++
		}
		d.GangRestarts++
		d.GangRestart = true
		// Note: the new gang waits for the old pods to go, and their deletion wakes the job; with
		// none left (all deleted by someone else and gone), nothing would, and the job stayed
		// Pending with no pod: the new gang is created at once.
		for _, p := range r.allObserved() {
			r.delete(p, DeleteRestart)
			r.holdCreates = true
		}
	} else {
		d.DisruptionCount += int32(len(due) - len(exits))
		for _, p := range due {
			if !p.gone {
				r.delete(p, DeleteRestart)
			}
		}
	}
	for _, p := range due {
		d.Restarts = append(d.Restarts, Restart{
			Pod: p.pod.Name, Type: p.slot.typ, Index: p.slot.index, ExitCode: p.exitCode, Disrupted: p.disrupted, Cause: howItEnded(p),
		})
	}
	return false
}

// restartCost says what restarting the due replicas takes: the whole gang or not, the replicas
// among them that exited by themselves, and how many restarts that counts toward backoffLimit (a
// gang restart counts once).
func (r *renderer) restartCost(due []*observedPod) (gang bool, exits []*observedPod, backoff int64) {
	for _, p := range due {
		// Note: a replica disrupted before it ever ran has joined no peer: replacing it alone
		// recovers, whatever the scope (a pod preempted or deleted while Pending, say).
		gang = gang || p.scaledDown || (r.job.restartScopeOf(p.slot) == batch.RestartScopeGang && (p.ran() || !p.disrupted))
		if !p.disrupted {
			exits = append(exits, p)
		}
	}
	backoff = int64(len(exits))
	if gang {
		backoff = min(backoff, 1)
	}
	return gang, exits, backoff
}

// EndingsListed is how many replicas' endings a message names (ListEndings): a round in which a
// thousand replicas end names the first few and counts the rest, keeping conditions readable and
// under their 32,768-byte limit (each ending may quote a 200-byte line of its log).
const EndingsListed = 10

// ListEndings joins the endings of the first replicas of n that ended in a round ("w-0 exited
// with code 1; w-1 was evicted"), and counts the others ("and 990 more").
func ListEndings(parts []string, n int) string {
	s := strings.Join(parts, "; ")
	if more := n - len(parts); more > 0 {
		s += fmt.Sprintf("; and %d more", more)
	}
	return s
}

// exceedsBackoffLimit reports whether counting backoff more restarts would exceed backoffLimit.
func (r *renderer) exceedsBackoffLimit(backoff int64) bool {
	return backoff > 0 && int64(r.out.Decisions.BackoffCount)+backoff > int64(r.job.BackoffLimit)
}

// howItEnded says in a few words how a replica ended, without volatile detail: the same words
// for as long as the pod is there to read (its exit code, the kubelet's reason, its last words).
func howItEnded(p *observedPod) string {
	switch {
	case p.nodeLost:
		return causeNodeLost
	case p.disrupted && p.cause != "":
		return p.cause
	case p.disrupted:
		return causeEvicted
	case p.exitCode != nil:
		s := fmt.Sprintf("exited with code %d", *p.exitCode)
		if p.exitReason != "" {
			s += " (" + p.exitReason + ")"
		}
		if p.lastWords != "" {
			s += fmt.Sprintf(" after logging %q", p.lastWords)
		}
		return s
	default:
		return "failed without an exit code"
	}
}

// replicaType is the job's replica type typ (which exists: observed pods fill only the job's slots).
func (j *Job) replicaType(typ string) *ReplicaType {
	for i := range j.Replicas {
		if j.Replicas[i].Type == typ {
			return &j.Replicas[i]
		}
	}
	return &ReplicaType{Type: typ, RestartPolicy: batch.RestartPolicyNever}
}

// leaderSlot is the replica whose success is the job's success: PyTorch's master (replica 0 of
// type master, else of the first type); TensorFlow's chief, else worker 0.
func (r *renderer) leaderSlot() slot { return slot{r.job.leaderType(), 0} }

// leaderType is the type of the job's leader (leaderSlot): PyTorch's master, else the first
// type with replicas; TensorFlow's chief, else master, else worker.
func (j *Job) leaderType() string {
	if j.Framework == TensorFlow {
		return tfLeaderType(j.Replicas)
	}
	return j.Replicas[masterTypeIndex(j.Replicas)].Type
}
