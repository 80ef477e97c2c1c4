package render

import (
	"cmp"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
	"github.com/trainyard/trainyard/apis/kueue"
)

// This file holds the T9k kinds' side of Kueue's job protocol, the one Kueue's jobframework runs
// for the kinds it integrates itself, for a job labelled kueue.x-k8s.io/queue-name (Kueue reaches
// the kubeflow.org kinds through its own integration instead, and their runPolicy.suspend):
//
//   - the job is represented by a Workload it owns, one podSet per replica type (name, count,
//     template), in the LocalQueue the label names, at the priority of its priority class;
//   - it has no pod until the Workload is admitted (Admitted=True, not Evicted); the pods of an
//     admitted job get the node labels and tolerations of the ResourceFlavors the admission names
//     (and what admission checks add), as Kueue's PodSetInfo gives them;
//   - when the Workload is evicted (preempted, deactivated, its queue stopped) the pods are
//     deleted, counted as neither restart nor failure, and once none is left the admission is
//     released (QuotaReserved=False, Requeued), so the quota goes to another Workload;
//   - a user's pause (runMode.pause) deactivates the Workload (spec.active=false), so a paused job
//     holds no quota either; resuming activates it, and the job queues again;
//   - PodsReady follows the pods (for Kueue's waitForPodsReady); a finished job's Workload is
//     marked Finished, which releases its quota.
//
// The hold is Kueue's, not the user's: the job's phase is Pending with Initialized=False, reason
// Queued, and a user's pause stays a pause.

// Queue is a T9k job's place in Kueue, from its labels.
type Queue struct {
	// Name is the LocalQueue (kueue.x-k8s.io/queue-name).
	Name string
	// PriorityClass is the WorkloadPriorityClass (kueue.x-k8s.io/priority-class), if any.
	PriorityClass string
	// Requested is the pod count an elastic job asked for when Kueue admitted fewer (partial
	// admission, AdmittedJob): the job runs with what was admitted, its Workload keeps asking this.
	Requested int32
	// Prebuilt is the Workload made for the job before it (kueue.x-k8s.io/prebuilt-workload-name,
	// a label or an annotation): MultiKueue's copy in a worker cluster has one. The job adopts it
	// and never makes its own (multikueue.go).
	Prebuilt string
	// Slices: the job is annotated kueue.x-k8s.io/elastic-job: "true". An elastic job with one
	// elastic replica type then grows and shrinks while admitted through Kueue's workload slices
	// (Sliced), instead of asking partial admission (minCount).
	Slices bool
	// MaxExecTime is the job's kueue.x-k8s.io/max-exec-time-seconds label as written (empty when it
	// has none): the most seconds the job may run admitted, over all its admissions. Its Workload
	// carries it (maxExecSeconds), and Kueue deactivates the Workload once it is used up.
	MaxExecTime string
}

// maxExecSeconds is the job's maximum execution time in seconds, as Kueue's jobframework reads the
// label: nil when there is none or it is not a positive 32-bit integer (Validate refuses that).
func (q *Queue) maxExecSeconds() *int32 {
	v, err := strconv.ParseInt(q.MaxExecTime, 10, 32)
	if q.MaxExecTime == "" || err != nil || v <= 0 {
		return nil
	}
	return ptr(int32(v))
}

// KueueObservation is what the controller observed for a queued job.
type KueueObservation struct {
	// Workload is the job's Workload as observed; nil when it does not exist.
	Workload *kueue.Workload
	// Flavors are the ResourceFlavors the Workload's admission names, by name.
	Flavors map[string]*kueue.ResourceFlavor
	// Priority is the job's priority class and value, resolved; nil when it names none.
	Priority *WorkloadPriority
	// PriorityError says why the priority class could not be resolved (it does not exist).
	PriorityError string
	// Replacement and Others are a sliced job's other Workloads (Sliced, SliceWorkloads): a slice
	// asking for a new size in place of Workload, and the rest.
	Replacement *kueue.Workload
	Others      []*kueue.Workload
	// Preemptor names the job Kueue evicted the Workload for, when it did so to admit another
	// (reason Preempted) in the job's own namespace: its kind and name ("PyTorchJob high"). Empty
	// otherwise: Kueue's words name the preemptor by UIDs only, and another namespace's job is
	// not the user's to see.
	Preemptor string
}

// WorkloadPriority is the priority class a Workload's priority comes from, and its value.
type WorkloadPriority struct {
	Ref   kueue.PriorityClassRef
	Value int32
}

// KueueDecisions are what a queued job's Workload needs after this round.
type KueueDecisions struct {
	// Workload is the name of the job's Workload.
	Workload string `json:"workload"`
	// Admitted: the Workload is admitted, so the job's pods may exist.
	Admitted bool `json:"admitted"`
	// Create: no Workload exists; Output.KueueWorkload is to be created.
	Create bool `json:"create,omitempty"`
	// Replace: the Workload asks for other pod sets or another queue than the job now wants; it is
	// deleted (and created anew in a later round).
	Replace bool `json:"replace,omitempty"`
	// SetActive, when set, is the new spec.active: false while the user pauses the job, true once
	// the job that Trainyard deactivated is resumed.
	SetActive *bool `json:"setActive,omitempty"`
	// Conditions are the Workload conditions to set (only those that change).
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// ReleaseAdmission: the Workload was evicted and the job has no pod left: its admission is
	// removed (with QuotaReserved=False among Conditions).
	ReleaseAdmission bool `json:"releaseAdmission,omitempty"`
	// Adopt: the Workload is a prebuilt one (Queue.Prebuilt) with no controller yet; the job
	// becomes its controller, and its job-uid label is set, as Kueue's jobframework does.
	Adopt bool `json:"adopt,omitempty"`
	// ScaleDown: a sliced job (Sliced) asks for fewer pods of its elastic replica type than its
	// admitted Workload: that pod set's count is lowered in place (Kueue frees the difference;
	// its admission keeps the count it granted).
	ScaleDown *PodSetCount `json:"scaleDown,omitempty"`
	// UnhealthyNodes are the nodes of the admitted Workload's topology assignment that failed
	// (tainted, not ready, gone), whose pods Kueue is placing anew (its status.unhealthyNodes): the
	// pods it holds behind its topology gate meanwhile wait for that.
	UnhealthyNodes []string `json:"unhealthyNodes,omitempty"`
	// Delete names the job's other Workloads to delete: a slice asking for a size the job no
	// longer wants (or that can no longer replace the running one), and slices Kueue has replaced.
	Delete []string `json:"delete,omitempty"`
}

// PodSetCount is the new count of a Workload's pod set, by its index and name.
type PodSetCount struct {
	Index int    `json:"index"`
	Name  string `json:"name"`
	Count int32  `json:"count"`
}

// priorityRecheck is how often a job held for a missing priority class looks for it again.
const priorityRecheck = 15 * time.Second

// AnnotationDeactivated is set on a Workload that Trainyard deactivated because its job was paused.
// Set and removed by the controller as render's SetActive says; read by render, which reactivates
// only a Workload it deactivated itself (one deactivated by Kueue or by hand stays so).
const AnnotationDeactivated = "batch.tensorstack.dev/deactivated-by-pause"

