package render

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
	"github.com/trainyard/trainyard/apis/kueue"
)

// Validate refuses a job render cannot turn into valid objects, with errors that name the
// field. Admission (the CRD's CEL rules) refuses the same input earlier; this check is what
// `trainyard render` shows without a cluster, and it guards objects admitted before a rule existed.
func Validate(j *Job) error {
	var errs field.ErrorList
	name := field.NewPath("metadata", "name")
	for _, msg := range validation.IsDNS1035Label(j.Name) {
		errs = append(errs, field.Invalid(name, j.Name, msg+" (the job name names its Service and starts every pod's hostname)"))
	}
	specs := j.replicaSpecsPath()
	if k := j.Kubeflow; k != nil {
		for _, typ := range k.UnknownTypes {
			errs = append(errs, field.NotSupported(specs.Key(typ), typ, kubeflowTypeNames(j.Framework)))
		}
	}
	if len(j.Replicas) == 0 && (j.Kubeflow == nil || len(j.Kubeflow.UnknownTypes) == 0) {
		errs = append(errs, field.Required(specs, "a job needs at least one replica type"))
	}
	types := map[string]bool{}
	for i := range j.Replicas {
		t := &j.Replicas[i]
		path := j.replicaPath(i)
		if j.Kubeflow == nil {
			// Note: admission refuses these too (the schema's enum, a DNS label); checked first, a
			// bad type is named as such rather than as a pod name it would make.
			if j.Framework == TensorFlow && !slices.Contains(tensorFlowTypes, t.Type) {
				errs = append(errs, field.NotSupported(path.Child("type"), t.Type, tensorFlowTypes))
				continue
			}
			if msgs := validation.IsDNS1123Label(t.Type); len(msgs) > 0 {
				errs = append(errs, field.Invalid(path.Child("type"), t.Type, replicaTypeMessage(t.Type)))
				continue
			}
		}
		if types[t.Type] {
			// Note: admission refuses it too (replicaSpecs is a list keyed by type); two entries of
			// one type would render the same pod names twice.
			errs = append(errs, field.Duplicate(path.Child("type"), t.Type))
			continue
		}
		types[t.Type] = true
		if t.Replicas < 0 {
			// Note: admission refuses it too; a manifest read by `trainyard render -f` has not been
			// admitted, and a negative count cannot size the pods.
			errs = append(errs, field.Invalid(path.Child("replicas"), t.Replicas, "must be greater than or equal to 0"))
			continue
		}
		// An elastic job may scale up to maxReplicas: its names must fit then too, as admission checks.
		count := t.Replicas
		if j.Elastic != nil {
			count = max(count, j.Elastic.Max)
		}
		last := PodName(j.Name, t.Type, max(count-1, 0))
		if msgs := validation.IsDNS1123Label(last); len(msgs) > 0 {
			errs = append(errs, field.Invalid(name, j.Name, fmt.Sprintf("pod name %q is not a valid hostname: %s; shorten the job name or the replica type", last, msgs[0])))
		}
		if len(t.Template.Spec.Containers) == 0 {
			// Note: admission refuses it too (a rule on the template); a manifest read by
			// `trainyard render -f` has not been admitted.
			errs = append(errs, field.Required(path.Child("template", "spec", "containers"), "a replica needs a training container"))
			continue
		}
		errs = append(errs, templateErrors(t.Template, path.Child("template"))...)
		if j.Queue != nil {
			errs = append(errs, topologyErrors(t.Template.Annotations, path.Child("template", "metadata", "annotations"))...)
		}
		if j.Torchrun != nil && j.Torchrun.ProcPerNode == "gpu" && gpuLimit(j.templateContainer(t)) == 0 {
			c := trainingContainer(j.Framework, &t.Template.Spec)
			errs = append(errs, field.Required(path.Child("template", "spec", "containers").Index(c).Child("resources", "limits").Key(string(GPUResource)),
				"torchrunConfig.procPerNode is gpu, so the training container needs an nvidia.com/gpu limit"))
		}
	}
	if j.Queue != nil {
		errs = append(errs, topologyGroupErrors(j)...)
		if q := j.Queue; q.MaxExecTime != "" && q.maxExecSeconds() == nil {
			// Note: Kueue's webhook refuses it on the kinds it integrates; its jobframework would
			// drop it silently, and the job would run with no limit.
			errs = append(errs, field.Invalid(field.NewPath("metadata", "labels").Key(kueue.LabelMaxExecTime), q.MaxExecTime,
				"must be a whole number of seconds from 1 to 2147483647: the most the job may run admitted by Kueue"))
		}
	}
	if j.TensorBoard != nil {
		if msgs := validation.IsDNS1035Label(TensorBoardName(j.Name)); len(msgs) > 0 {
			errs = append(errs, field.Invalid(name, j.Name, fmt.Sprintf("the TensorBoard name %q is not valid: %s", TensorBoardName(j.Name), msgs[0])))
		}
	}
	errs = append(errs, gangErrors(j)...)
	errs = append(errs, restartScopeErrors(j)...)
	return errs.ToAggregate()
}

