package render

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
)

// gang is one of the gang schedulers a job can choose, with the PodGroup kind it reads.
type gang struct {
	field   string // the spec.scheduler field that chooses it
	product string // what to install for it
	gv      schema.GroupVersion
	group   string
	// crd names the PodGroup resource as <plural>.<group>: the CRD's name, the key under which
	// Input.InstalledCRDs says it is installed (not for a built-in kind: see served).
	crd string
	// builtin: the PodGroup kind is part of Kubernetes, served when its API group is enabled.
	builtin bool
}

var (
	t9kGang = gang{field: "t9kScheduler", product: "the T9k scheduler",
		gv: schema.GroupVersion{Group: "scheduler.tensorstack.dev", Version: "v1beta1"}}
	volcanoGang = gang{field: "volcano", product: "Volcano",
		gv: schema.GroupVersion{Group: "scheduling.volcano.sh", Version: "v1beta1"}}
	coschedulingGang = gang{field: "coscheduling", product: "the scheduler-plugins coscheduling plugin",
		gv: schema.GroupVersion{Group: "scheduling.x-k8s.io", Version: "v1alpha1"}}
	// kubernetesGang's version is the cluster's: render writes the newest one the cluster serves
	// (kubernetesGangVersions).
	kubernetesGang = gang{field: "kubernetes", builtin: true,
		product: "the GenericWorkload feature gate (kube-apiserver, kube-scheduler) and --runtime-config=scheduling.k8s.io/v1beta1=true (Kubernetes 1.37; on 1.36 the GenericWorkload and GangScheduling gates and scheduling.k8s.io/v1alpha2=true)",
		gv:      schema.GroupVersion{Group: KubernetesGangGroup}}
)

// KubernetesGangGroup is the API group of the kube-scheduler's built-in Workload and PodGroup.
const KubernetesGangGroup = "scheduling.k8s.io"

// kubernetesGangVersions are the versions of the built-in Workload and PodGroup render can
// write, newest first: v1beta1 and v1alpha3 (Kubernetes 1.37), v1alpha2 (1.36). Their shapes
// differ only in how a PodGroup names its Workload's template.
var kubernetesGangVersions = []string{"v1beta1", "v1alpha3", "v1alpha2"}

// KubernetesGangAPIs are the keys of Input.InstalledCRDs that say the cluster serves the
// built-in Workload and PodGroup at a version render can write: the names of their APIServices
// (`kubectl get apiservice v1beta1.scheduling.k8s.io`), newest first.
func KubernetesGangAPIs() []string {
	names := make([]string, len(kubernetesGangVersions))
	for i, v := range kubernetesGangVersions {
		names[i] = v + "." + KubernetesGangGroup
	}
	return names
}

// served is the version of g's PodGroup kind the cluster serves, as installed (Input.InstalledCRDs)
// says: a CRD's one version, or the newest built-in one; false when it serves none.
func (g *gang) served(installed map[string]bool) (schema.GroupVersion, bool) {
	if !g.builtin {
		return g.gv, installed[g.crd]
	}
	for _, v := range kubernetesGangVersions {
		if installed[v+"."+g.group] {
			return schema.GroupVersion{Group: g.group, Version: v}, true
		}
	}
	return schema.GroupVersion{}, false
}

// kubernetesGangTemplate names the one PodGroup template of a job's Workload.
const kubernetesGangTemplate = "gang"

func init() {
	for _, g := range []*gang{&t9kGang, &volcanoGang, &coschedulingGang, &kubernetesGang} {
		g.group = g.gv.Group
		g.crd = "podgroups." + g.gv.Group
	}
}

// gangOf is the gang scheduler the job chose, or nil.
func gangOf(j *Job) *gang {
	s := j.Scheduler
	switch {
	case s == nil:
		return nil
	case s.T9kScheduler != nil:
		return &t9kGang
	case s.Volcano != nil:
		return &volcanoGang
	case s.Coscheduling != nil:
		return &coschedulingGang
	case s.Kubernetes != nil:
		return &kubernetesGang
	}
	return nil
}

