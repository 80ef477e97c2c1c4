package main

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
	"github.com/trainyard/trainyard/render"
)

// The invariants, named as the report and the violations name them. Each is derived from SPEC.md
// (section in brackets) and judged on what the soak's own watches saw (world), never on the
// operator's code. Safety invariants hold at every moment; convergence invariants ("settled")
// hold once the job, its spec and the operator have been left alone for the grace period, so a
// slow machine or an operator restart never makes them fire.
var invariants = []struct{ name, says string }{
	{invTerminalSticky, "a job seen Succeeded or Failed is never seen in another phase later [§8]"},
	{invSucceeded, "a Succeeded job's deciding replica was seen to succeed: replica 0 of the master (PyTorch) or chief, else worker 0 (TensorFlow); every worker under TFJob successPolicy AllWorkers [§8]"},
	{invFailed, "a Failed job's reason is one its pods show: ReplicaFailed needs a pod that failed (or was deleted by someone else) under a restart policy that does not restart it; BackoffLimitExceeded a finite limit and more restartable ends by exit code than it; DeadlineExceeded a deadline at least that old [§7, §8]"},
	{invNoPodAfterOutcome, "no pod of a job is created after its completionTime [§8: terminal phases are sticky]"},
	{invOutcomeReached, "settled: a running job whose deciding pod succeeded, or one of whose pods failed for good, has finished [§7, §8]"},
	{invRestartDone, "settled: a terminated pod that its restart policy restarts does not stay: it is replaced, or the job fails [§7]"},
	{invCleanUp, "settled: a finished job keeps no pod its cleanUpPolicy / cleanPodPolicy deletes (All: none; Unfinished/Running: none still pending or running) [§8]"},
	{invServices, "settled: a finished job's Services go with its last pods (T9k: the job's Service once no pod is left; Kubeflow: each replica's Service once its pod is gone) [§3, §8]"},
	{invPaused, "settled: a paused (suspended) job that has not finished has no pod and says Paused [§9]"},
	{invResumed, "settled: a job resumed after a pause no longer says Paused [§9]"},
	{invSlots, "settled: a running job's pods are within its replica types and counts; scaling down removes the highest indices [§10]"},
	{invSlotsFilled, "settled: every replica slot of a running job has a pod (missing pods are created, deleted ones replaced) [§7]"},
	{invBackoff, "backoffCount never exceeds the restartable pod ends by exit code seen (no restart counted twice; a gang restart counts once; disruptions not at all) nor a finite backoffLimit [§7]"},
	{invDisruptions, "disruptionCount never exceeds the disruptions seen: pods evicted or preempted, pods the soak deleted by hand, and pods failing within render.ScaleDownWindow of a scale-down they ran through, that the restart policy restarts (none counted twice) [§7]"},
	{invOrphans, "no pod or Service the operator labels outlives its job by more than the orphan grace; none is left after every job is deleted"},
	{invNothingForDeleted, "no pod or Service is created for a job more than 2 s after its deletion"},
	{invOperatorAlive, "the operator never exits unless the soak stops or kills it"},
	{invRSS, "the operator's idle RSS at the end is at most 1.5x its idle RSS at the start + 20 MB"},
	{invGoroutines, "the operator's goroutines are flat: idle at the end at most idle at the start + 25; within each operator process, at its end at most 1.5x its warm-up count + 50"},
}

const (
	invTerminalSticky    = "terminal-sticky"
	invSucceeded         = "succeeded-by-its-leader"
	invFailed            = "failed-for-a-shown-reason"
	invNoPodAfterOutcome = "no-pod-after-outcome"
	invOutcomeReached    = "outcome-reached"
	invRestartDone       = "restart-done"
	invCleanUp           = "clean-up-done"
	invServices          = "services-follow-pods"
	invPaused            = "paused-holds-no-pod"
	invResumed           = "resumed-not-paused"
	invSlots             = "pods-within-slots"
	invSlotsFilled       = "slots-filled"
	invBackoff           = "backoff-count-bounded"
	invDisruptions       = "disruption-count-bounded"
	invOrphans           = "no-orphan"
	invNothingForDeleted = "nothing-created-for-deleted-job"
	invOperatorAlive     = "operator-never-crashes"
	invRSS               = "operator-rss-flat"
	invGoroutines        = "operator-goroutines-flat"
)

// violation is one invariant broken by one subject (a job, a pod, the operator), with what the
// soak saw.
type violation struct {
	at                           time.Time
	invariant, subject, evidence string
}

