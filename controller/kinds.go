package controller

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
	kubeflowv1 "github.com/trainyard/trainyard/apis/kubeflow/v1"
	"github.com/trainyard/trainyard/apis/kueue"
	"github.com/trainyard/trainyard/render"
	"github.com/trainyard/trainyard/status"
)

// jobKind adapts one API kind to the shared reconciler: how to make an empty object, convert it
// into render's model, read its status as render's and write render's status in its own shape.
type jobKind struct {
	gvk     schema.GroupVersionKind
	newJob  func() client.Object
	newList func() client.ObjectList
	model   func(client.Object) render.Job
	status  func(client.Object) batch.TrainingJobStatus
	items   func(client.ObjectList) []client.Object
	// managed reports whether this operator runs the job (a job may name another controller in
	// spec.managedBy, a Kubeflow job in runPolicy.managedBy).
	managed func(client.Object) bool
	// apiStatus is what is written for a derived status; project is that status as it reads back
	// (what the reconciler compares, so detail the kind cannot hold causes no write). project may
	// share memory with its argument.
	apiStatus func(*batch.TrainingJobStatus, *render.Job) any
	project   func(*batch.TrainingJobStatus, *render.Job) batch.TrainingJobStatus
}

// controls is obj's controller reference when its controller is a job of this kind, else nil.
func (k jobKind) controls(obj metav1.Object) *metav1.OwnerReference {
	ref := metav1.GetControllerOf(obj)
	if ref == nil || ref.Kind != k.gvk.Kind || ref.APIVersion != k.gvk.GroupVersion().String() {
		return nil
	}
	return ref
}

var pyTorchKind = t9kKind(jobKind{
	gvk:     batch.GroupVersion.WithKind("PyTorchTrainingJob"),
	newJob:  func() client.Object { return &batch.PyTorchTrainingJob{} },
	newList: func() client.ObjectList { return &batch.PyTorchTrainingJobList{} },
	model:   func(o client.Object) render.Job { return render.FromPyTorchTrainingJob(o.(*batch.PyTorchTrainingJob)) },
	status:  func(o client.Object) batch.TrainingJobStatus { return o.(*batch.PyTorchTrainingJob).Status },
	items:   func(l client.ObjectList) []client.Object { return objects(l.(*batch.PyTorchTrainingJobList).Items) },
	managed: func(o client.Object) bool { return t9kManagedHere(o.(*batch.PyTorchTrainingJob).Spec.ManagedBy) },
})

var tensorFlowKind = t9kKind(jobKind{
	gvk:     batch.GroupVersion.WithKind("TensorFlowTrainingJob"),
	newJob:  func() client.Object { return &batch.TensorFlowTrainingJob{} },
	newList: func() client.ObjectList { return &batch.TensorFlowTrainingJobList{} },
	model: func(o client.Object) render.Job {
		return render.FromTensorFlowTrainingJob(o.(*batch.TensorFlowTrainingJob))
	},
	status: func(o client.Object) batch.TrainingJobStatus { return o.(*batch.TensorFlowTrainingJob).Status },
	items:  func(l client.ObjectList) []client.Object { return objects(l.(*batch.TensorFlowTrainingJobList).Items) },
	managed: func(o client.Object) bool {
		return t9kManagedHere(o.(*batch.TensorFlowTrainingJob).Spec.ManagedBy)
	},
})

// t9kKind completes a batch.tensorstack.dev kind: status written as derived.
func t9kKind(k jobKind) jobKind {
	k.apiStatus = func(st *batch.TrainingJobStatus, _ *render.Job) any { return st }
	k.project = func(st *batch.TrainingJobStatus, _ *render.Job) batch.TrainingJobStatus { return *st }
	return k
}

var pyTorchJobKind = kubeflowKind(jobKind{
	gvk:     kubeflowv1.GroupVersion.WithKind("PyTorchJob"),
	newJob:  func() client.Object { return &kubeflowv1.PyTorchJob{} },
	newList: func() client.ObjectList { return &kubeflowv1.PyTorchJobList{} },
	model:   func(o client.Object) render.Job { return render.FromPyTorchJob(o.(*kubeflowv1.PyTorchJob)) },
	status: func(o client.Object) batch.TrainingJobStatus {
		return render.FromKubeflowStatus(&o.(*kubeflowv1.PyTorchJob).Status)
	},
	items: func(l client.ObjectList) []client.Object { return objects(l.(*kubeflowv1.PyTorchJobList).Items) },
	managed: func(o client.Object) bool {
		s := o.(*kubeflowv1.PyTorchJob).Spec
		return managedHere(s.EffectiveRunPolicy().ManagedBy)
	},
})

var tfJobKind = kubeflowKind(jobKind{
	gvk:     kubeflowv1.GroupVersion.WithKind("TFJob"),
	newJob:  func() client.Object { return &kubeflowv1.TFJob{} },
	newList: func() client.ObjectList { return &kubeflowv1.TFJobList{} },
	model:   func(o client.Object) render.Job { return render.FromTFJob(o.(*kubeflowv1.TFJob)) },
	status: func(o client.Object) batch.TrainingJobStatus {
		return render.FromKubeflowStatus(&o.(*kubeflowv1.TFJob).Status)
	},
	items: func(l client.ObjectList) []client.Object { return objects(l.(*kubeflowv1.TFJobList).Items) },
	managed: func(o client.Object) bool {
		s := o.(*kubeflowv1.TFJob).Spec
		return managedHere(s.EffectiveRunPolicy().ManagedBy)
	},
})

// kubeflowKind completes a kubeflow.org kind: status written in Kubeflow's shape.
func kubeflowKind(k jobKind) jobKind {
	k.apiStatus = func(st *batch.TrainingJobStatus, j *render.Job) any { return status.ToKubeflow(st, j) }
	k.project = status.ProjectKubeflow
	return k
}

// managedHere: a Kubeflow job is run here when runPolicy.managedBy is unset or names Kubeflow's
// training operator, which Trainyard stands in for; a job for another controller (Kueue's
// MultiKueue, say) is left alone.
func managedHere(by *string) bool {
	return by == nil || *by == "" || *by == kubeflowv1.ManagedByTrainingOperator
}

// t9kManagedHere: a T9k job is reconciled here when spec.managedBy is unset or names Trainyard,
// or names Kueue's MultiKueue (render then keeps only its Workload: render/multikueue.go); a job
// for another controller is left alone.
func t9kManagedHere(by *string) bool {
	return by == nil || *by == "" || *by == batch.ManagedByTrainyard || *by == kueue.ManagedByMultiKueue
}

// objects lists pointers to a list's items.
func objects[T any, P interface {
	*T
	client.Object
}](items []T) []client.Object {
	out := make([]client.Object, len(items))
	for i := range items {
		out[i] = P(&items[i])
	}
	return out
}

// pointers points at each item of a list.
func pointers[T any](items []T) []*T {
	out := make([]*T, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}
