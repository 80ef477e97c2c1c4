package status

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
	"github.com/trainyard/trainyard/render"
)

// cause is why a job is not (fully) running: the Waiting condition's reason and message.
type cause struct {
	reason, message string
}

// maxWaitingMessage bounds the Waiting message: it is read in `kubectl get -o wide`, and the
// scheduler's and the API server's words can be long.
const maxWaitingMessage = 1024

// kubeletWaitingReasons are the container waiting reasons that mean a container cannot start
// until someone fixes something; passed on as the Waiting reason. ContainerCreating and
// PodInitializing are progress, not causes.
var kubeletWaitingReasons = map[string]bool{
	"ErrImagePull":               true,
	"ImagePullBackOff":           true,
	"InvalidImageName":           true,
	"ErrImageNeverPull":          true,
	"CreateContainerConfigError": true,
	"CreateContainerError":       true,
	"RunContainerError":          true,
	"CrashLoopBackOff":           true,
}

// waitingCause names the one cause that keeps the job from running fully, in order of what must
// be fixed first: a spec render refuses, a missing PodGroup kind, a queue that has not admitted
// the job, its gang object or pod creation refused by the API server, replicas lost or being
// restarted or waiting for a restart's back-off, a gang scheduler holding the pods, pods the scheduler cannot place, containers that
// cannot start, pods not created yet while the scheduler catches up
// (Decisions.HeldForScheduler). A finished or paused job, and one whose pods all run, has none.
func waitingCause(in Input, st *batch.TrainingJobStatus) *cause {
	if in.Out == nil {
		msg := "the job cannot be run"
		if in.RenderErr != nil {
			msg = in.RenderErr.Error()
		}
		return &cause{ReasonInvalidSpec, msg}
	}
	d := &in.Out.Decisions
	if b := d.Blocked; b != nil {
		return &cause{b.Reason, b.Message}
	}
	// Kueue's hold comes first: a kubeflow.org job Kueue holds is suspended, and so paused.
	if q := d.Queued; q != nil {
		return &cause{q.Reason, q.Message}
	}
	if d.Phase == batch.JobSucceeded || d.Phase == batch.JobFailed || d.Phase == batch.JobPaused || in.Job.Pause {
		return nil
	}
	if in.GangRefused != "" {
		return &cause{batch.ReasonCreateFailed, "the API server refused the job's gang object, so no pod is created: " + in.GangRefused}
	}
	if in.NameTaken != "" {
		return &cause{render.ReasonNameConflict, in.NameTaken}
	}
	if in.CreateRefused.Message != "" {
		return &cause{batch.ReasonCreateFailed, "the API server refused to create pods: " + in.CreateRefused.Message + templateHint(in.Job, in.CreateRefused.InvalidPod)}
	}
	desired := in.Job.PodCount()
	if lost := countPods(in.Pods, nodeLost); lost > 0 {
		if at := d.NodeLostAt; at != nil {
			// Evicted (the taint manager's graceful delete) from a node not Ready for less than the
			// operator's bound: nothing replaces them before it, as the node may come back.
			return &cause{batch.ReasonNodeLost, fmt.Sprintf("%d of %d pods were evicted from a node that is not ready; "+
				"they are replaced at %s, when it has been not ready for the operator's --node-lost-after, unless it is Ready before",
				lost, desired, at.UTC().Format(time.RFC3339))}
		}
		return &cause{batch.ReasonNodeLost, fmt.Sprintf("%d of %d pods lost their node and are being replaced", lost, desired)}
	}
	if len(d.Restarts) > 0 {
		return &cause{batch.ReasonRestarting, "restarting: " + restartMessage(d)}
	}
	if d.RestartAt != nil {
		return &cause{batch.ReasonRestarting, d.Message}
	}
	if st.Aggregate.Running+st.Aggregate.Succeeded >= desired {
		return nil
	}
	// A restart stays the cause until the restarted replicas run again.
	if c := meta.FindStatusCondition(st.Conditions, batch.ConditionReplicaFailure); c != nil &&
		c.Status == metav1.ConditionTrue && c.Reason == batch.ReasonRestarting && !anyScheduleProblem(in.Pods) {
		return &cause{batch.ReasonRestarting, "restarting: " + c.Message}
	}
	if unbound := countPods(in.Pods, Unbound); unbound > 0 {
		if c := gangCause(in.Gang, in.Pods, unbound, desired); c != nil {
			return c
		}
	}
	if c := podCause(in.Pods, desired); c != nil {
		if k := d.Kueue; c.reason == batch.ReasonSchedulingGated && k != nil && len(k.UnhealthyNodes) > 0 {
			c.message = strings.Replace(c.message, gatedWords, fmt.Sprintf(
				"held by Kueue's topology gate (kueue.x-k8s.io/topology) while Kueue finds other nodes for the pods it placed on %s, which failed (tainted, not ready or gone)",
				strings.Join(k.UnhealthyNodes, ", ")), 1)
		}
		return c
	}
	if c := unlookedCause(in.Job, in.Pods, desired, in.Now); c != nil {
		return c
	}
	if held := d.HeldForScheduler; held > 0 {
		return &cause{batch.ReasonPodsPaced, fmt.Sprintf("%d of %d pods not created yet: they follow as the scheduler binds the pods created before them", held, desired)}
	}
	return nil
}