// restartScopeErrors checks the chosen restart scope: admission checks runPolicy.restartScope (an
// enum), but a manifest read by `trainyard render -f` has not been admitted, and on the Kubeflow
// kinds it is an annotation, which no schema checks.
func restartScopeErrors(j *Job) field.ErrorList {
	switch j.RestartScope {
	case "", batch.RestartScopeGang, batch.RestartScopeReplica:
		return nil
	}
	path := field.NewPath("spec", "runPolicy", "restartScope")
	if j.Kubeflow != nil {
		path = field.NewPath("metadata", "annotations").Key(batch.AnnotationRestartScope)
	}
	return field.ErrorList{field.NotSupported(path, j.RestartScope, []string{string(batch.RestartScopeGang), string(batch.RestartScopeReplica)})}
}

// gangErrors checks the choice of the kube-scheduler's gang scheduling: on the Kubeflow kinds it
// comes from annotations, which no schema checks.
func gangErrors(j *Job) field.ErrorList {
	var errs field.ErrorList
	keyPath := field.NewPath("spec", "scheduler", "kubernetes", "topologyKey")
	if k := j.Kubeflow; k != nil {
		annotations := field.NewPath("metadata", "annotations")
		if k.GangScheduler != "" && k.GangScheduler != batch.GangSchedulerKubernetes {
			errs = append(errs, field.NotSupported(annotations.Key(batch.AnnotationGangScheduler), k.GangScheduler, []string{batch.GangSchedulerKubernetes}))
		}
		keyPath = annotations.Key(batch.AnnotationGangTopologyKey)
	}
	if s := j.Scheduler; s != nil && s.Kubernetes != nil && s.Kubernetes.TopologyKey != "" {
		for _, msg := range validation.IsQualifiedName(s.Kubernetes.TopologyKey) {
			errs = append(errs, field.Invalid(keyPath, s.Kubernetes.TopologyKey, msg+" (a node label key)"))
		}
	}
	if k := j.Kubeflow; k != nil && k.MinAvailable != nil && gangOf(j) != nil {
		if want, most := int64(*k.MinAvailable), j.mostPods(); want > most {
			errs = append(errs, field.Invalid(field.NewPath("spec", "runPolicy", "schedulingPolicy", "minAvailable"), want,
				fmt.Sprintf("the gang would wait for %d pods to be scheduled together, but the job has at most %d: none would ever run; set minAvailable to at most %d, or leave it out (the gang is then every pod)", want, most, most)))
		}
	}
	return errs
}

// mostPods is the most pods the job can have: its pods now, and for an elastic job its workers
// at maxReplicas.
func (j *Job) mostPods() int64 {
	n := int64(j.PodCount())
	if e := j.Elastic; e != nil {
		for _, t := range j.Replicas {
			if t.Type == "worker" && e.Max > t.Replicas {
				n += int64(e.Max - t.Replicas)
			}
		}
	}
	return n
}