// Reasons of a queued job's Initialized=False condition.
const (
	ReasonQueued                 = batch.ReasonQueued
	ReasonKueueNotInstalled      = "KueueNotInstalled"
	ReasonPriorityClassNotFound  = "PriorityClassNotFound"
	ReasonKueueAdmissionConflict = "KueueAdmissionConflict"
	// ReasonDeactivated: the job's Workload is inactive, and no pause of the user's made it so:
	// Kueue deactivated it (the maximum execution time used up, the re-queuing limit reached) or
	// someone set spec.active by hand. Kueue admits it no more until it is active again.
	ReasonDeactivated = "Deactivated"
)

// prebuiltRecheck is how soon a job looks again for the prebuilt Workload it waits for.
const prebuiltRecheck = time.Second

// DeleteEvicted is the reason of a pod deleted because Kueue evicted (or never admitted) its job.
const DeleteEvicted = "Evicted"

// queueOf reads a T9k job's place in Kueue from its labels and annotations; nil when it is not
// queued.
func queueOf(m metav1.ObjectMeta) *Queue {
	name := m.Labels[kueue.LabelQueueName]
	if name == "" {
		return nil
	}
	prebuilt := m.Labels[kueue.LabelPrebuiltWorkload]
	if prebuilt == "" {
		prebuilt = m.Annotations[kueue.AnnotationPrebuiltWorkload]
	}
	return &Queue{Name: name, PriorityClass: m.Labels[kueue.LabelPriorityClass], Prebuilt: prebuilt, Slices: m.Annotations[kueue.AnnotationElasticJob] == "true",
		MaxExecTime: m.Labels[kueue.LabelMaxExecTime]}
}

// Sliced reports whether the queued job grows and shrinks while admitted through Kueue's workload
// slices: it asks for them (Queue.Slices), is elastic with one elastic replica type (the pod set
// that changes), and makes its own Workloads and runs its own pods (not a prebuilt Workload, not
// one MultiKueue dispatches). Such a job's Workload sets no minCount: Kueue does not admit an
// elastic Workload partially.
//
// Scaled down, the job lowers its admitted Workload's count in place. Scaled up, it keeps running
// at its admitted size and asks for the new size with a new Workload, a slice that names the
// admitted one (kueue.x-k8s.io/workload-slice-replacement-for); Kueue admits the slice charging
// only what it adds, and marks the replaced Workload Finished (WorkloadSliceReplaced). The job
// then grows under the slice's admission, its running pods untouched.
func Sliced(j *Job) bool {
	return j.Queue != nil && j.Queue.Slices && j.Queue.Prebuilt == "" && !j.Dispatched && elasticPodSet(j) >= 0
}

// SliceWorkloads sorts the Workloads a sliced job controls: w is the one the job runs or waits
// under (the unfinished one a waiting slice names, or that slice once admitted; else the one
// admitted, else the oldest unfinished; with none unfinished, the newest finished that Kueue did
// not replace, if any);
// replacement is an unfinished slice that names w; others are the rest (slices Kueue replaced,
// strays).
func SliceWorkloads(ws []*kueue.Workload) (w, replacement *kueue.Workload, others []*kueue.Workload) {
	var unfinished []*kueue.Workload
	for _, x := range ws {
		if !condition(x, kueue.WorkloadFinished) {
			unfinished = append(unfinished, x)
		}
	}
	oldestFirst := func(a, b *kueue.Workload) int {
		return cmpTime(a.CreationTimestamp, b.CreationTimestamp, a.Name, b.Name)
	}
	slices.SortFunc(unfinished, oldestFirst)
	for _, x := range unfinished {
		for _, y := range unfinished {
			if x != y && y.Annotations[kueue.AnnotationWorkloadSliceReplacementFor] == x.Namespace+"/"+x.Name {
				w, replacement = x, y
				if condition(y, kueue.WorkloadAdmitted) {
					// A Kueue without workload slices (before v0.18, or its feature off) admits the
					// slice as a Workload of its own and leaves the one it replaces: the job runs
					// under the slice, and the other goes.
					w, replacement = y, nil
				}
			}
		}
	}
	if w == nil {
		for _, x := range unfinished {
			if condition(x, kueue.WorkloadAdmitted) && w == nil {
				w = x
			}
		}
	}
	if w == nil && len(unfinished) > 0 {
		w = unfinished[0]
	}
	if w == nil {
		for _, x := range ws {
			if c := meta.FindStatusCondition(x.Status.Conditions, kueue.WorkloadFinished); c.Reason != kueue.FinishedWorkloadSliceReplaced && (w == nil || oldestFirst(w, x) < 0) {
				w = x
			}
		}
	}
	for _, x := range ws {
		if x != w && x != replacement {
			others = append(others, x)
		}
	}
	return w, replacement, others
}

// cmpTime orders by time, then by name.
func cmpTime(a, b metav1.Time, an, bn string) int {
	switch {
	case a.Before(&b):
		return -1
	case b.Before(&a):
		return 1
	}
	return strings.Compare(an, bn)
}

// sliceName names the slice that replaces Workload replaced with the pod set counts of want: the
// job's Workload name with a hash of the replaced one's name and the counts in place of its own
// hash, so that each step of a chain has a name of its own.
func sliceName(j *Job, replaced string, want []ReplicaType) string {
	h := sha1.New()
	h.Write([]byte(WorkloadName(j) + "\n" + replaced))
	for _, t := range want {
		fmt.Fprintf(h, "\n%s=%d", t.Type, t.Replicas)
	}
	base := WorkloadName(j)
	return base[:len(base)-5] + hex.EncodeToString(h.Sum(nil))[:5]
}

// admittedNow: w is admitted and neither evicted nor finished: the job's pods may run under it.
func admittedNow(w *kueue.Workload) bool {
	return w != nil && condition(w, kueue.WorkloadAdmitted) && !condition(w, kueue.WorkloadEvicted) && !condition(w, kueue.WorkloadFinished) && w.Status.Admission != nil
}

// slicePredecessor is, for a sliced job whose Workload w is a slice Kueue is admitting, the
// Workload w replaces, once Kueue has marked it Finished (WorkloadSliceReplaced) and before it
// admits w (two writes): the job's pods run under its admission meanwhile. Nil otherwise.
func slicePredecessor(j *Job, k *KueueObservation, w *kueue.Workload) *kueue.Workload {
	if !Sliced(j) || k == nil || w == nil || condition(w, kueue.WorkloadAdmitted) || condition(w, kueue.WorkloadEvicted) {
		return nil
	}
	for _, o := range k.Others {
		c := meta.FindStatusCondition(o.Status.Conditions, kueue.WorkloadFinished)
		if w.Annotations[kueue.AnnotationWorkloadSliceReplacementFor] == o.Namespace+"/"+o.Name && c != nil && c.Status == metav1.ConditionTrue && c.Reason == kueue.FinishedWorkloadSliceReplaced && o.Status.Admission != nil {
			return o
		}
	}
	return nil
}