// Unbound reports a pod that waits for a node: pending, not going, and with no container a kubelet
// has reported on (the trimmed cache keeps no nodeName).
func Unbound(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodPending && p.DeletionTimestamp == nil &&
		len(p.Status.ContainerStatuses) == 0 && len(p.Status.InitContainerStatuses) == 0
}

func countPods(pods []*corev1.Pod, match func(*corev1.Pod) bool) int32 {
	var n int32
	for _, p := range pods {
		if match(p) {
			n++
		}
	}
	return n
}

// nodeLost: the pod is being deleted because its node is gone (the taint manager's or the pod
// garbage collector's DisruptionTarget, or the node controller's NodeLost reason).
func nodeLost(p *corev1.Pod) bool {
	if p.DeletionTimestamp == nil {
		return false
	}
	if p.Status.Reason == "NodeLost" {
		return true
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue &&
			(c.Reason == "DeletionByTaintManager" || c.Reason == "DeletionByPodGC") {
			return true
		}
	}
	return false
}

// kubernetesScheduledCondition are the types of the condition in which the kube-scheduler says
// whether a PodGroup's gang could be placed: PodGroupScheduled (scheduling.k8s.io/v1alpha2,
// Kubernetes 1.36), PodGroupInitiallyScheduled (v1alpha3 and v1beta1, 1.37).
var kubernetesScheduledCondition = map[string]bool{"PodGroupScheduled": true, "PodGroupInitiallyScheduled": true}

// gangCause reads the gang scheduler's verdict from the live PodGroup: the kube-scheduler's
// kubernetesScheduledCondition when False, Volcano's and coscheduling's phase before Running,
// with the message of their latest condition, or else the scheduler's words on the pods
// (coscheduling's PodGroup has no conditions: why the gang does not fit is on its pods).
func gangCause(gang *unstructured.Unstructured, pods []*corev1.Pod, unbound, desired int32) *cause {
	if gang == nil {
		return nil
	}
	prefix := fmt.Sprintf("%d of %d pods held by the gang scheduler", unbound, desired)
	conds, _, _ := unstructured.NestedSlice(gang.Object, "status", "conditions")
	if gang.GroupVersionKind().Group == render.KubernetesGangGroup {
		for _, c := range conds {
			m, _ := c.(map[string]any)
			if !kubernetesScheduledCondition[fmt.Sprint(m["type"])] {
				continue
			}
			switch m["status"] {
			case "False":
				return &cause{batch.ReasonGangWaiting, prefix + ": " + fmt.Sprint(m["message"])}
			case "True":
				return nil
			}
		}
		return &cause{batch.ReasonGangWaiting, prefix + ": waiting until the gang's pods can be placed together"}
	}
	phase, _, _ := unstructured.NestedString(gang.Object, "status", "phase")
	switch phase {
	case "Running", "Scheduled", "Finished", "Completed", "Succeeded", "Failed":
		return nil
	case "":
		phase = "not yet seen by its scheduler"
	}
	msg := fmt.Sprintf("%s (PodGroup %s)", prefix, phase)
	// The latest condition carries the scheduler's own words (Volcano's Unschedulable message).
	var latest map[string]any
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["message"] != nil && m["message"] != "" {
			latest = m
		}
	}
	switch {
	case latest != nil:
		msg += ": " + fmt.Sprint(latest["message"])
	default:
		if c := podCause(pods, desired); c != nil && c.reason == batch.ReasonUnschedulable {
			msg += "; the scheduler says of " + c.message
		}
	}
	return &cause{batch.ReasonGangWaiting, msg}
}