// replicaSpecsPath is the field that holds the job's replica types: spec.replicaSpecs, or the
// kubeflow.org kind's map (spec.pytorchReplicaSpecs, spec.tfReplicaSpecs).
func (j *Job) replicaSpecsPath() *field.Path {
	switch {
	case j.Kubeflow == nil:
		return field.NewPath("spec", "replicaSpecs")
	case j.Framework == PyTorch:
		return field.NewPath("spec", "pytorchReplicaSpecs")
	}
	return field.NewPath("spec", "tfReplicaSpecs")
}

// tensorFlowTypes are the replica types of a TensorFlowTrainingJob (the schema's enum).
var tensorFlowTypes = []string{string(batch.TensorFlowReplicaChief), string(batch.TensorFlowReplicaWorker),
	string(batch.TensorFlowReplicaPS), string(batch.TensorFlowReplicaEvaluator)}

// kubeflowTypeNames are the keys a kubeflow.org kind's replica-spec map takes.
func kubeflowTypeNames(fw Framework) []string {
	order := tfJobTypes
	if fw == PyTorch {
		order = pyTorchJobTypes
	}
	names := make([]string, len(order))
	for i, t := range order {
		names[i] = string(t)
	}
	return names
}

// replicaPath is where replica type i is in the job's manifest: spec.replicaSpecs[i], or for the
// kubeflow.org kinds the map entry of its type, spelt as the API server's own messages spell it
// (spec.tfReplicaSpecs.Worker).
func (j *Job) replicaPath(i int) *field.Path {
	if j.Kubeflow == nil {
		return j.replicaSpecsPath().Index(i)
	}
	return j.replicaSpecsPath().Child(string(KubeflowReplicaType(j.Replicas[i].Type)))
}

// maxTemplateErrors bounds the errors reported of one template, so that a template of thousands
// of bad labels still gives a message the job's condition can hold.
const maxTemplateErrors = 4

// templateErrors are what the API server would refuse in every pod made from the template and
// the job's schema does not check (the template is Kubernetes' type, not validated within a
// custom resource): its labels and annotations, its containers' names, and the names of its
// ServiceAccount and claims, which are of the job's namespace. Refused here, the job says which of its fields is wrong
// (InvalidSpec) and makes no pod, rather than failing every pod it creates.
func templateErrors(t *corev1.PodTemplateSpec, path *field.Path) field.ErrorList {
	meta, spec := path.Child("metadata"), path.Child("spec")
	errs := metav1validation.ValidateLabels(t.Labels, meta.Child("labels"))
	errs = append(errs, apivalidation.ValidateAnnotations(t.Annotations, meta.Child("annotations"))...)
	if n := t.Spec.ServiceAccountName; n != "" && len(validation.IsDNS1123Subdomain(n)) > 0 {
		errs = append(errs, field.Invalid(spec.Child("serviceAccountName"), n,
			"must be the name of a ServiceAccount in the job's namespace (lower-case letters, digits, '-' and '.'); an account of another namespace cannot be named"))
	}
	for _, list := range []struct {
		field      string
		containers []corev1.Container
	}{{"initContainers", t.Spec.InitContainers}, {"containers", t.Spec.Containers}} {
		for i, c := range list.containers {
			if len(validation.IsDNS1123Label(c.Name)) > 0 {
				errs = append(errs, field.Invalid(spec.Child(list.field).Index(i).Child("name"), c.Name,
					"must be a DNS label (lower-case letters, digits and '-', starting and ending with a letter or digit): the API server refuses a pod whose container is named otherwise"))
			}
		}
	}
	for i, v := range t.Spec.Volumes {
		if c := v.PersistentVolumeClaim; c != nil && c.ClaimName != "" && len(validation.IsDNS1123Subdomain(c.ClaimName)) > 0 {
			errs = append(errs, field.Invalid(spec.Child("volumes").Index(i).Child("persistentVolumeClaim", "claimName"), c.ClaimName,
				"must be the name of a PersistentVolumeClaim in the job's namespace (lower-case letters, digits, '-' and '.'); a claim of another namespace cannot be mounted"))
		}
	}
	for _, e := range errs {
		if v, ok := e.BadValue.(string); ok && len(v) > 64 {
			e.BadValue = fmt.Sprintf("%s... (%d bytes)", v[:64], len(v))
		}
	}
	// Note: labels and annotations are maps; sorted, the same job gives the same error.
	text := make(map[*field.Error]string, len(errs))
	for _, e := range errs {
		text[e] = e.Error()
	}
	slices.SortFunc(errs, func(a, b *field.Error) int { return strings.Compare(text[a], text[b]) })
	if len(errs) > maxTemplateErrors {
		more := len(errs) - maxTemplateErrors
		errs = append(errs[:maxTemplateErrors:maxTemplateErrors],
			field.Invalid(path, field.OmitValueType{}, fmt.Sprintf("%d more errors of this template are not listed", more)))
	}
	return errs
}