// WorkloadName is the name of the Workload of a job, as Kueue's jobframework names it:
// <kind>-<name>, lower case, and a hash of the kind, group, name and UID; or the prebuilt
// Workload the job names.
func WorkloadName(j *Job) string {
	if j.Queue != nil && j.Queue.Prebuilt != "" {
		return j.Queue.Prebuilt
	}
	group := strings.SplitN(j.APIVersion, "/", 2)[0]
	h := sha1.New()
	for i, part := range []string{j.Kind, group, j.Name, string(j.UID)} {
		if i > 0 {
			h.Write([]byte("\n"))
		}
		h.Write([]byte(part))
	}
	prefix := strings.ToLower(j.Kind) + "-" + j.Name
	if len(prefix) > 247 { // 253, less the hash and its dash
		prefix = prefix[:247]
	}
	return prefix + "-" + hex.EncodeToString(h.Sum(nil))[:5]
}

// queueHold decides for a queued job that is neither finished nor paused whether it must wait for
// Kueue, and if so holds it: no pod is created and the pods it has are deleted. It reports
// whether the job is held. For an admitted job it keeps what its pods get from the admission.
func (r *renderer) queueHold() bool {
	q := r.job.Queue
	if q == nil {
		return false
	}
	d := &r.out.Decisions
	hold := func(reason, message string) bool {
		if r.countEndedBeforeStop() {
			d.CompletionTime = &r.now
			r.cleanUp()
			return true
		}
		for _, p := range r.allObserved() {
			r.delete(p, DeleteEvicted)
		}
		d.Phase, d.Reason, d.Message = batch.JobPending, reason, message
		d.Queued = &Blocked{Reason: reason, Message: message}
		// Note: as for a suspended batch Job, startTime is cleared while the job is held, so the
		// deadline counts from the pods' next start.
		d.StartTime = nil
		return true
	}
	k := r.in.Kueue
	switch {
	case k == nil || !r.in.InstalledCRDs[kueue.WorkloadCRD]:
		return hold(ReasonKueueNotInstalled, fmt.Sprintf("the job is labelled %s=%s but Kueue's Workload CRD (%s) is not installed; it waits for Kueue, or remove the label", kueue.LabelQueueName, q.Name, kueue.WorkloadCRD))
	case k.PriorityError != "":
		// Note: the creation of a priority class wakes no job; it looks again now and then.
		r.requeueAfter(priorityRecheck)
		return hold(ReasonPriorityClassNotFound, k.PriorityError)
	}
	w := k.Workload
	name := WorkloadName(r.job)
	if w != nil {
		name = w.Name // a sliced job's slices have names of their own
	}
	// gov is the Workload whose admission the pods run under: w, or while Kueue admits the slice
	// w, the Workload it replaces.
	gov := w
	if p := slicePredecessor(r.job, r.in.Kueue, w); p != nil {
		gov = p
	}
	var stale string
	if w != nil {
		stale = r.staleWorkload(w)
	}
	switch {
	case w == nil && q.Prebuilt != "":
		// Nothing links the Workload to the job until the job adopts it, so its arrival in the
		// cache does not wake the job: look again shortly.
		r.requeueAfter(prebuiltRecheck)
		return hold(ReasonQueued, fmt.Sprintf("waiting for Workload %s, named by the job's %s (MultiKueue makes it before the job)", name, kueue.LabelPrebuiltWorkload))
	case w == nil:
		return hold(ReasonQueued, fmt.Sprintf("creating Workload %s in LocalQueue %s", name, q.Name))
	case stale != "" && q.Prebuilt != "":
		return hold(ReasonQueued, fmt.Sprintf("Workload %s, named by the job's %s, does not match the job's %s; it is marked Finished (OutOfSync)", name, kueue.LabelPrebuiltWorkload, stale))
	case stale != "":
		return hold(ReasonQueued, fmt.Sprintf("Workload %s no longer matches the job's %s; it is replaced", name, stale))
	case condition(w, kueue.WorkloadFinished):
		if c := meta.FindStatusCondition(w.Status.Conditions, kueue.WorkloadFinished); c.Reason == kueue.FinishedFailedToStart {
			hold(ReasonKueueAdmissionConflict, fmt.Sprintf("Workload %s could not start the job (%s); mend the replica's template (its node selector, tolerations, labels or annotations) and the job is queued anew", name, c.Message))
			d.Blocked, d.Queued = d.Queued, nil
			return true
		}
		return hold(ReasonQueued, fmt.Sprintf("Workload %s is finished; the job cannot run under it", name))
	case !workloadActive(w) && w.Annotations[AnnotationDeactivated] == "":
		// Note: Kueue evicts an inactive Workload (reason Deactivated) even if it never admitted
		// it; waiting "to be admitted again" would never end.
		return hold(ReasonDeactivated, inactiveMessage(w, r.job))
	case gov == w && (condition(w, kueue.WorkloadEvicted) || !condition(w, kueue.WorkloadAdmitted) || w.Status.Admission == nil):
		return hold(ReasonQueued, kueueWait(w, q.Name, k.Preemptor))
	}
	infos, err := podSetInfos(gov, k.Flavors)
	if err == nil {
		err = r.checkPodSetInfos(infos)
	}
	if err != nil {
		hold(ReasonKueueAdmissionConflict, fmt.Sprintf("Workload %s cannot start: %v", name, err))
		d.Blocked, d.Queued = d.Queued, nil
		return true
	}
	r.admission = infos
	return false
}

// workloadActive is a Workload's spec.active, true when unset (Kueue's default).
func workloadActive(w *kueue.Workload) bool {
	return w.Spec.Active == nil || *w.Spec.Active
}

// KueueDeactivation says why Kueue itself made w inactive, which no user's pause did, whatever the
// job's mark says: the cause (MaximumExecutionTimeExceeded, RequeuingLimitExceeded), and Kueue's
// reason and words, from the DeactivationTarget condition it sets first, or, once it has evicted
// w, from the eviction (reason Deactivated<Cause>). Empty when w is active or someone else
// deactivated it.
func KueueDeactivation(w *kueue.Workload) (cause, reason, message string) {
	if w == nil || workloadActive(w) {
		return "", "", ""
	}
	if c := meta.FindStatusCondition(w.Status.Conditions, kueue.WorkloadDeactivationTarget); c != nil && c.Status == metav1.ConditionTrue {
		return c.Reason, c.Reason, c.Message
	}
	c := meta.FindStatusCondition(w.Status.Conditions, kueue.WorkloadEvicted)
	prefix := kueue.EvictedByDeactivation + "DueTo"
	if c != nil && c.Status == metav1.ConditionTrue && strings.HasPrefix(c.Reason, prefix) && c.Reason != prefix {
		return strings.TrimPrefix(c.Reason, prefix), c.Reason, c.Message
	}
	return "", "", ""
}

// inactiveMessage says why a job's Workload w is inactive, when no pause of the user's made it so,
// and how to run the job again; for both APIs.
func inactiveMessage(w *kueue.Workload, j *Job) string {
	resume := fmt.Sprintf("trainyard resume %s/%s", strings.ToLower(j.Kind), j.Name)
	cause, reason, message := KueueDeactivation(w)
	switch {
	case cause == "":
		return fmt.Sprintf("Workload %s is inactive (spec.active: false, set outside trainyard pause): Kueue admits it only once it is active again (%s)", w.Name, resume)
	case cause == kueue.DeactivatedForMaxExecTime && w.Spec.MaximumExecutionTimeSeconds != nil:
		// Note: activating the Workload would not run the job: Kueue counts the time it was
		// admitted (accumulatedPastExecutionTimeSeconds) and would stop it at its next admission.
		return fmt.Sprintf("Kueue deactivated Workload %s: the job ran admitted for its maximum execution time, %d s (%s); "+
			"to run it longer, change the label: the job is queued anew under a new Workload, whose time counts from zero",
			w.Name, *w.Spec.MaximumExecutionTimeSeconds, kueue.LabelMaxExecTime)
	}
	return fmt.Sprintf("Kueue deactivated Workload %s (%s: %s): it admits it only once it is active again (%s)", w.Name, reason, message, resume)
}