// checker judges the world and keeps the violations, each (invariant, subject) once.
type checker struct {
	w           *world
	grace       time.Duration // convergence invariants wait this long
	orphanGrace time.Duration // the garbage collector's time
	log         func(format string, args ...any)

	mu          sync.Mutex
	seen        map[string]bool
	violations  []violation
	rounds      int
	evaluations int
}

func newChecker(w *world, grace, orphanGrace time.Duration, log func(string, ...any)) *checker {
	return &checker{w: w, grace: grace, orphanGrace: orphanGrace, log: log, seen: map[string]bool{}}
}

// report records a violation the first time its invariant and subject are seen together.
func (c *checker) report(invariant, subject, format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	key := invariant + "/" + subject
	if c.seen[key] {
		return
	}
	c.seen[key] = true
	v := violation{at: time.Now(), invariant: invariant, subject: subject, evidence: fmt.Sprintf(format, args...)}
	c.violations = append(c.violations, v)
	c.log("VIOLATION %s: %s: %s", v.invariant, v.subject, v.evidence)
}

func (c *checker) count() (rounds, evaluations, violations int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rounds, c.evaluations, len(c.violations)
}

func (c *checker) all() []violation {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.violations)
}

// operatorState is what the convergence invariants need of the operator: whether it runs, and
// since when it has been ready.
type operatorState struct {
	up         bool
	readySince time.Time
}

// round judges every job, pod and Service once.
func (c *checker) round(now time.Time, op operatorState) {
	c.w.mu.Lock()
	defer c.w.mu.Unlock()
	r := judging{c: c, now: now, op: op, pods: map[types.UID][]*podRecord{}, services: map[types.UID][]*serviceRecord{}}
	for _, p := range c.w.pods {
		r.pods[p.jobUID] = append(r.pods[p.jobUID], p)
	}
	for _, s := range c.w.services {
		r.services[s.jobUID] = append(r.services[s.jobUID], s)
	}
	for _, list := range r.pods {
		sort.Slice(list, func(a, b int) bool { return list[a].created.Before(list[b].created) })
	}
	for _, j := range c.w.jobs {
		r.job(j)
	}
	r.orphans()
	c.mu.Lock()
	c.rounds++
	c.evaluations += r.evaluations
	c.mu.Unlock()
}

// judging is one round.
type judging struct {
	c           *checker
	now         time.Time
	op          operatorState
	pods        map[types.UID][]*podRecord
	services    map[types.UID][]*serviceRecord
	evaluations int
}

// settled: the operator has been up, and nothing has happened to the subject, for the grace.
func (r *judging) settled(since time.Time) bool {
	if !r.op.up {
		return false
	}
	return r.now.Sub(later(since, r.op.readySince)) >= r.c.grace
}

func (r *judging) check(ok bool, invariant string, j *jobRecord, format string, args ...any) {
	r.evaluations++
	if !ok {
		r.c.report(invariant, j.String(), format, args...)
	}
}

func (r *judging) job(j *jobRecord) {
	pods := r.pods[j.uid]
	spec, st := j.spec, j.st
	finished := terminalPhase(st.phase)

	r.check(j.leftTerminal == "", invTerminalSticky, j, "%s", j.leftTerminal)

	if j.terminal == string(batch.JobSucceeded) {
		r.check(r.succeededBy(j, pods), invSucceeded, j, "Succeeded (reason %s) but the deciding replica (%s) was never seen to succeed; its pods: %s",
			st.reason, r.decider(j), describePods(slotPods(pods, spec.leader, 0)))
	}
	if j.terminal == string(batch.JobFailed) {
		ok, why := r.failedFor(j, pods)
		r.check(ok, invFailed, j, "%s", why)
	}
	if finished {
		end := st.completion.Add(time.Second)
		if st.completion.IsZero() {
			end = j.terminalAt.Add(time.Second)
		}
		for _, p := range pods {
			r.check(!p.created.After(end), invNoPodAfterOutcome, j, "%s at %s, but pod %s was created at %s",
				st.phase, end.Add(-time.Second).Format("15:04:05"), p.name, p.created.Format("15:04:05"))
		}
	}
	r.backoff(j, pods)
	r.disruptions(j, pods)
	if !j.exists() {
		return
	}
	if finished {
		r.finishedJob(j, pods)
		return
	}
	if spec.paused {
		if r.settled(j.pauseChanged) {
			live := livePods(pods)
			r.check(len(live) == 0 && st.phase == string(batch.JobPaused), invPaused, j,
				"paused since %s, phase %q, pods not being deleted: %s", clock(j.pauseChanged), st.phase, describePods(live))
		}
		return
	}
	if !r.settled(j.pauseChanged) {
		return
	}
	if j.everPaused {
		r.check(st.phase != string(batch.JobPaused), invResumed, j, "resumed at %s, still says Paused", clock(j.pauseChanged))
	}
	r.runningJob(j, pods)
}

