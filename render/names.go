package render

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Training jobs of every kind name what they create after themselves: pods <job>-<type>-<index>,
// the Service and the PodGroup <job>. Two jobs of different kinds with one name in a namespace
// (a PyTorchTrainingJob beside the Kubeflow PyTorchJob it was moved from, a TFJob and a
// PyTorchTrainingJob both called mnist) would take each other's objects: server-side apply by one
// field manager hands an object to whichever applied it last. The job created first keeps the
// name; the other creates nothing and says why (NameConflict) until that one is gone.

// nameRecheck is how often a job whose name another kind's job holds looks again.
const nameRecheck = time.Minute

// ReasonNameConflict: a job of another kind with the same name, created before this one, is in
// the namespace (Input.NameTakenBy).
const ReasonNameConflict = "NameConflict"

// JobRef is a training job of any of the four kinds as the name check sees it.
type JobRef struct {
	Kind, Namespace, Name string
	Created               metav1.Time
}

// Ref is the job's JobRef.
func (j *Job) Ref() JobRef {
	return JobRef{Kind: j.Kind, Namespace: j.Namespace, Name: j.Name, Created: j.Created}
}

// JobRefOf is the JobRef of obj, a job of kind.
func JobRefOf(kind string, obj metav1.Object) JobRef {
	return JobRef{Kind: kind, Namespace: obj.GetNamespace(), Name: obj.GetName(), Created: obj.GetCreationTimestamp()}
}

// NameTakenBy is Input.NameTakenBy for the job self: the job among others of another kind in
// self's namespace with self's name that was created first ("PyTorchJob mnist"), or "". Two
// created in the same second: the kind first in alphabetical order keeps the name, so both
// jobs' rounds agree which one waits.
func NameTakenBy(self JobRef, others []JobRef) string {
	for _, o := range others {
		if o.Kind == self.Kind || o.Namespace != self.Namespace || o.Name != self.Name {
			continue
		}
		if o.Created.Before(&self.Created) || o.Created.Equal(&self.Created) && o.Kind < self.Kind {
			return o.Kind + " " + o.Name
		}
	}
	return ""
}

// nameTaken: a job of another kind holds this job's name (Input.NameTakenBy), so this job makes
// nothing named after it, its TensorBoard included.
func (r *renderer) nameTaken() bool {
	return r.in.NameTakenBy != "" && !r.job.Finished()
}