// kueueWait says in Kueue's words why it has not admitted the active Workload w of a job in
// LocalQueue queue, or no longer does: the eviction that stopped the job (a preemption, say), and
// what Kueue says of its quota since (its QuotaReserved=False message, "couldn't assign flavors
// ... insufficient unused quota ..."), when that says more. A preemption names the preempting
// job when the controller found it in the job's namespace (KueueObservation.Preemptor). Both
// APIs' jobs say it.
func kueueWait(w *kueue.Workload, queue, preemptor string) string {
	qr := meta.FindStatusCondition(w.Status.Conditions, kueue.WorkloadQuotaReserved)
	if ev := meta.FindStatusCondition(w.Status.Conditions, kueue.WorkloadEvicted); ev != nil && ev.Status == metav1.ConditionTrue {
		msg := fmt.Sprintf("Workload %s was evicted by Kueue (%s: %s)", w.Name, ev.Reason, ev.Message)
		if preemptor != "" && ev.Reason == kueue.EvictedByPreemption {
			msg += " for " + preemptor
		}
		msg += "; waiting to be admitted again"
		// Note: the admission released, QuotaReserved=False repeats the eviction's message until
		// Kueue's scheduler next tries the Workload.
		if qr != nil && qr.Status == metav1.ConditionFalse && qr.Message != "" && qr.Message != ev.Message {
			msg += ": " + qr.Message
		}
		return msg
	}
	msg := fmt.Sprintf("waiting for Kueue to admit Workload %s in LocalQueue %s", w.Name, queue)
	if qr != nil && qr.Message != "" {
		msg += ": " + qr.Message
	}
	return msg
}

// preemptorUID reads the preempting Workload's UID from Kueue's preemption message
// ("Preempted to accommodate a workload (UID: ..., JobUID: ...) due to ...", Kueue v0.11 on).
var preemptorUID = regexp.MustCompile(`\(UID: ([^,()\s]+), JobUID: `)

// PreemptorOf names the job Kueue evicted Workload w to admit (KueueObservation.Preemptor), find
// being how the Workload of a UID is looked up (nil when it is not known): the preempting
// Workload's controller, by kind and name, when it is in w's namespace; else, or when w was not
// preempted, or Kueue's message does not say, empty.
func PreemptorOf(w *kueue.Workload, find func(types.UID) metav1.Object) string {
	if w == nil {
		return ""
	}
	ev := meta.FindStatusCondition(w.Status.Conditions, kueue.WorkloadEvicted)
	if ev == nil || ev.Status != metav1.ConditionTrue || ev.Reason != kueue.EvictedByPreemption {
		return ""
	}
	m := preemptorUID.FindStringSubmatch(ev.Message)
	if m == nil || m[1] == "UNKNOWN" {
		return ""
	}
	p := find(types.UID(m[1]))
	if p == nil || p.GetNamespace() != w.Namespace {
		return ""
	}
	for _, ref := range p.GetOwnerReferences() {
		if ref.Controller != nil && *ref.Controller {
			return ref.Kind + " " + ref.Name
		}
	}
	return "Workload " + p.GetName()
}

// sameAdmissionFields: the two templates agree on what an admission adds to pods, and so may
// contradict (render.applyAdmission): node selector, tolerations, labels and annotations.
func sameAdmissionFields(a, b *corev1.PodTemplateSpec) bool {
	return maps.Equal(a.Spec.NodeSelector, b.Spec.NodeSelector) && maps.Equal(a.Labels, b.Labels) &&
		maps.Equal(a.Annotations, b.Annotations) && equality.Semantic.DeepEqual(a.Spec.Tolerations, b.Spec.Tolerations)
}

// condition reports whether the Workload's condition typ is True.
func condition(w *kueue.Workload, typ string) bool {
	return meta.IsStatusConditionTrue(w.Status.Conditions, typ)
}

// podSetInfo is what the pods of one podSet get from their admission: Kueue's PodSetInfo.
type podSetInfo struct {
	labels       map[string]string
	annotations  map[string]string
	nodeSelector map[string]string
	tolerations  []corev1.Toleration
	// gates are the scheduling gates the pods are created with: Kueue's topology gate when Kueue
	// placed the podSet by topology.
	gates []string
}

// topologyRequest is how a replica type's pods ask Kueue's Topology Aware Scheduling to place
// them, read from the annotations of its pod template as Kueue's jobframework reads them for the
// kinds it integrates: the required, preferred or unconstrained topology (in that order, the first
// set), the group of replica types placed together (beside a required or preferred topology), a
// slice topology with its size, and always the replica-index label as the pods' index, so
// that Kueue places neighbouring ranks in neighbouring domains, also when its ClusterQueue places
// every workload by topology (Kueue's implicit TAS). topologyErrors (validate.go) refuses what
// this reads leniently.
func topologyRequest(t *corev1.PodTemplateSpec) *kueue.TopologyRequest {
	a := t.Annotations
	value := func(k string) *string {
		if v, ok := a[k]; ok {
			return &v
		}
		return nil
	}
	tr := &kueue.TopologyRequest{PodIndexLabel: ptr(batch.LabelReplicaIndex)}
	tr.Required = value(kueue.AnnotationPodSetRequiredTopology)
	if tr.Required == nil {
		tr.Preferred = value(kueue.AnnotationPodSetPreferredTopology)
	}
	if v, ok := a[kueue.AnnotationPodSetUnconstrainedTopology]; ok && tr.Required == nil && tr.Preferred == nil {
		b, _ := strconv.ParseBool(v)
		tr.Unconstrained = &b
	}
	if tr.Required != nil || tr.Preferred != nil {
		tr.PodSetGroupName = value(kueue.AnnotationPodSetGroupName)
	}
	tr.PodSetSliceRequiredTopology = value(kueue.AnnotationPodSetSliceRequiredTopology)
	if n, err := strconv.ParseInt(a[kueue.AnnotationPodSetSliceSize], 10, 32); err == nil && n > 0 && tr.PodSetSliceRequiredTopology != nil {
		tr.PodSetSliceSize = ptr(int32(n))
	}
	return tr
}

