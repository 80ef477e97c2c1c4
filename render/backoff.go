package render

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
)

// Restarts decided by an exit code back off, as the kubelet backs off a container that keeps
// failing and the Job controller a pod: the first restarts at once; each later one waits, from the
// end of the replica that failed, RestartBackoffBase doubled for each restart counted before it,
// up to RestartBackoffMax. A job in a crash loop then does not use its backoffLimit up in seconds,
// and a cause outside it (a data server down for a minute) has time to pass between tries. A
// replica that ran RestartBackoffReset or longer was not crash-looping: its end restarts at once.
// Disruptions never wait (their cause is outside the job), nor a failure that ends the job.
// While a restart waits, the replica's ended pod stays (it holds no resources); a gang's other
// pods keep running until the gang restarts, as beside a container the kubelet backs off.
const (
	RestartBackoffBase  = 10 * time.Second
	RestartBackoffMax   = 5 * time.Minute
	RestartBackoffReset = 10 * time.Minute
)

// restartBackoff is how long a restart waits after restarts earlier restarts by exit code.
func restartBackoff(restarts int32) time.Duration {
	if restarts <= 0 {
		return 0
	}
	wait := RestartBackoffBase
	for i := int32(1); i < restarts && wait < RestartBackoffMax; i++ {
		wait *= 2
	}
	return min(wait, RestartBackoffMax)
}

// backoffHold is a restart that waits: the replica whose end it waits on, until when, and why.
type backoffHold struct {
	pod      *observedPod
	gang     bool
	restarts int32
	wait     time.Duration
	until    time.Time
}

// message says, in words that stay the same while the hold lasts, what restarts when.
func (h *backoffHold) message() string {
	what := "restarting it"
	if h.gang {
		what = "restarting the job's pods"
	}
	return fmt.Sprintf("%s %s; %s at %s, %s after it ended (each restart by exit code after the first waits, from %s doubling up to %s)",
		h.pod.pod.Name, howItEnded(h.pod), what, h.until.UTC().Format(time.RFC3339), h.wait, RestartBackoffBase, RestartBackoffMax)
}

// holdForBackoff returns the due replicas that restart in this round. One that exited by itself
// within its back-off is held, and render runs again when the back-off ends. A gang restart waits
// on the first of its replicas to end (a peer that fails on the lost one later does not put it
// off), and not at all when one of them ran long enough. None waits whose pod (for a gang, any pod
// of it) was made from a template edited since.
func (r *renderer) holdForBackoff(due []*observedPod) []*observedPod {
	gang, exits, backoff := r.restartCost(due)
	restarts := r.out.Decisions.BackoffCount
	wait := restartBackoff(restarts)
	if wait == 0 || r.exceedsBackoffLimit(backoff) || (gang && r.gangEdited()) {
		return due
	}
	var first *observedPod
	held := map[*observedPod]bool{}
	for _, p := range exits {
		// Note: a container that did not say when it started and ended restarts at once.
		// One someone else deleted restarts at once: it is gone, or going, and its slot is filled
		// again as soon as it is empty; the deletion ends the wait (its failure still counts).
		// One made from a template edited since restarts at once: the fix is what it waits for.
		if p.started.IsZero() || p.finished.IsZero() || p.finished.Sub(p.started) >= RestartBackoffReset || p.deletedByOther || r.templateEdited(p) {
			if gang {
				return due
			}
			continue
		}
		if first == nil || p.finished.Before(first.finished) {
			first = p
		}
		held[p] = r.in.Now.Before(p.finished.Add(wait))
	}
	if first == nil || (gang && !held[first]) {
		return due
	}
	var now []*observedPod
	var hold *backoffHold
	for _, p := range due {
		switch {
		case gang:
			hold = &backoffHold{pod: first, gang: true, restarts: restarts, wait: wait, until: first.finished.Add(wait)}
		case held[p]:
			if until := p.finished.Add(wait); hold == nil || until.Before(hold.until) {
				hold = &backoffHold{pod: p, restarts: restarts, wait: wait, until: until}
			}
		default:
			now = append(now, p)
		}
	}
	if hold != nil {
		r.backoff = hold
		r.out.Decisions.RestartAt = &metav1.Time{Time: hold.until.UTC()}
		r.requeueAfter(hold.until.Sub(r.in.Now))
	}
	return now
}