// runningJob judges a job that exists, has not finished and is not paused, and whose pause
// state has settled.
func (r *judging) runningJob(j *jobRecord, pods []*podRecord) {
	spec := j.spec
	inSlots := func(p *podRecord) bool {
		n, ok := spec.replicas[p.typ]
		return ok && p.index >= 0 && p.index < int(n)
	}
	for _, p := range livePods(pods) {
		if !inSlots(p) {
			if r.settled(j.specChanged) {
				r.check(false, invSlots, j, "pod %s (type %q, index %d) is outside the spec's replicas %v (spec last changed %s)",
					p.name, p.typ, p.index, spec.replicas, clock(j.specChanged))
			}
			continue
		}
		if !p.terminated() || !r.settled(p.terminatedAt) {
			continue
		}
		if !p.disrupted && !r.settled(p.terminatedAt.Add(restartBackoff(j.st.backoffCount))) {
			continue // a restart by exit code may still wait its back-off
		}
		verdict := restartVerdict(spec.policy[p.typ], j.asEnded(p))
		decides := p.typ == spec.leader && p.index == 0 && p.phase == corev1.PodSucceeded && !spec.allWorkers
		r.check(!decides && verdict != "fail", invOutcomeReached, j, "pod %s ended (%s, restartPolicy %s) at %s, which decides the job, but the job is still %q",
			p.name, p.phase, spec.policy[p.typ], clock(p.terminatedAt), j.st.phase)
		if verdict == "restart" && !decides {
			r.check(false, invRestartDone, j, "pod %s ended (%s) at %s and restartPolicy %s restarts it, but it is still there and the job is %q",
				p.describe(), p.phase, clock(p.terminatedAt), spec.policy[p.typ], j.st.phase)
		}
	}
	if spec.allWorkers && spec.replicas["worker"] > 0 {
		all := true
		var last time.Time
		for i := 0; i < int(spec.replicas["worker"]); i++ {
			p := livePod(slotPods(pods, "worker", i))
			if p == nil || p.phase != corev1.PodSucceeded {
				all = false
				break
			}
			last = later(last, p.terminatedAt)
		}
		if all && r.settled(last) {
			r.check(false, invOutcomeReached, j, "every worker succeeded (successPolicy AllWorkers), the last at %s, but the job is still %q", clock(last), j.st.phase)
		}
	}
	if !r.settled(later(j.specChanged, j.created)) {
		return
	}
	for _, typ := range spec.types {
		for i := 0; i < int(spec.replicas[typ]); i++ {
			slot := slotPods(pods, typ, i)
			var lastGone time.Time
			for _, p := range slot {
				lastGone = later(lastGone, p.gone)
			}
			switch {
			case slices.ContainsFunc(slot, (*podRecord).exists):
				r.evaluations++
			case len(slot) == 0:
				r.check(false, invSlotsFilled, j, "no pod was ever seen for %s index %d (job created %s, spec last changed %s)",
					typ, i, j.created.Format("15:04:05"), clock(j.specChanged))
			case r.settled(lastGone):
				r.check(false, invSlotsFilled, j, "%s index %d has had no pod since %s: %s", typ, i, clock(lastGone), describePods(slot))
			}
		}
	}
}

// finishedJob judges the clean-up of a job that has finished, once it has settled.
func (r *judging) finishedJob(j *jobRecord, pods []*podRecord) {
	if !r.settled(j.terminalAt) {
		return
	}
	var kept []*podRecord
	for _, p := range livePods(pods) {
		if j.spec.cleanUp == batch.CleanUpPolicyAll || (j.spec.cleanUp == batch.CleanUpPolicyUnfinished && !p.terminated()) {
			kept = append(kept, p)
		}
	}
	r.check(len(kept) == 0, invCleanUp, j, "%s since %s with clean-up %s, yet these pods remain: %s", j.st.phase, clock(j.terminalAt), j.spec.cleanUp, describePods(kept))

	existing := map[string]bool{}
	var lastGone time.Time
	for _, p := range pods {
		if p.exists() {
			existing[p.name] = true
		} else {
			lastGone = later(lastGone, p.gone)
		}
	}
	for _, s := range r.services[j.uid] {
		if !s.gone.IsZero() {
			continue
		}
		kubeflow := j.kind == kindPT || j.kind == kindTF
		switch {
		case kubeflow && !existing[s.name] && r.settled(later(lastGoneOf(pods, s.name), s.created)):
			r.check(false, invServices, j, "Service %s remains, but its pod is gone (since %s)", s.name, clock(lastGoneOf(pods, s.name)))
		case !kubeflow && len(existing) == 0 && r.settled(later(lastGone, s.created)):
			r.check(false, invServices, j, "Service %s remains, but no pod of the job is left (the last went at %s)", s.name, clock(lastGone))
		default:
			r.evaluations++
		}
	}
}