// applyGang hands a pod to the chosen gang scheduler: its scheduler name and the label or
// annotation that ties it to the PodGroup. A schedulerName the template set is kept only when no
// gang scheduler is chosen (and, for coscheduling, which runs under a name of the cluster's
// choosing, when it names that scheduler).
func (r *renderer) applyGang(t *ReplicaType, pod *corev1.Pod) {
	s := r.job.Scheduler
	name := ""
	switch g := gangOf(r.job); g {
	case nil:
		return
	case &t9kGang:
		name = batch.T9kSchedulerName
		pod.Labels[batch.LabelSchedulerGroupName] = r.job.Name
		pod.Labels[batch.LabelSchedulerQueue] = s.T9kScheduler.Queue
	case &volcanoGang:
		name = batch.VolcanoSchedulerName
		pod.Annotations[batch.AnnotationVolcanoGroupName] = r.job.Name
		// Volcano counts a PodGroup's pods per task by this annotation (minTaskMember, task
		// topology); Kubeflow's operator sets it to the replica type, so do its users' queries.
		pod.Annotations[batch.AnnotationVolcanoTaskSpec] = t.Type
	case &coschedulingGang:
		pod.Labels[batch.LabelCoschedulingPodGroup] = r.job.Name
		if pod.Spec.SchedulerName == "" {
			pod.Spec.SchedulerName = batch.CoschedulingSchedulerName
		}
		return
	case &kubernetesGang:
		// The gang plugin is in the kube-scheduler's default profile: whichever kube-scheduler
		// profile the template names (or the default one) schedules the gang.
		group := r.job.Name
		pod.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: &group}
		return
	}
	if pod.Spec.SchedulerName != "" && pod.Spec.SchedulerName != name {
		r.warn(WarnSchedulerName, fmt.Sprintf("replica type %s: template schedulerName %s replaced with %s, the scheduler spec.scheduler chose", t.Type, pod.Spec.SchedulerName, name))
	}
	pod.Spec.SchedulerName = name
}

// podGroup renders the PodGroup of the chosen gang scheduler. Every flavour gets minMember, the
// pod count (elastic: minReplicas), and minResources, the sum of the requests of the pods that make
// up that minimum (a limit standing in for a missing request, as the API server defaults it), GPUs
// included; a Kubeflow job's schedulingPolicy sets minMember (minAvailable: minResources then sums
// that many pods) and minResources. The T9k flavour adds roles, queue and priority; Volcano queue and priorityClassName;
// coscheduling scheduleTimeoutSeconds.
func podGroup(j *Job, gv schema.GroupVersion) *unstructured.Unstructured {
	g := gangOf(j)
	if g == nil {
		return nil
	}
	if g == &kubernetesGang {
		return kubernetesPodGroup(j, gv)
	}
	gangTypes := j.Replicas
	minMember := int64(j.PodCount())
	if j.Elastic != nil {
		minMember = int64(j.Elastic.Min)
		gangTypes = splitElastic(j.Replicas, j.Elastic.Min)
	}
	spec := map[string]any{"minMember": minMember, "minResources": minResources(gangTypes)}
	if k := j.Kubeflow; k != nil {
		// runPolicy.schedulingPolicy overrides the computed gang: minAvailable pods, whose
		// requests make up minResources unless it is given too.
		if k.MinAvailable != nil {
			spec["minMember"] = int64(*k.MinAvailable)
			spec["minResources"] = minResources(firstPods(j.Replicas, *k.MinAvailable))
		}
		if k.MinResources != nil {
			spec["minResources"] = resourceMap(k.MinResources)
		}
	}
	s := j.Scheduler
	switch g {
	case &t9kGang:
		roles := make([]any, 0, len(gangTypes))
		for _, t := range gangTypes {
			roles = append(roles, map[string]any{"name": t.Type, "minMember": int64(t.Replicas)})
		}
		spec["roles"] = roles
		spec["queue"] = s.T9kScheduler.Queue
		if s.T9kScheduler.Priority != nil {
			spec["priority"] = int64(*s.T9kScheduler.Priority)
		}
	case &volcanoGang:
		if s.Volcano.Queue != "" {
			spec["queue"] = s.Volcano.Queue
		}
		if s.Volcano.PriorityClassName != "" {
			spec["priorityClassName"] = s.Volcano.PriorityClassName
		}
	case &coschedulingGang:
		if s.Coscheduling.ScheduleTimeoutSeconds != nil {
			spec["scheduleTimeoutSeconds"] = int64(*s.Coscheduling.ScheduleTimeoutSeconds)
		}
	}
	return gangObject(j, gv, "PodGroup", spec)
}