func sortWarnings(w []Warning) {
	sort.Slice(w, func(a, b int) bool {
		if w[a].Reason != w[b].Reason {
			return w[a].Reason < w[b].Reason
		}
		return w[a].Message < w[b].Message
	})
}

// TemplateOfPod is the field of the job's manifest that pod name is made from (e.g.
// spec.replicaSpecs[1].template, spec.tfReplicaSpecs.Worker.template), so that the API server's
// refusal of a pod, which names the pod's fields (spec.containers[0]...), can be traced to the
// job's. It is false for a name that is none of the job's pods.
func (j *Job) TemplateOfPod(name string) (*field.Path, bool) {
	for i, t := range j.Replicas {
		prefix := strings.TrimSuffix(PodName(j.Name, t.Type, 0), "0")
		rest, ok := strings.CutPrefix(name, prefix)
		if !ok || rest == "" || strings.Trim(rest, "0123456789") != "" {
			continue
		}
		return j.replicaPath(i).Child("template"), true
	}
	return nil, false
}

// replicaTypeMessage says why typ, no DNS label, is no replica type, in admission's words: a type
// in capitals (Worker, as Kubeflow spells its keys) is told its lower-case spelling.
func replicaTypeMessage(typ string) string {
	if lower := strings.ToLower(typ); len(validation.IsDNS1123Label(lower)) == 0 {
		return fmt.Sprintf("replica types are written in lower case: %s, not %s", lower, typ)
	}
	return "must be a DNS label (lower-case letters, digits and hyphens, such as master or worker): it is part of every pod name, <job>-<type>-<index>"
}

// topologyErrors checks a queued replica type's Kueue topology annotations (topologyRequest reads
// them), naming each under path: at most one of the required, preferred and unconstrained rules,
// levels that are node label keys, unconstrained a boolean, a group name that is no number and
// stands beside a required or preferred rule and no slice, a slice topology and its size together.
func topologyErrors(a map[string]string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	var set []string
	for _, k := range []string{kueue.AnnotationPodSetRequiredTopology, kueue.AnnotationPodSetPreferredTopology, kueue.AnnotationPodSetUnconstrainedTopology} {
		if _, ok := a[k]; ok {
			set = append(set, k)
		}
	}
	if len(set) > 1 {
		errs = append(errs, field.Invalid(path.Key(set[1]), a[set[1]], fmt.Sprintf("may not be set beside %s: a replica type's pods are placed by one topology rule", set[0])))
	}
	for _, k := range []string{kueue.AnnotationPodSetRequiredTopology, kueue.AnnotationPodSetPreferredTopology, kueue.AnnotationPodSetUnconstrainedTopology, kueue.AnnotationPodSetSliceRequiredTopology} {
		v, ok := a[k]
		switch {
		case !ok:
		case k == kueue.AnnotationPodSetUnconstrainedTopology:
			if _, err := strconv.ParseBool(v); err != nil {
				errs = append(errs, field.Invalid(path.Key(k), v, `must be "true" or "false"`))
			}
		default:
			for _, msg := range validation.IsQualifiedName(v) {
				errs = append(errs, field.Invalid(path.Key(k), v, msg+" (a node label key, a level of Kueue's Topology)"))
			}
		}
	}
	_, sliced := a[kueue.AnnotationPodSetSliceRequiredTopology]
	size, sized := a[kueue.AnnotationPodSetSliceSize]
	switch n, err := strconv.ParseInt(size, 10, 32); {
	case sized && (err != nil || n <= 0):
		errs = append(errs, field.Invalid(path.Key(kueue.AnnotationPodSetSliceSize), size, "must be a whole number of pods greater than 0"))
	case sized && !sliced:
		errs = append(errs, field.Forbidden(path.Key(kueue.AnnotationPodSetSliceSize), "may be set only beside "+kueue.AnnotationPodSetSliceRequiredTopology))
	case !sized && sliced:
		errs = append(errs, field.Required(path.Key(kueue.AnnotationPodSetSliceSize), "the number of pods in each slice of "+kueue.AnnotationPodSetSliceRequiredTopology))
	}
	if g, grouped := a[kueue.AnnotationPodSetGroupName]; grouped {
		_, required := a[kueue.AnnotationPodSetRequiredTopology]
		_, preferred := a[kueue.AnnotationPodSetPreferredTopology]
		gk := path.Key(kueue.AnnotationPodSetGroupName)
		if _, err := strconv.ParseUint(g, 10, 64); err == nil {
			errs = append(errs, field.Invalid(gk, g, "must not be a number (Kueue's rule)"))
		}
		switch {
		case !required && !preferred:
			errs = append(errs, field.Forbidden(gk, "groups replica types placed together by a topology: set "+kueue.AnnotationPodSetRequiredTopology+" or "+kueue.AnnotationPodSetPreferredTopology+" beside it"))
		case sliced || sized:
			errs = append(errs, field.Forbidden(gk, "may not be set beside "+kueue.AnnotationPodSetSliceRequiredTopology+" or "+kueue.AnnotationPodSetSliceSize))
		}
	}
	return errs
}