// backoff: the count never runs ahead of the restartable ends by exit code the watch saw, nor
// past a finite limit. The count is the one shown at least 3 s ago, so that the pod events that
// caused it have surely arrived (two watches are not ordered with each other).
func (r *judging) backoff(j *jobRecord, pods []*podRecord) {
	shown := shownBefore(j.backoff, r.now)
	if shown == nil || shown.n == 0 {
		return
	}
	ends := restartableEnds(j, pods, false)
	r.check(shown.n <= int32(len(ends)), invBackoff, j, "backoffCount %d (seen %s) but only %d restartable pod ends by exit code were seen: %s",
		shown.n, clock(shown.at), len(ends), describePods(ends))
	if l := j.spec.backoffLimit; l != nil {
		r.check(shown.n <= *l, invBackoff, j, "backoffCount %d (seen %s) is above backoffLimit %d", shown.n, clock(shown.at), *l)
	}
}

// disruptions: the count never runs ahead of the disruptions the watch saw (and the soak made),
// as backoff for exit codes.
func (r *judging) disruptions(j *jobRecord, pods []*podRecord) {
	shown := shownBefore(j.disruptions, r.now)
	if shown == nil || shown.n == 0 {
		return
	}
	ends := restartableEnds(j, pods, true)
	r.check(shown.n <= int32(len(ends)), invDisruptions, j, "disruptionCount %d (seen %s) but only %d disruptions that restart were seen: %s",
		shown.n, clock(shown.at), len(ends), describePods(ends))
}

// shownBefore is the last count the status showed at least 3 s before now, or nil.
func shownBefore(counts []countSeen, now time.Time) *countSeen {
	var shown *countSeen
	for i := range counts {
		if now.Sub(counts[i].at) >= 3*time.Second {
			shown = &counts[i]
		}
	}
	return shown
}

// succeededBy: the replica that decides success was seen to succeed.
func (r *judging) succeededBy(j *jobRecord, pods []*podRecord) bool {
	if j.spec.allWorkers {
		for i := 0; i < int(j.spec.replicas["worker"]); i++ {
			if !slices.ContainsFunc(slotPods(pods, "worker", i), func(p *podRecord) bool { return p.phase == corev1.PodSucceeded }) {
				return false
			}
		}
		return true
	}
	return slices.ContainsFunc(slotPods(pods, j.spec.leader, 0), func(p *podRecord) bool { return p.phase == corev1.PodSucceeded })
}

func (r *judging) decider(j *jobRecord) string {
	if j.spec.allWorkers {
		return "every worker"
	}
	return j.spec.leader + " index 0"
}

// failedFor reports whether a Failed job's reason is one its pods and spec show.
func (r *judging) failedFor(j *jobRecord, pods []*podRecord) (bool, string) {
	spec, st := j.spec, j.st
	switch st.reason {
	case batch.ReasonFailed:
		for _, p := range pods {
			if policy, ok := spec.policy[p.typ]; ok && (p.phase == corev1.PodFailed || p.byHand) && restartVerdict(policy, j.asEnded(p)) == "fail" {
				return true, ""
			}
		}
		return false, fmt.Sprintf("Failed with reason %s, but no pod was seen to fail under a restart policy that does not restart it (policies %v); pods: %s",
			st.reason, spec.policy, describePods(pods))
	case batch.ReasonBackoffLimitExceeded:
		ends := restartableEnds(j, pods, false)
		if spec.backoffLimit == nil {
			return false, "Failed with reason BackoffLimitExceeded, but the job sets no backoffLimit (no limit)"
		}
		if int32(len(ends)) < *spec.backoffLimit+1 {
			return false, fmt.Sprintf("Failed with reason BackoffLimitExceeded (limit %d), but only %d restartable pod ends were seen: %s",
				*spec.backoffLimit, len(ends), describePods(ends))
		}
		return true, ""
	case batch.ReasonDeadlineExceeded:
		end := st.completion
		if end.IsZero() {
			end = j.terminalAt
		}
		if spec.deadline == nil {
			return false, "Failed with reason DeadlineExceeded, but the job has no activeDeadlineSeconds"
		}
		// Timestamps are whole seconds: allow one.
		if age := end.Sub(j.created); age < time.Duration(*spec.deadline-1)*time.Second {
			return false, fmt.Sprintf("Failed with reason DeadlineExceeded %s after its creation, before its activeDeadlineSeconds (%d)", age, *spec.deadline)
		}
		return true, ""
	}
	return false, fmt.Sprintf("Failed with reason %q, which is none of ReplicaFailed, BackoffLimitExceeded, DeadlineExceeded", st.reason)
}