// podSetInfos computes each admitted podSet's pod additions as Kueue's jobframework does: the node
// labels and tolerations of every flavour the podSet's resources were assigned (each flavour once),
// the podset label, then the podSetUpdates of the admission checks.
func podSetInfos(w *kueue.Workload, flavors map[string]*kueue.ResourceFlavor) (map[string]*podSetInfo, error) {
	out := map[string]*podSetInfo{}
	for _, a := range w.Status.Admission.PodSetAssignments {
		info := &podSetInfo{
			labels:       map[string]string{kueue.LabelPodSet: a.Name},
			annotations:  map[string]string{},
			nodeSelector: map[string]string{},
		}
		if a.TopologyAssignment != nil {
			// Placed by topology: the pods wait behind Kueue's gate until its topology ungater,
			// which finds them by these annotations, gives each its domain's node selector. A
			// podSet that asked no topology rule (Kueue's implicit TAS) is marked unconstrained.
			info.gates = []string{kueue.TopologySchedulingGate}
			info.annotations[kueue.AnnotationWorkload] = w.Name
			if name := w.Annotations[kueue.AnnotationWorkloadSliceName]; name != "" {
				info.annotations[kueue.AnnotationWorkloadSliceName] = name
			}
			if i := slices.IndexFunc(w.Spec.PodSets, func(p kueue.PodSet) bool { return p.Name == a.Name }); i < 0 || !topologyRule(w.Spec.PodSets[i].TopologyRequest) {
				info.annotations[kueue.AnnotationPodSetUnconstrainedTopology] = "true"
			}
		}
		names := slices.Sorted(maps.Keys(a.Flavors))
		seen := map[string]bool{}
		for _, res := range names {
			f := a.Flavors[res]
			if seen[f] {
				continue
			}
			seen[f] = true
			rf := flavors[f]
			if rf == nil {
				return nil, fmt.Errorf("ResourceFlavor %s of pod set %s is not found", f, a.Name)
			}
			maps.Copy(info.nodeSelector, rf.Spec.NodeLabels)
			info.tolerations = append(info.tolerations, rf.Spec.Tolerations...)
		}
		for _, check := range w.Status.AdmissionChecks {
			for _, u := range check.PodSetUpdates {
				if u.Name != a.Name {
					continue
				}
				for what, m := range map[string][2]map[string]string{
					"labels": {info.labels, u.Labels}, "annotations": {info.annotations, u.Annotations}, "nodeSelector": {info.nodeSelector, u.NodeSelector},
				} {
					if err := mergeStrings(m[0], m[1]); err != nil {
						return nil, fmt.Errorf("admission check %s, pod set %s, %s: %w", check.Name, a.Name, what, err)
					}
				}
				info.tolerations = addTolerations(info.tolerations, u.Tolerations)
			}
		}
		out[a.Name] = info
	}
	return out, nil
}

// topologyRule reports whether tr asks a required, preferred or unconstrained topology.
func topologyRule(tr *kueue.TopologyRequest) bool {
	return tr != nil && (tr.Required != nil || tr.Preferred != nil || tr.Unconstrained != nil)
}

// checkPodSetInfos checks that every replica type has an admitted podSet and that what the
// admission adds does not contradict its template (a node selector set to another value, say).
func (r *renderer) checkPodSetInfos(infos map[string]*podSetInfo) error {
	for _, t := range r.job.Replicas {
		info := infos[t.Type]
		if info == nil {
			return fmt.Errorf("the admission has no pod set %s", t.Type)
		}
		for what, m := range map[string][2]map[string]string{
			"labels": {t.Template.Labels, info.labels}, "annotations": {t.Template.Annotations, info.annotations}, "nodeSelector": {t.Template.Spec.NodeSelector, info.nodeSelector},
		} {
			if err := mergeStrings(maps.Clone(m[0]), m[1]); err != nil {
				return fmt.Errorf("replica type %s, %s: %w", t.Type, what, err)
			}
		}
	}
	return nil
}

// mergeStrings copies from into into, refusing a key that into holds with another value.
func mergeStrings(into, from map[string]string) error {
	for _, k := range slices.Sorted(maps.Keys(from)) {
		if v, ok := into[k]; ok && v != from[k] {
			return fmt.Errorf("%s is %q, the admission wants %q", k, v, from[k])
		}
		if into != nil {
			into[k] = from[k]
		}
	}
	return nil
}

func addTolerations(to, more []corev1.Toleration) []corev1.Toleration {
	for _, t := range more {
		if !slices.ContainsFunc(to, func(e corev1.Toleration) bool { return equality.Semantic.DeepEqual(e, t) }) {
			to = append(to, t)
		}
	}
	return to
}

// applyAdmission gives a pod of replica type t what its podSet's admission adds.
func (r *renderer) applyAdmission(t *ReplicaType, pod *corev1.Pod) {
	info := r.admission[t.Type]
	if info == nil {
		return
	}
	maps.Copy(pod.Labels, info.labels)
	maps.Copy(pod.Annotations, info.annotations)
	if len(info.nodeSelector) > 0 {
		if pod.Spec.NodeSelector == nil {
			pod.Spec.NodeSelector = map[string]string{}
		}
		maps.Copy(pod.Spec.NodeSelector, info.nodeSelector)
	}
	pod.Spec.Tolerations = addTolerations(pod.Spec.Tolerations, info.tolerations)
	for _, g := range info.gates {
		if !slices.ContainsFunc(pod.Spec.SchedulingGates, func(e corev1.PodSchedulingGate) bool { return e.Name == g }) {
			pod.Spec.SchedulingGates = append(pod.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: g})
		}
	}
}

// elasticPodSet is the index of the replica type an elastic job grows and shrinks by (the one its
// elastic split sizes), or -1 when it has none or several: Kueue's partial admission lets one
// podSet only have a minCount.
func elasticPodSet(j *Job) int {
	if j.Elastic == nil {
		return -1
	}
	sized := -1
	weighted := slices.ContainsFunc(j.Replicas, func(t ReplicaType) bool { return t.ScalingWeight > 0 })
	for i, t := range j.Replicas {
		if (weighted && t.ScalingWeight > 0) || (!weighted && t.Type != batch.PyTorchReplicaMaster) {
			if sized >= 0 {
				return -1
			}
			sized = i
		}
	}
	return sized
}

// requestedReplicas are the replica types as the job asks Kueue for them: an elastic job admitted
// partially asks for its expected size still.
func requestedReplicas(j *Job) []ReplicaType {
	if j.Queue == nil || j.Queue.Requested == 0 || j.Elastic == nil {
		return j.Replicas
	}
	return splitElastic(j.Replicas, j.Queue.Requested)
}

// AdmittedJob is j sized to what Kueue admitted: an elastic job whose Workload was admitted with
// fewer pods than asked (partial admission, by the minCount of its elastic podSet) runs with the
// admitted count, split as elastic jobs are, and its Queue.Requested keeps what it asked. Render
// applies it; the controller applies it to the model the status is derived from. Applying it
// twice changes nothing.
//
// A sliced job (Sliced) runs with at most what its admitted Workload grants: the smaller of its
// elastic pod set's count and the admission's (a count lowered in place keeps the admission's).
// Scaled up, it runs at that size until Kueue admits the slice that asks for more.
func AdmittedJob(j Job, k *KueueObservation) Job {
	i := elasticPodSet(&j)
	if j.Queue == nil || j.Queue.Requested != 0 || i < 0 || k == nil || k.Workload == nil {
		return j
	}
	w := k.Workload
	if Sliced(&j) && !admittedNow(w) {
		w = slicePredecessor(&j, k, w)
	}
	if w == nil || w.Status.Admission == nil {
		return j
	}
	typ := j.Replicas[i].Type
	ps := slices.IndexFunc(w.Spec.PodSets, func(p kueue.PodSet) bool { return p.Name == typ })
	as := slices.IndexFunc(w.Status.Admission.PodSetAssignments, func(a kueue.PodSetAssignment) bool { return a.Name == typ })
	if ps < 0 || as < 0 {
		return j
	}
	var short int32
	switch granted := w.Status.Admission.PodSetAssignments[as].Count; {
	case Sliced(&j):
		n := w.Spec.PodSets[ps].Count
		if granted != nil {
			n = min(n, *granted)
		}
		short = j.Replicas[i].Replicas - n
	case granted == nil || w.Spec.PodSets[ps].Count != j.Replicas[i].Replicas:
		return j
	default:
		short = w.Spec.PodSets[ps].Count - *granted
	}
	if short <= 0 {
		return j
	}
	q, e := *j.Queue, *j.Elastic
	q.Requested = e.Expected
	e.Expected = max(e.Expected-short, e.Min)
	j.Queue, j.Elastic = &q, &e
	j.Replicas = splitElastic(j.Replicas, e.Expected)
	return j
}