// countEndedBeforeStop decides, before a pause or a Kueue hold (an eviction, a Workload replaced
// after an edit) deletes the job's pods, on the replicas that had already exited by themselves:
// such a failure happened whatever comes after, so it counts. A restart by exit code, held in its
// back-off or not yet decided, is counted in backoffCount now: the pause takes the restart's place
// (the pods come back on resume, at once: the pause served as the wait). Deleting the failed pod
// used to forgive it, and a crash loop that Kueue evicted during each back-off (waitForPodsReady's
// recoveryTimeout shorter than the wait) never reached backoffLimit. A held restart always fits
// in backoffLimit (one that does not fails the job at once instead of waiting), so the pause never
// fails the job by counting it; only a failure that the pause meets before any round has decided
// on it may (one permanent by its restart policy, or one past backoffLimit): the job fails as it
// would have a moment before. A pod that ends on the pause's own signal is being deleted by then,
// and counts nothing. It reports true when the job fails.
func (r *renderer) countEndedBeforeStop() bool {
	if r.job.Debug {
		// Debug pods' exits neither fail nor restart the job.
		return false
	}
	due, failed := r.judgeEnded(func(p *observedPod) bool {
		return !p.disrupted && !p.gone && p.pod.DeletionTimestamp == nil
	})
	if failed {
		return true
	}
	_, _, backoff := r.restartCost(due)
	if r.exceedsBackoffLimit(backoff) {
		return r.restart(due)
	}
	r.out.Decisions.BackoffCount += int32(backoff)
	return false
}

// An edit of the template a replica is made from ends its back-off, as the kubelet's back-off of a
// container is keyed by a hash of the container's spec: the user who fixes the image or the command
// of a crash-looping job expects the fixed pods at once, not at the time the job named before. Each
// pod carries the hash of its type's template (batch.AnnotationTemplateHash); a held restart whose
// pod was made from another one is not held (it restarts now, counted as before). The hash is of
// the template as the user wrote it, never of what render adds (the environment, torchrun's
// command, Kueue's admission, a gang's scheduler), which changes per pod, per restart or per
// operator version: an edit that changes no template (runPolicy, the scheduler, elastic's expected
// replicas, the job's labels) keeps the wait.

// templateKeysReplaced are the template's labels and annotations that every pod carries with
// render's value instead (pod.go): editing them changes no pod.
var templateKeysReplaced = []string{
	batch.LabelOwnerKind, batch.LabelOwnerName, batch.LabelReplicaType, batch.LabelReplicaIndex, batch.LabelSchedulerRole,
	batch.AnnotationRunMode, batch.AnnotationGangRestarts, batch.AnnotationTemplateHash,
}

// TemplateHash is the hash of a replica type's template that its pods carry: the first 80 bits of
// the SHA-256 of its JSON, less what render replaces on every pod (the keys above, restartPolicy),
// with keys sorted and empty values (null, "", {}, []) left out. Leaving them out keeps the hash
// of an unchanged template the same across versions of the Kubernetes API types, which add fields
// and encode unset ones as null or {}; sorting, across a reordering of their fields.
func TemplateHash(t *corev1.PodTemplateSpec) string {
	if t == nil {
		return ""
	}
	c := t.DeepCopy()
	for _, k := range templateKeysReplaced {
		delete(c.Labels, k)
		delete(c.Annotations, k)
	}
	c.Spec.RestartPolicy = ""
	raw, err := json.Marshal(c)
	if err != nil {
		return "" // cannot happen: a PodTemplateSpec always encodes
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return ""
	}
	canonical, err := json.Marshal(pruneEmpty(v))
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(canonical)
	return hex.EncodeToString(sum[:10])
}

// pruneEmpty drops the empty values of decoded JSON objects, depth first; nil when v itself is
// empty. Numbers and booleans stay, zero and false included: an explicit 0 or false may differ
// from unset.
func pruneEmpty(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if e = pruneEmpty(e); e == nil {
				delete(x, k)
			} else {
				x[k] = e
			}
		}
		if len(x) == 0 {
			return nil
		}
	case []any:
		if len(x) == 0 {
			return nil
		}
		// An element stays in its place, empty or not: args ["--x", ""] are not ["--x"].
		for i, e := range x {
			x[i] = pruneEmpty(e)
		}
	case string:
		if x == "" {
			return nil
		}
	}
	return v
}

// templateHash is TemplateHash of replica type typ's template, computed once per render.
func (r *renderer) templateHash(typ string) string {
	if h, ok := r.templateHashes[typ]; ok {
		return h
	}
	h := TemplateHash(r.job.replicaType(typ).Template)
	if r.templateHashes == nil {
		r.templateHashes = map[string]string{}
	}
	r.templateHashes[typ] = h
	return h
}

// templateEdited reports whether p was made from a template of its type other than the current
// one. A pod without the hash was made by an operator that did not write it: it is taken as made
// from the current template, so an upgrade neither ends a wait nor restarts anything.
func (r *renderer) templateEdited(p *observedPod) bool {
	return p.templateHash != "" && p.templateHash != r.templateHash(p.slot.typ)
}

// gangEdited reports whether a pod of the current gang was made from a template edited since: the
// gang restart replaces every one of them, so the new gang is not the one that failed.
func (r *renderer) gangEdited() bool {
	for _, p := range r.observed {
		if r.current(p) && r.templateEdited(p) {
			return true
		}
	}
	for _, p := range r.vanished {
		if r.templateEdited(p) {
			return true
		}
	}
	return false
}