// topologyGroupErrors checks the groups a queued job's replica types form by
// kueue.x-k8s.io/podset-group-name (read as topologyRequest reads it, so beside a required or
// preferred topology): Kueue places the two replica types of a group in one domain, and takes a
// group only of exactly two, one of them of a single replica, asking the same topology.
func topologyGroupErrors(j *Job) field.ErrorList {
	var order []string
	groups := map[string][]int{}
	for i := range j.Replicas {
		tr := topologyRequest(j.Replicas[i].Template)
		if tr.PodSetGroupName == nil {
			continue
		}
		g := *tr.PodSetGroupName
		if groups[g] == nil {
			order = append(order, g)
		}
		groups[g] = append(groups[g], i)
	}
	var errs field.ErrorList
	invalid := func(members []int, g, msg string) {
		for _, i := range members {
			errs = append(errs, field.Invalid(j.replicaPath(i).Child("template", "metadata", "annotations").Key(kueue.AnnotationPodSetGroupName), g, msg))
		}
	}
	for _, g := range order {
		members := groups[g]
		if len(members) != 2 {
			msg := "no other replica type names this group"
			if len(members) > 2 {
				msg = fmt.Sprintf("%d replica types name this group", len(members))
			}
			invalid(members, g, msg+"; Kueue places a group of exactly two replica types together")
			continue
		}
		a, b := &j.Replicas[members[0]], &j.Replicas[members[1]]
		if a.Replicas != 1 && b.Replicas != 1 {
			invalid(members, g, fmt.Sprintf("groups %s (%d replicas) with %s (%d replicas); one of the two must have a single replica", a.Type, a.Replicas, b.Type, b.Replicas))
		}
		ta, tb := topologyRequest(a.Template), topologyRequest(b.Template)
		if !equalPtr(ta.Required, tb.Required) || !equalPtr(ta.Preferred, tb.Preferred) {
			invalid(members, g, fmt.Sprintf("groups %s (%s) with %s (%s); the two must ask the same topology", a.Type, ruleText(ta), b.Type, ruleText(tb)))
		}
	}
	return errs
}

// ruleText is a request's required or preferred topology, in words.
func ruleText(tr *kueue.TopologyRequest) string {
	if tr.Required != nil {
		return "required " + *tr.Required
	}
	return "preferred " + *tr.Preferred
}

func equalPtr[T comparable](a, b *T) bool {
	return a == nil && b == nil || a != nil && b != nil && *a == *b
}
