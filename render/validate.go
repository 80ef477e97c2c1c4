package render

import (
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
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
	if len(j.Replicas) == 0 {
		errs = append(errs, field.Required(field.NewPath("spec", "replicaSpecs"), "a job needs at least one replica type"))
	}
	types := map[string]bool{}
	for i := range j.Replicas {
		t := &j.Replicas[i]
		path := replicaPath(i)
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
			errs = append(errs, field.Required(path.Child("template", "spec", "containers"), "a replica needs a training container"))
			continue
		}
		if j.Torchrun != nil && j.Torchrun.ProcPerNode == "gpu" && gpuLimit(j.templateContainer(t)) == 0 {
			c := trainingContainer(j.Framework, &t.Template.Spec)
			errs = append(errs, field.Required(path.Child("template", "spec", "containers").Index(c).Child("resources", "limits").Key(string(GPUResource)),
				"torchrunConfig.procPerNode is gpu, so the training container needs an nvidia.com/gpu limit"))
		}
	}
	if j.TensorBoard != nil {
		if msgs := validation.IsDNS1035Label(TensorBoardName(j.Name)); len(msgs) > 0 {
			errs = append(errs, field.Invalid(name, j.Name, fmt.Sprintf("the TensorBoard name %q is not valid: %s", TensorBoardName(j.Name), msgs[0])))
		}
	}
	return errs.ToAggregate()
}

func replicaPath(i int) *field.Path {
	return field.NewPath("spec", "replicaSpecs").Index(i)
}

func sortWarnings(w []Warning) {
	sort.Slice(w, func(a, b int) bool {
		if w[a].Reason != w[b].Reason {
			return w[a].Reason < w[b].Reason
		}
		return w[a].Message < w[b].Message
	})
}