// desiredWorkload is the Workload that represents the job in its queue.
func (r *renderer) desiredWorkload() *kueue.Workload {
	j := r.job
	w := &kueue.Workload{
		TypeMeta: metav1.TypeMeta{APIVersion: kueue.GroupVersion.String(), Kind: kueue.KindWorkload},
		ObjectMeta: metav1.ObjectMeta{
			Name:            WorkloadName(j),
			Namespace:       j.Namespace,
			Labels:          jobLabels(j),
			OwnerReferences: []metav1.OwnerReference{ownerRef(j)},
		},
		Spec: kueue.WorkloadSpec{QueueName: j.Queue.Name, MaximumExecutionTimeSeconds: j.Queue.maxExecSeconds()},
	}
	w.Labels[kueue.LabelJobUID] = string(j.UID)
	if j.Pause {
		// Created for a paused job: inactive until the user resumes it.
		w.Annotations = map[string]string{AnnotationDeactivated: "true"}
		w.Spec.Active = ptr(false)
	}
	if p := r.in.Kueue.Priority; p != nil {
		ref := p.Ref
		w.Spec.PriorityClassRef, w.Spec.Priority = &ref, ptr(p.Value)
	}
	requested := requestedReplicas(j)
	for _, t := range requested {
		w.Spec.PodSets = append(w.Spec.PodSets, kueue.PodSet{Name: t.Type, Count: t.Replicas, Template: *t.Template.DeepCopy(), TopologyRequest: topologyRequest(t.Template)})
	}
	if Sliced(j) {
		// Kueue reads the annotation on the Workload; the chain of slices is named after its first.
		if w.Annotations == nil {
			w.Annotations = map[string]string{}
		}
		w.Annotations[kueue.AnnotationElasticJob] = "true"
		w.Annotations[kueue.AnnotationWorkloadSliceName] = w.Name
		return w
	}
	// An elastic job may start with fewer pods than it asks, down to minReplicas: its elastic
	// podSet's minCount (Kueue admits partially only with its PartialAdmission feature, on by
	// default, and drops minCount without it).
	if i := elasticPodSet(j); i >= 0 {
		asked := j.Elastic.Expected
		if j.Queue.Requested != 0 {
			asked = j.Queue.Requested
		}
		if least := max(requested[i].Replicas-(asked-j.Elastic.Min), 1); least < requested[i].Replicas {
			w.Spec.PodSets[i].MinCount = ptr(least)
		}
	}
	return w
}

// staleWorkload says what of the job the observed Workload no longer matches (empty when it
// matches): its queue or its replicas (pod set names and counts: the job was scaled or moved to
// another queue), its maximum execution time, or, for one finished because its admission
// contradicted the templates (FailedToStart), its templates, mended since: a new Workload may be
// admitted.
func (r *renderer) staleWorkload(w *kueue.Workload) string {
	requested := requestedReplicas(r.job)
	switch {
	case w.Spec.QueueName != r.job.Queue.Name:
		return "queue"
	case len(w.Spec.PodSets) != len(requested):
		return "replicas"
	// Kueue keeps a Workload's maximum execution time while it holds quota; a label edited
	// meanwhile takes effect when the job is next queued, as Kueue's webhook lets its own jobs'
	// label change only while they are suspended. A new Workload starts the count again.
	case !equalPtr(w.Spec.MaximumExecutionTimeSeconds, r.job.Queue.maxExecSeconds()) && !condition(w, kueue.WorkloadQuotaReserved):
		return "maximum execution time (" + kueue.LabelMaxExecTime + ")"
	}
	if c := meta.FindStatusCondition(w.Status.Conditions, kueue.WorkloadFinished); c != nil && c.Status == metav1.ConditionTrue && c.Reason == kueue.FinishedFailedToStart {
		for i, t := range requested {
			if !sameAdmissionFields(&w.Spec.PodSets[i].Template, t.Template) {
				return "mended templates"
			}
		}
	}
	// A sliced job running under w changes its elastic pod set's count through slices, not a new
	// Workload (sliceDecisions); evicted, it keeps w until its pods are gone and the admission is
	// released, and then asks for its size anew.
	grows := -1
	evicted := condition(w, kueue.WorkloadEvicted) && condition(w, kueue.WorkloadQuotaReserved)
	if Sliced(r.job) && (admittedNow(w) || evicted || slicePredecessor(r.job, r.in.Kueue, w) != nil) {
		grows = elasticPodSet(r.job)
	}
	for i, t := range requested {
		if ps := w.Spec.PodSets[i]; ps.Name != t.Type || (ps.Count != t.Replicas && i != grows) {
			return "replicas"
		}
	}
	return ""
}

// sliceDecisions decides for a sliced job (Sliced) what its slices need: while it runs under its
// admitted Workload w, a count lowered in place when it shrinks, and when it grows a slice that
// asks for the new size in place of w; the slices it no longer needs deleted (all of them when
// w is nil).
func (r *renderer) sliceDecisions(kd *KueueDecisions, w *kueue.Workload, ended bool) {
	k := r.in.Kueue
	pred := slicePredecessor(r.job, r.in.Kueue, w)
	for _, o := range k.Others {
		if o != pred {
			kd.Delete = append(kd.Delete, o.Name)
		}
	}
	rep := k.Replacement
	drop := func() {
		if rep != nil {
			kd.Delete = append(kd.Delete, rep.Name)
		}
	}
	if ended || r.job.Pause || !admittedNow(w) || r.admission == nil {
		drop()
		return
	}
	i := elasticPodSet(r.job)
	want := requestedReplicas(r.job)
	switch d, cur := want[i].Replicas, w.Spec.PodSets[i].Count; {
	case d < cur:
		kd.ScaleDown = &PodSetCount{Index: i, Name: want[i].Type, Count: d}
		drop()
	case d == cur:
		drop()
	case rep == nil:
		r.growing(want, nil)
		slice := r.desiredWorkload()
		slice.Name = sliceName(r.job, w.Name, want)
		slice.Annotations[kueue.AnnotationWorkloadSliceName] = cmp.Or(w.Annotations[kueue.AnnotationWorkloadSliceName], w.Name)
		slice.Annotations[kueue.AnnotationWorkloadSliceReplacementFor] = w.Namespace + "/" + w.Name
		if u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(slice); err == nil {
			r.out.KueueWorkload = &unstructured.Unstructured{Object: u}
			kd.Create = true
		}
	case !slices.EqualFunc(rep.Spec.PodSets, want, func(ps kueue.PodSet, t ReplicaType) bool { return ps.Name == t.Type && ps.Count == t.Replicas }):
		drop() // asks for another size: a new slice follows once it is gone
	default:
		r.growing(want, rep)
	}
}

