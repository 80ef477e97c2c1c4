package controller

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
	"github.com/trainyard/trainyard/render"
)

// jobKind adapts one API kind to the shared reconciler: how to make an empty object, convert it
// into render's model, and reach its status.
type jobKind struct {
	gvk     schema.GroupVersionKind
	newJob  func() client.Object
	newList func() client.ObjectList
	model   func(client.Object) render.Job
	status  func(client.Object) *batch.TrainingJobStatus
	items   func(client.ObjectList) []client.Object
}

var pyTorchKind = jobKind{
	gvk:     batch.GroupVersion.WithKind("PyTorchTrainingJob"),
	newJob:  func() client.Object { return &batch.PyTorchTrainingJob{} },
	newList: func() client.ObjectList { return &batch.PyTorchTrainingJobList{} },
	model:   func(o client.Object) render.Job { return render.FromPyTorchTrainingJob(o.(*batch.PyTorchTrainingJob)) },
	status:  func(o client.Object) *batch.TrainingJobStatus { return &o.(*batch.PyTorchTrainingJob).Status },
	items:   func(l client.ObjectList) []client.Object { return objects(l.(*batch.PyTorchTrainingJobList).Items) },
}

var tensorFlowKind = jobKind{
	gvk:     batch.GroupVersion.WithKind("TensorFlowTrainingJob"),
	newJob:  func() client.Object { return &batch.TensorFlowTrainingJob{} },
	newList: func() client.ObjectList { return &batch.TensorFlowTrainingJobList{} },
	model: func(o client.Object) render.Job {
		return render.FromTensorFlowTrainingJob(o.(*batch.TensorFlowTrainingJob))
	},
	status: func(o client.Object) *batch.TrainingJobStatus { return &o.(*batch.TensorFlowTrainingJob).Status },
	items:  func(l client.ObjectList) []client.Object { return objects(l.(*batch.TensorFlowTrainingJobList).Items) },
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