// podCause groups the pods that do not run by why: the scheduler's PodScheduled=False (a missing
// PersistentVolumeClaim and scheduling gates apart), or a container's waiting reason. The most urgent group wins:
// scheduling before the kubelet, and within a group the most pods; its message counts the pods
// and quotes the most common words.
func podCause(pods []*corev1.Pod, desired int32) *cause {
	type group struct {
		reason string
		rank   int
		pods   int32
		words  map[string]int
	}
	groups := map[string]*group{}
	add := func(reason string, rank int, words string) {
		g := groups[reason]
		if g == nil {
			g = &group{reason: reason, rank: rank, words: map[string]int{}}
			groups[reason] = g
		}
		g.pods++
		g.words[words]++
	}
	for _, p := range pods {
		if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodRunning || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		if c := scheduledFalse(p); c != nil {
			switch {
			case c.Reason == corev1.PodReasonSchedulingGated:
				add(batch.ReasonSchedulingGated, 1, gatedWords)
			case strings.Contains(c.Message, "persistentvolumeclaim") && strings.Contains(c.Message, "not found"):
				add(batch.ReasonPVCNotFound, 0, c.Message)
			default:
				add(batch.ReasonUnschedulable, 1, c.Message)
			}
			continue
		}
		for _, cs := range append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
			if w := cs.State.Waiting; w != nil && kubeletWaitingReasons[w.Reason] {
				add(w.Reason, 2, w.Message)
				break
			}
		}
	}
	if len(groups) == 0 {
		return nil
	}
	all := make([]*group, 0, len(groups))
	for _, g := range groups {
		all = append(all, g)
	}
	sort.Slice(all, func(a, b int) bool {
		if all[a].rank != all[b].rank {
			return all[a].rank < all[b].rank
		}
		if all[a].pods != all[b].pods {
			return all[a].pods > all[b].pods
		}
		return all[a].reason < all[b].reason
	})
	g := all[0]
	words, n := "", 0
	for w, c := range g.words {
		if c > n || (c == n && w < words) {
			words, n = w, c
		}
	}
	msg := fmt.Sprintf("%d of %d pods", g.pods, desired)
	if words != "" {
		msg += ": " + words
	}
	return &cause{g.reason, msg}
}

// anyScheduleProblem: some pod cannot be placed or started, which a restart in progress must not
// hide.
func anyScheduleProblem(pods []*corev1.Pod) bool {
	return podCause(pods, 0) != nil
}

// ReasonNotScheduled: pods no scheduler has looked at for notScheduledAfter (a template's
// schedulerName naming a scheduler that is not running).
const ReasonNotScheduled = "NotScheduled"

// notScheduledAfter is how long a pod may wait for its scheduler's first word (a binding, or
// PodScheduled=False) before the job says no scheduler looks at it.
const notScheduledAfter = 30 * time.Second

