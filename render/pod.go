package render

import (
	"fmt"
	"maps"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
)

// PodName is the name, and the hostname, of replica index of type typ: J-<type>-<index>.
func PodName(job, typ string, index int32) string {
	return job + "-" + typ + "-" + strconv.FormatInt(int64(index), 10)
}

// schedulerRoom is how many missing pods this round may create under Input.MaxUnscheduledPods and
// Input.SchedulerRoom, or -1 when there is no bound (none asked, or a gang-scheduled job).
func (r *renderer) schedulerRoom() int {
	if r.in.MaxUnscheduledPods <= 0 || gangOf(r.job) != nil {
		return -1
	}
	waiting := 0
	for _, o := range r.observed {
		if Unscheduled(o.pod) {
			waiting++
		}
	}
	r.out.Decisions.WaitingForScheduler = int32(waiting)
	window := r.in.MaxUnscheduledPods
	if room := r.in.SchedulerRoom; room != nil && int(r.job.PodCount())-len(r.observed) > window {
		window = max(1, min(window, *room))
	}
	return max(0, window-waiting)
}

// Unscheduled reports a pod that waits for the scheduler: not bound to a node, not going, and not
// yet found unschedulable (a pod that is, PodScheduled=False, has had its turn: it no longer holds
// up the job's other pods, and the cluster autoscaler sees it). Pacing counts them; status says
// NotScheduled of those waiting too long.
func Unscheduled(p *corev1.Pod) bool {
	if p.Spec.NodeName != "" || p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodPending && p.Status.Phase != "" {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return false
		}
	}
	return true
}

// envContract injects a framework's environment into a pod's training container.
type envContract interface {
	// names are the variables it sets; same-named user entries are replaced.
	names() []string
	// vars are the values for replica index of type t.
	vars(t *ReplicaType, index int32) []corev1.EnvVar
}

// desiredPods renders one pod per replica slot, leaving out the slots whose pod is being deleted
// in this round (it is created again once gone), and lists in Decisions.Create those not observed.
func (r *renderer) desiredPods() []*corev1.Pod {
	env := r.env
	var pods []*corev1.Pod
	if !r.in.OnlyPodsToCreate {
		pods = make([]*corev1.Pod, 0, r.job.PodCount())
	}
	// Note: a pod that matches no slot (its replica labels edited, say) may still hold a slot's
	// name. It is deleted as a stray; the slot's pod waits until the name is free, or its create
	// would meet AlreadyExists, count as done, and be tried again every round (found by fuzzing).
	taken := make(map[string]bool, len(r.others))
	for _, o := range r.others {
		taken[o.pod.Name] = true
	}
	room := r.schedulerRoom()
	for ti := range r.job.Replicas {
		t := &r.job.Replicas[ti]
		proto, c := r.prototype(t)
		var userEnv []corev1.EnvVar
		if c >= 0 {
			userEnv = r.userEnv(t, proto.Spec.Containers[c].Env, env.names())
		}
		for i := int32(0); i < t.Replicas; i++ {
			observed := r.observed[slot{t.Type, i}]
			name := PodName(r.job.Name, t.Type, i)
			// Note: while a gang restart waits for its back-off, an empty slot (a peer evicted or
			// deleted meanwhile) stays empty: the gang is replaced whole when the wait ends, and a
			// pod created alone now could not join it (it was created, and deleted by the restart).
			gangHold := r.backoff != nil && r.backoff.gang
			if (observed != nil && observed.deleting) || (observed == nil && (taken[name] || r.holdCreates || gangHold)) {
				continue
			}
			if observed == nil && room == 0 {
				r.out.Decisions.HeldForScheduler++
				if r.in.OnlyPodsToCreate {
					continue
				}
			} else if observed == nil {
				if room > 0 {
					room--
				}
				r.out.Decisions.Create = append(r.out.Decisions.Create, name)
			}
			if r.in.OnlyPodsToCreate && (observed != nil || (r.in.MaxPodsToCreate > 0 && len(pods) >= r.in.MaxPodsToCreate)) {
				continue
			}
			pod := proto.DeepCopy()
			pod.Name = name
			pod.Labels[batch.LabelReplicaIndex] = strconv.FormatInt(int64(i), 10)
			if r.job.Kubeflow != nil {
				maps.Copy(pod.Labels, kubeflowLabels(r.job, t, i))
			} else {
				pod.Spec.Hostname = pod.Name
			}
			if c >= 0 {
				vars := env.vars(t, i)
				all := make([]corev1.EnvVar, 0, len(userEnv)+len(vars))
				pod.Spec.Containers[c].Env = append(append(all, userEnv...), vars...)
			}
			pods = append(pods, pod)
		}
	}
	return pods
}