// orphans: every labelled pod and Service has a live owner, give or take the garbage
// collector's grace; and none is created for a job after its deletion.
func (r *judging) orphans() {
	jobs := r.c.w.jobs
	check := func(kind, name string, owner types.UID, created, gone time.Time) {
		j := jobs[owner]
		if j != nil {
			deleted := j.deleted
			if deleted.IsZero() || (!j.gone.IsZero() && j.gone.Before(deleted)) {
				deleted = j.gone
			}
			if !deleted.IsZero() {
				r.evaluations++
				if created.After(deleted.Add(2 * time.Second)) {
					r.c.report(invNothingForDeleted, kind+" "+name, "created at %s, its job %s was deleted at %s", created.Format("15:04:05"), j, clock(deleted))
				}
			}
		}
		if !gone.IsZero() {
			return
		}
		r.evaluations++
		since := created
		if j != nil {
			if j.exists() {
				return
			}
			since = later(since, j.gone)
		}
		if r.now.Sub(since) >= r.c.orphanGrace {
			owner := "an unknown job (uid " + string(owner) + ")"
			if j != nil {
				owner = j.String() + ", gone at " + clock(j.gone)
			}
			r.c.report(invOrphans, kind+" "+name, "still there %s after its owner went: %s", r.now.Sub(since).Round(time.Second), owner)
		}
	}
	for _, p := range r.c.w.pods {
		check("pod", p.name, p.jobUID, p.created, p.gone)
	}
	for _, s := range r.c.w.services {
		check("Service", s.name, s.jobUID, s.created, s.gone)
	}
}

// restartableEnds are the job's pods seen to end in a way their restart policy restarts: by
// exit code, or (disrupted) evicted, preempted or deleted by hand.
func restartableEnds(j *jobRecord, pods []*podRecord, disrupted bool) []*podRecord {
	var out []*podRecord
	for _, p := range pods {
		p := j.asEnded(p)
		policy, ok := j.spec.policy[p.typ]
		if !ok || !(p.terminated() || p.byHand) || restartVerdict(policy, p) != "restart" {
			continue
		}
		if byDisruption := p.disrupted || (p.byHand && !p.terminated()); byDisruption == disrupted {
			out = append(out, p)
		}
	}
	return out
}

func livePods(pods []*podRecord) []*podRecord {
	var out []*podRecord
	for _, p := range pods {
		if p.live() {
			out = append(out, p)
		}
	}
	return out
}

func slotPods(pods []*podRecord, typ string, index int) []*podRecord {
	var out []*podRecord
	for _, p := range pods {
		if p.typ == typ && p.index == index {
			out = append(out, p)
		}
	}
	return out
}

// livePod is the slot's pod that exists and is not being deleted, or nil.
func livePod(pods []*podRecord) *podRecord {
	for _, p := range pods {
		if p.live() {
			return p
		}
	}
	return nil
}

func lastGoneOf(pods []*podRecord, name string) time.Time {
	var t time.Time
	for _, p := range pods {
		if p.name == name {
			t = later(t, p.gone)
		}
	}
	return t
}

func describePods(pods []*podRecord) string {
	if len(pods) == 0 {
		return "none"
	}
	parts := make([]string, len(pods))
	for i, p := range pods {
		parts[i] = p.describe()
	}
	return strings.Join(parts, "; ")
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// restartBackoff is the longest a restart by exit code may wait after restarts earlier ones, as
// the user guide's restarts page states it: none for the first, then the base doubling up to the
// maximum (render's constants; the soak does not call render's own function).
func restartBackoff(restarts int32) time.Duration {
	wait := time.Duration(0)
	for i := int32(0); i < restarts; i++ {
		wait = min(max(2*wait, render.RestartBackoffBase), render.RestartBackoffMax)
	}
	return wait
}