// AwaitsScheduler: some pod waits for its scheduler's first word, for less than
// notScheduledAfter, so the Waiting condition may change with no event to wake the job.
func AwaitsScheduler(pods []*corev1.Pod, now time.Time) bool {
	for _, p := range pods {
		if render.Unscheduled(p) && now.Sub(p.CreationTimestamp.Time) < notScheduledAfter {
			return true
		}
	}
	return false
}

// unlookedCause counts the pods no scheduler has looked at for notScheduledAfter, naming the
// scheduler their template asks for: one that is not running (a typo, or Volcano not installed)
// leaves them with no condition at all, so no other cause says why the job does not run.
func unlookedCause(j *render.Job, pods []*corev1.Pod, desired int32, now time.Time) *cause {
	var n int32
	names := map[string]bool{}
	for _, p := range pods {
		if !render.Unscheduled(p) || p.CreationTimestamp.IsZero() || now.Sub(p.CreationTimestamp.Time) < notScheduledAfter {
			continue
		}
		n++
		name := corev1.DefaultSchedulerName
		for _, t := range j.Replicas {
			if t.Type == p.Labels[batch.LabelReplicaType] && t.Template != nil && t.Template.Spec.SchedulerName != "" {
				name = t.Template.Spec.SchedulerName
			}
		}
		names[name] = true
	}
	if n == 0 {
		return nil
	}
	return &cause{ReasonNotScheduled, fmt.Sprintf("%d of %d pods: no scheduler has looked at them in %s (schedulerName %s): is that scheduler running?",
		n, desired, notScheduledAfter, strings.Join(slices.Sorted(maps.Keys(names)), ", "))}
}

// scheduledFalse is the pod's PodScheduled=False condition, if it has one.
func scheduledFalse(p *corev1.Pod) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		c := &p.Status.Conditions[i]
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return c
		}
	}
	return nil
}

// setWaiting sets the Waiting condition to c, or removes it when there is no cause.
func setWaiting(st *batch.TrainingJobStatus, c *cause, now metav1.Time) {
	if c == nil {
		meta.RemoveStatusCondition(&st.Conditions, batch.ConditionWaiting)
		return
	}
	setCondition(st, now, batch.ConditionWaiting, true, c.reason, shorten(strings.TrimSpace(c.message), maxWaitingMessage))
}

// templateHint, for a pod the API server found invalid, names the job's field the pod is made
// from: the refusal names the pod's fields (spec.containers[0].resources.requests), which are
// that template's. Empty for other refusals (a quota, a policy), which name no field.
func templateHint(job *render.Job, invalidPod string) string {
	if invalidPod == "" || job == nil {
		return ""
	}
	path, ok := job.TemplateOfPod(invalidPod)
	if !ok {
		return ""
	}
	return fmt.Sprintf(" (pod %s is made from %s: its spec is %s.spec)", invalidPod, path, path)
}

// Refusal is the API server's answer to a write it refused: its message and, when it found a pod
// invalid, that pod's name, read from the answer's details (its kind and name), not its text.
type Refusal struct {
	Message    string
	InvalidPod string
}

// RefusalOf is err as a Refusal: the API server's own message, or err's text when err is not an
// API server's answer (a webhook's or a transport's error wrapped by the client).
func RefusalOf(err error) Refusal {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return Refusal{Message: err.Error()}
	}
	s := status.Status()
	r := Refusal{Message: s.Message}
	if d := s.Details; s.Reason == metav1.StatusReasonInvalid && d != nil && d.Kind == "Pod" && d.Name != "" {
		r.InvalidPod = d.Name
	}
	return r
}

// gatedWords say why pods wait behind scheduling gates: the scheduler's words ("Scheduling is
// blocked due to non-empty scheduling gates") name no gate, and the cached pod keeps none, so the
// usual one is said.
const gatedWords = "held by scheduling gates, which the scheduler waits to see removed (a job Kueue places by topology: kueue.x-k8s.io/topology, until Kueue gives each pod its node; is Kueue running?)"