// growing says, in the Running condition, that a sliced job runs at its admitted size while the
// slice asking for want waits for Kueue (rep, or nil while it is being created).
func (r *renderer) growing(want []ReplicaType, rep *kueue.Workload) {
	d := &r.out.Decisions
	if d.Phase != batch.JobRunning || d.Message != "" {
		return
	}
	var asked int32
	for _, t := range want {
		asked += t.Replicas
	}
	d.Message = fmt.Sprintf("%d of the %d replicas asked for are running; the rest wait for Kueue to admit the job's new size", r.job.PodCount(), asked)
	if rep != nil {
		d.Message += " (" + kueueWait(rep, r.job.Queue.Name, "") + ")"
	}
}

// kueueDecisions decides, after the round's other decisions, what the job's Workload needs: to
// be created or replaced, (de)activated with the user's pause, released after an eviction, marked
// PodsReady or Finished.
func (r *renderer) kueueDecisions() {
	k := r.in.Kueue
	if r.job.Queue == nil || k == nil || !r.in.InstalledCRDs[kueue.WorkloadCRD] || k.PriorityError != "" {
		return
	}
	d := &r.out.Decisions
	if q := r.job.Queue; q.Slices && !Sliced(r.job) {
		why := "it is not elastic (spec.elastic with torchrun)"
		switch {
		case q.Prebuilt != "" || r.job.Dispatched:
			why = "its Workload is made by MultiKueue"
		case r.job.Elastic != nil:
			why = "more than one of its replica types has a scalingWeight"
		}
		r.warn(WarnNoSlices, fmt.Sprintf("%s: \"true\" asks for Kueue's workload slices, but %s: a new size replaces the job's Workload, and its pods go until Kueue admits the new one", kueue.AnnotationElasticJob, why))
	}
	kd := &KueueDecisions{Workload: WorkloadName(r.job), Admitted: r.admission != nil}
	d.Kueue = kd
	ended := r.terminal()
	w := k.Workload
	prebuilt := r.job.Queue.Prebuilt != ""
	if w != nil {
		kd.Workload = w.Name // a sliced job's slices have names of their own
		if r.admission != nil {
			for _, n := range w.Status.UnhealthyNodes {
				kd.UnhealthyNodes = append(kd.UnhealthyNodes, n.Name)
			}
		}
	}
	if !ended && !prebuilt {
		desired := r.desiredWorkload()
		if w != nil && Sliced(r.job) {
			desired.Name = w.Name
			for _, a := range []string{kueue.AnnotationWorkloadSliceName, kueue.AnnotationWorkloadSliceReplacementFor} {
				if v := w.Annotations[a]; v != "" {
					desired.Annotations[a] = v
				}
			}
		}
		if w == nil {
			kd.Create = true
		}
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(desired)
		if err == nil {
			r.out.KueueWorkload = &unstructured.Unstructured{Object: u}
		}
	}
	if w == nil {
		if Sliced(r.job) {
			// Slices Kueue replaced, whose replacement is gone, go: the job's first Workload
			// may need one's name.
			r.sliceDecisions(kd, nil, ended)
		}
		return
	}
	kd.Adopt = r.adopt(w)
	set := func(typ string, status bool, reason, message string) {
		s := metav1.ConditionFalse
		if status {
			s = metav1.ConditionTrue
		}
		if c := meta.FindStatusCondition(w.Status.Conditions, typ); c != nil && c.Status == s && c.Reason == reason && c.Message == message {
			return
		}
		kd.Conditions = append(kd.Conditions, metav1.Condition{Type: typ, Status: s, Reason: reason, Message: message, LastTransitionTime: r.now, ObservedGeneration: w.Generation})
	}
	if !ended && r.staleWorkload(w) != "" {
		if k.Replacement != nil {
			kd.Delete = append(kd.Delete, k.Replacement.Name) // it would replace what goes
		}
		switch {
		case !prebuilt:
			kd.Replace = true
		case !condition(w, kueue.WorkloadFinished):
			// Not the job's to replace: marked Finished, as Kueue's jobframework does
			// (multikueue.go), and MultiKueue dispatches the job again.
			set(kueue.WorkloadFinished, true, kueue.FinishedOutOfSync, "The prebuilt workload is out of sync with its user job")
		}
		return
	}
	if Sliced(r.job) {
		r.sliceDecisions(kd, w, ended)
	}
	active := w.Spec.Active == nil || *w.Spec.Active
	switch {
	case r.job.Pause && active && !ended:
		kd.SetActive = ptr(false)
	case !r.job.Pause && !active && w.Annotations[AnnotationDeactivated] != "":
		kd.SetActive = ptr(true)
	}
	if ended {
		if !condition(w, kueue.WorkloadFinished) {
			reason := kueue.FinishedSucceeded
			if d.Phase == batch.JobFailed {
				reason = kueue.FinishedFailed
			}
			msg := d.Message
			if msg == "" {
				msg = "the job " + strings.ToLower(string(d.Phase))
			}
			set(kueue.WorkloadFinished, true, reason, msg)
		}
		return
	}
	if d.Blocked != nil && d.Blocked.Reason == ReasonKueueAdmissionConflict {
		if !condition(w, kueue.WorkloadFinished) {
			set(kueue.WorkloadFinished, true, kueue.FinishedFailedToStart, d.Blocked.Message)
		}
		return
	}
	if ev := meta.FindStatusCondition(w.Status.Conditions, kueue.WorkloadEvicted); ev != nil && ev.Status == metav1.ConditionTrue {
		if condition(w, kueue.WorkloadQuotaReserved) && !r.podsActive() {
			requeue := ev.Reason == kueue.EvictedByPreemption || ev.Reason == kueue.EvictedByNodeFailures
			set(kueue.WorkloadRequeued, requeue, ev.Reason, ev.Message)
			set(kueue.WorkloadQuotaReserved, false, kueue.QuotaReservedPending, ev.Message)
			if condition(w, kueue.WorkloadAdmitted) {
				set(kueue.WorkloadAdmitted, false, "NoReservation", "The workload has no reservation")
			}
			kd.ReleaseAdmission = true
		}
	}
	if !r.job.Dispatched && slicePredecessor(r.job, r.in.Kueue, w) == nil {
		r.podsReady(w, set)
	}
}

// podsActive reports whether a pod of the job may still hold resources after this round: one that
// is neither finished nor gone. An evicted Workload keeps its quota until none is left.
func (r *renderer) podsActive() bool {
	for _, p := range r.allObserved() {
		if ph := p.pod.Status.Phase; ph != corev1.PodSucceeded && ph != corev1.PodFailed {
			return true
		}
	}
	return false
}