// gangObject is a job's PodGroup or Workload of API version gv: named like the job, labelled and
// owned by it.
func gangObject(j *Job, gv schema.GroupVersion, kind string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetAPIVersion(gv.String())
	u.SetKind(kind)
	u.SetName(j.Name)
	u.SetNamespace(j.Namespace)
	u.SetLabels(jobLabels(j))
	u.SetOwnerReferences([]metav1.OwnerReference{ownerRef(j)})
	return u
}

// gangMinCount is the number of pods the gang needs together: every pod, or minReplicas when
// elastic; a Kubeflow job's schedulingPolicy.minAvailable overrides it.
func gangMinCount(j *Job) int64 {
	n := int64(j.PodCount())
	if j.Elastic != nil {
		n = int64(j.Elastic.Min)
	}
	if k := j.Kubeflow; k != nil && k.MinAvailable != nil {
		n = int64(*k.MinAvailable)
	}
	return n
}

// kubernetesPolicy is the scheduling policy and constraints the kube-scheduler reads, shared by
// the Workload's template and the PodGroup made from it.
func kubernetesPolicy(j *Job, into map[string]any) map[string]any {
	into["schedulingPolicy"] = map[string]any{"gang": map[string]any{"minCount": gangMinCount(j)}}
	if key := j.Scheduler.Kubernetes.TopologyKey; key != "" {
		into["schedulingConstraints"] = map[string]any{"topology": []any{map[string]any{"key": key}}}
	}
	return into
}

// kubernetesWorkload is the scheduling.k8s.io Workload (version gv) of a job under the
// kube-scheduler's gang scheduling: one PodGroup template for the whole job, its controllerRef the
// job. Note: the Workload and the PodGroup's policy are immutable (v1alpha2 to v1beta1); they
// depend only on fields that cannot change while pods exist (the pod count of a non-elastic job,
// minReplicas), and the controller recreates them if a change is refused.
func kubernetesWorkload(j *Job, gv schema.GroupVersion) *unstructured.Unstructured {
	group, _, _ := strings.Cut(j.APIVersion, "/")
	spec := map[string]any{
		"controllerRef":     map[string]any{"apiGroup": group, "kind": j.Kind, "name": j.Name},
		"podGroupTemplates": []any{kubernetesPolicy(j, map[string]any{"name": kubernetesGangTemplate})},
	}
	return gangObject(j, gv, "Workload", spec)
}

// kubernetesPodGroup is the runtime PodGroup (version gv) of the job's Workload, which the pods
// name in spec.schedulingGroup. The kube-scheduler admits none of them until minCount pods exist
// and binds them together. v1alpha2 names the Workload's template in
// podGroupTemplateRef.workload; v1alpha3 and v1beta1 in workloadRef.
func kubernetesPodGroup(j *Job, gv schema.GroupVersion) *unstructured.Unstructured {
	ref := map[string]any{"podGroupTemplateRef": map[string]any{"workload": map[string]any{
		"workloadName": j.Name, "podGroupTemplateName": kubernetesGangTemplate,
	}}}
	if gv.Version != "v1alpha2" {
		ref = map[string]any{"workloadRef": map[string]any{
			"workloadName": j.Name, "templateName": kubernetesGangTemplate,
		}}
	}
	return gangObject(j, gv, "PodGroup", kubernetesPolicy(j, ref))
}