// prototype renders what every pod of type t shares; desiredPods adds the name, index and
// per-replica environment. It returns the index of the training container (-1 if none).
func (r *renderer) prototype(t *ReplicaType) (*corev1.Pod, int) {
	tmpl := t.Template
	pod := &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       r.job.Namespace,
			Labels:          maps.Clone(tmpl.Labels),
			Annotations:     maps.Clone(tmpl.Annotations),
			OwnerReferences: []metav1.OwnerReference{ownerRef(r.job)},
		},
		Spec: *tmpl.Spec.DeepCopy(),
	}
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	maps.Copy(pod.Labels, jobLabels(r.job))
	pod.Labels[batch.LabelReplicaType] = t.Type
	pod.Labels[batch.LabelSchedulerRole] = t.Type
	pod.Annotations[batch.AnnotationRunMode] = runModeName(r.job)
	for _, k := range slices.Sorted(maps.Keys(tmpl.Labels)) {
		if v := pod.Labels[k]; v != tmpl.Labels[k] {
			r.warn(WarnLabelReplaced, fmt.Sprintf("replica type %s: template label %s=%s replaced with %s=%s: the operator's labels select the job's pods", t.Type, k, tmpl.Labels[k], k, v))
		}
	}
	pod.Annotations[batch.AnnotationTemplateHash] = r.templateHash(t.Type)
	if g := r.out.Decisions.GangRestarts; g > 0 {
		pod.Annotations[batch.AnnotationGangRestarts] = strconv.FormatInt(int64(g), 10)
	} else {
		// The operator's key, never the template's: a pod must not claim a gang it is not of.
		delete(pod.Annotations, batch.AnnotationGangRestarts)
	}

	if p := pod.Spec.RestartPolicy; p != "" && p != corev1.RestartPolicyNever {
		r.warn(WarnRestartPolicy, fmt.Sprintf("replica type %s: template restartPolicy %s replaced with Never; the controller restarts replicas by spec.replicaSpecs[].restartPolicy (%s)", t.Type, p, t.RestartPolicy))
	}
	pod.Spec.RestartPolicy = corev1.RestartPolicyNever
	if r.job.Kubeflow == nil {
		// A Kubeflow job's replicas resolve through their own Services instead (kubeflow.go).
		pod.Spec.Subdomain = r.job.Name
	}
	r.applyGang(t, pod)
	r.applyAdmission(t, pod)

	c := trainingContainer(r.job.Framework, &pod.Spec)
	if c >= 0 {
		if r.job.Kubeflow != nil {
			addTrainingPort(r.job, &pod.Spec.Containers[c])
		}
		r.applyRunMode(t, &pod.Spec, c)
		if ctr := &pod.Spec.Containers[c]; ctr.TerminationMessagePolicy == "" {
			// The failed rank's last words outlive its pod (lastwords.go).
			ctr.TerminationMessagePolicy = corev1.TerminationMessageFallbackToLogsOnError
		}
		if r.job.Torchrun != nil && !r.job.Debug {
			r.torchrunCommand(t, &pod.Spec.Containers[c])
		}
		if !r.job.Debug {
			r.rejoinableRendezvous(&pod.Spec.Containers[c])
		}
	}
	return pod, c
}

// userEnv is the training container's own environment less the variables the contract sets,
// with a warning for each one it replaces.
func (r *renderer) userEnv(t *ReplicaType, env []corev1.EnvVar, injected []string) []corev1.EnvVar {
	out := make([]corev1.EnvVar, 0, len(env))
	for _, e := range env {
		if slices.Contains(injected, e.Name) {
			r.warn(WarnEnvOverridden, fmt.Sprintf("replica type %s: environment variable %s is set by Trainyard; the template's value is replaced", t.Type, e.Name))
			continue
		}
		out = append(out, e)
	}
	return out
}

// applyRunMode gives the training container the debug command (debug mode) or the resume
// command and args (after a pause), and drops init containers when asked.
func (r *renderer) applyRunMode(t *ReplicaType, spec *corev1.PodSpec, c int) {
	ctr := &spec.Containers[c]
	switch {
	case r.job.Debug:
		s := r.job.DebugSpecs[t.Type]
		ctr.Command, ctr.Args = []string{"sleep", "inf"}, nil
		if len(s.Command) > 0 {
			ctr.Command = append([]string(nil), s.Command...)
		}
		if s.SkipInitContainer {
			spec.InitContainers = nil
		}
	case r.job.Resumed():
		s, ok := r.job.ResumeSpecs[t.Type]
		if !ok {
			return
		}
		if len(s.Command) > 0 {
			ctr.Command = append([]string(nil), s.Command...)
		}
		if len(s.Args) > 0 {
			ctr.Args = append([]string(nil), s.Args...)
		}
		if s.SkipInitContainer {
			spec.InitContainers = nil
		}
	}
}

// jobLabels are the labels every object of the job carries.
func jobLabels(j *Job) map[string]string {
	return map[string]string{
		batch.LabelOwnerKind: j.Kind,
		batch.LabelOwnerName: j.Name,
	}
}

func ownerRef(j *Job) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion:         j.APIVersion,
		Kind:               j.Kind,
		Name:               j.Name,
		UID:                j.UID,
		Controller:         ptr(true),
		BlockOwnerDeletion: ptr(true),
	}
}

// containerPort is the port named name in c, else def.
func containerPort(c *corev1.Container, name string, def int32) int32 {
	if c != nil {
		for _, p := range c.Ports {
			if p.Name == name {
				return p.ContainerPort
			}
		}
	}
	return def
}

// templateContainer is the training container of a replica type's template, or nil.
func (j *Job) templateContainer(t *ReplicaType) *corev1.Container {
	if i := trainingContainer(j.Framework, &t.Template.Spec); i >= 0 {
		return &t.Template.Spec.Containers[i]
	}
	return nil
}