// podsReady keeps the Workload's PodsReady condition, as Kueue's jobframework does for its
// waitForPodsReady: True once every replica runs (or has succeeded) under an admission, False
// (waiting for start, or for recovery after a pod was lost) otherwise. A False condition is not
// written where none exists yet (Kueue reads a missing one as not ready).
func (r *renderer) podsReady(w *kueue.Workload, set func(typ string, status bool, reason, message string)) {
	prev := meta.FindStatusCondition(w.Status.Conditions, kueue.WorkloadPodsReady)
	if r.admission == nil {
		if prev != nil {
			set(kueue.WorkloadPodsReady, false, kueue.PodsReadyWaitForStart, "Not all pods are ready or succeeded")
		}
		return
	}
	var ready int32
	for _, p := range r.observed {
		if ph := p.pod.Status.Phase; (ph == corev1.PodRunning || ph == corev1.PodSucceeded) && !p.deleting && p.pod.DeletionTimestamp == nil {
			ready++
		}
	}
	switch {
	case ready >= r.job.PodCount():
		reason := kueue.PodsReadyStarted
		if prev != nil && (prev.Reason == kueue.PodsReadyWaitForRecovery || prev.Reason == kueue.PodsReadyRecovered) {
			reason = kueue.PodsReadyRecovered
		}
		set(kueue.WorkloadPodsReady, true, reason, "All pods reached readiness and the workload is running")
	case prev == nil:
	case prev.Status == metav1.ConditionTrue || prev.Reason == kueue.PodsReadyWaitForRecovery:
		set(kueue.WorkloadPodsReady, false, kueue.PodsReadyWaitForRecovery, "At least one pod has failed, waiting for recovery")
	default:
		set(kueue.WorkloadPodsReady, false, kueue.PodsReadyWaitForStart, "Not all pods are ready or succeeded")
	}
}

// PriorityOf resolves a queued job's priority as Kueue's jobframework does for a job it does not
// know better: the WorkloadPriorityClass its label names, else the PriorityClass of the first
// replica template that names one, else none. value looks a class up; found is false when it does
// not exist, and the job then waits with a message saying so.
func PriorityOf(j *Job, value func(ref kueue.PriorityClassRef) (v int32, found bool)) (*WorkloadPriority, string) {
	var ref kueue.PriorityClassRef
	switch {
	case j.Queue == nil:
		return nil, ""
	case j.Queue.PriorityClass != "":
		ref = kueue.PriorityClassRef{Group: kueue.PriorityClassGroupKueue, Kind: kueue.KindWorkloadPriorityClass, Name: j.Queue.PriorityClass}
	default:
		for _, t := range j.Replicas {
			if n := t.Template.Spec.PriorityClassName; n != "" {
				ref = kueue.PriorityClassRef{Group: kueue.PriorityClassGroupPod, Kind: kueue.PriorityClassKindPod, Name: n}
				break
			}
		}
	}
	if ref.Name == "" {
		return nil, ""
	}
	v, found := value(ref)
	if !found {
		return nil, fmt.Sprintf("%s %s is not found: Kueue needs it for the Workload's priority", ref.Kind, ref.Name)
	}
	return &WorkloadPriority{Ref: ref, Value: v}, ""
}

// ReadObservedKueue reads, for a queued job, Kueue's objects among observed documents (the format
// of ReadObserved): the job's Workload (by its name), every ResourceFlavor, and the priority
// classes its priority resolves through. For a kubeflow.org job Kueue queues itself, only its
// Workload: the one the job controls; nil when the documents hold no Workload at all (not
// observed). It returns nil for a job that is not queued.
func ReadObservedKueue(data []byte, j *Job) (*KueueObservation, error) {
	if j.Kubeflow != nil && j.Kubeflow.KueueQueue != "" {
		return readKubeflowWorkload(data, j)
	}
	if j.Queue == nil {
		return nil, nil
	}
	docs, err := observedDocuments(data)
	if err != nil {
		return nil, err
	}
	obs := &KueueObservation{Flavors: map[string]*kueue.ResourceFlavor{}}
	values := map[kueue.PriorityClassRef]int32{}
	workloads := map[types.UID]*kueue.Workload{}
	var sliced []*kueue.Workload // a sliced job's: the one it names, and those it controls
	for i, doc := range docs {
		var head struct {
			Kind     string            `json:"kind"`
			Metadata metav1.ObjectMeta `json:"metadata"`
			Value    int32             `json:"value"`
		}
		if err := yaml.Unmarshal(doc, &head); err != nil {
			return nil, fmt.Errorf("observed document %d: %w", i+1, err)
		}
		switch head.Kind {
		case kueue.KindWorkload:
			w := &kueue.Workload{}
			if err := yaml.Unmarshal(doc, w); err != nil {
				return nil, fmt.Errorf("observed document %d (Workload): %w", i+1, err)
			}
			workloads[w.UID] = w
			if w.Name == WorkloadName(j) {
				obs.Workload = w
			}
			if c := metav1.GetControllerOfNoCopy(w); Sliced(j) && (w.Name == WorkloadName(j) || c != nil && c.UID == j.UID) {
				sliced = append(sliced, w)
			}
		case kueue.KindResourceFlavor:
			rf := &kueue.ResourceFlavor{}
			if err := yaml.Unmarshal(doc, rf); err != nil {
				return nil, fmt.Errorf("observed document %d (ResourceFlavor): %w", i+1, err)
			}
			obs.Flavors[rf.Name] = rf
		case kueue.KindWorkloadPriorityClass:
			values[kueue.PriorityClassRef{Group: kueue.PriorityClassGroupKueue, Kind: head.Kind, Name: head.Metadata.Name}] = head.Value
		case kueue.PriorityClassKindPod:
			values[kueue.PriorityClassRef{Group: kueue.PriorityClassGroupPod, Kind: head.Kind, Name: head.Metadata.Name}] = head.Value
		}
	}
	if len(sliced) > 0 {
		obs.Workload, obs.Replacement, obs.Others = SliceWorkloads(sliced)
	}
	obs.Priority, obs.PriorityError = PriorityOf(j, func(ref kueue.PriorityClassRef) (int32, bool) {
		v, ok := values[ref]
		return v, ok
	})
	obs.Preemptor = PreemptorOf(obs.Workload, workloadByUID(workloads))
	return obs, nil
}

// workloadByUID looks Workloads up among observed ones (PreemptorOf's find).
func workloadByUID(ws map[types.UID]*kueue.Workload) func(types.UID) metav1.Object {
	return func(uid types.UID) metav1.Object {
		if w := ws[uid]; w != nil {
			return w
		}
		return nil
	}
}

// readKubeflowWorkload reads the Workload a kubeflow.org job controls among observed documents.
func readKubeflowWorkload(data []byte, j *Job) (*KueueObservation, error) {
	docs, err := observedDocuments(data)
	if err != nil {
		return nil, err
	}
	var obs *KueueObservation
	workloads := map[types.UID]*kueue.Workload{}
	for i, doc := range docs {
		var head struct {
			Kind string `json:"kind"`
		}
		if err := yaml.Unmarshal(doc, &head); err != nil {
			return nil, fmt.Errorf("observed document %d: %w", i+1, err)
		}
		if head.Kind != kueue.KindWorkload {
			continue
		}
		if obs == nil {
			obs = &KueueObservation{}
		}
		w := &kueue.Workload{}
		if err := yaml.Unmarshal(doc, w); err != nil {
			return nil, fmt.Errorf("observed document %d (Workload): %w", i+1, err)
		}
		workloads[w.UID] = w
		if c := metav1.GetControllerOfNoCopy(w); c != nil && c.UID == j.UID {
			obs.Workload = w
		}
	}
	if obs != nil {
		obs.Preemptor = PreemptorOf(obs.Workload, workloadByUID(workloads))
	}
	return obs, nil
}