// firstPods is types cut to their first n pods in render's order of the types (master or chief
// first). Note: Kubeflow's operator orders the types by their templates' PriorityClass values,
// highest first, which render cannot read; among equal ones its order is a map's, unspecified.
func firstPods(types []ReplicaType, n int32) []ReplicaType {
	out := make([]ReplicaType, 0, len(types))
	for _, t := range types {
		if n <= 0 {
			break
		}
		t.Replicas = min(t.Replicas, n)
		n -= t.Replicas
		out = append(out, t)
	}
	return out
}

// minResources sums the resource requests of every container of the given replicas. Init
// containers count by their largest request, as the scheduler counts them.
func minResources(types []ReplicaType) map[string]any {
	total := corev1.ResourceList{}
	for _, t := range types {
		pod := podRequests(&t.Template.Spec)
		for name, q := range pod {
			q.Mul(int64(t.Replicas))
			sum := total[name]
			sum.Add(q)
			total[name] = sum
		}
	}
	return resourceMap(total)
}

// resourceMap is a resource list as the PodGroup's unstructured minResources, names sorted.
func resourceMap(total corev1.ResourceList) map[string]any {
	names := make([]string, 0, len(total))
	for n := range total {
		names = append(names, string(n))
	}
	sort.Strings(names)
	out := make(map[string]any, len(total))
	for _, n := range names {
		q := total[corev1.ResourceName(n)]
		out[n] = q.String()
	}
	return out
}

// podRequests is what one pod of the spec requests: the sum over its containers, or the
// largest init container if that is more, plus its overhead.
func podRequests(spec *corev1.PodSpec) corev1.ResourceList {
	sum := corev1.ResourceList{}
	for i := range spec.Containers {
		addTo(sum, requests(&spec.Containers[i]))
	}
	for i := range spec.InitContainers {
		for name, q := range requests(&spec.InitContainers[i]) {
			if cur, ok := sum[name]; !ok || q.Cmp(cur) > 0 {
				sum[name] = q.DeepCopy()
			}
		}
	}
	addTo(sum, spec.Overhead)
	return sum
}

// requests are a container's requests, a limit standing in for a missing request.
func requests(c *corev1.Container) corev1.ResourceList {
	out := corev1.ResourceList{}
	for n, q := range c.Resources.Limits {
		out[n] = q.DeepCopy()
	}
	for n, q := range c.Resources.Requests {
		out[n] = q.DeepCopy()
	}
	return out
}

func addTo(sum corev1.ResourceList, add corev1.ResourceList) {
	for n, q := range add {
		cur, ok := sum[n]
		if !ok {
			cur = resource.Quantity{Format: q.Format}
		}
		cur.Add(q)
		sum[n] = cur
	}
}

// GangKinds are the kinds of the gang objects the job's scheduler reads, at the version the
// cluster serves (installed, as Input.InstalledCRDs), in the order they are created (a Workload
// before the PodGroup made from it); empty when the job chose no gang scheduler or the cluster
// serves none of its kinds.
func GangKinds(j *Job, installed map[string]bool) []schema.GroupVersionKind {
	g := gangOf(j)
	if g == nil {
		return nil
	}
	gv, ok := g.served(installed)
	switch {
	case !ok:
		return nil
	case g == &kubernetesGang:
		return []schema.GroupVersionKind{gv.WithKind("Workload"), gv.WithKind("PodGroup")}
	}
	return []schema.GroupVersionKind{gv.WithKind("PodGroup")}
}

// PodGroupCRDs are the CRDs of every PodGroup kind render can create: the ones whose presence
// Input.InstalledCRDs reports. The built-in scheduling.k8s.io PodGroup is reported under
// KubernetesGangAPIs instead.
func PodGroupCRDs() []string {
	return []string{t9kGang.crd, volcanoGang.crd, coschedulingGang.crd}
}
