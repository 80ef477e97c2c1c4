package v1

import "strings"

// Labels Trainyard puts on every object it renders for a kubeflow.org job, besides the T9k labels
// of apis/batch/v1beta1. They carry Kubeflow's keys and values, so selectors, dashboards and
// scripts written for Kubeflow's training operator keep working. Set by render; read by the
// controller's watches and by users' selectors.
const (
	// LabelJobName is the name of the job that owns the object.
	LabelJobName = "training.kubeflow.org/job-name"
	// LabelReplicaType is the replica type of a pod in lower case, e.g. worker for Worker.
	LabelReplicaType = "training.kubeflow.org/replica-type"
	// LabelReplicaIndex is the index of a pod within its replica type, in decimal.
	LabelReplicaIndex = "training.kubeflow.org/replica-index"
	// LabelJobRole is set to JobRoleMaster on the one pod that leads the job: the PyTorch master,
	// the TensorFlow chief (or master). Other pods do not carry it.
	LabelJobRole = "training.kubeflow.org/job-role"
	// LabelOperatorName names the operator that created the object; its value is OperatorName's.
	LabelOperatorName = "training.kubeflow.org/operator-name"
)

// Values of the labels above.
const (
	// JobRoleMaster is the value of LabelJobRole on the leading pod.
	JobRoleMaster = "master"
)

// OperatorName is the value of LabelOperatorName on the objects of a job of kind: the name
// Kubeflow's operator gives its controller of that kind (pytorchjob-controller, tfjob-controller),
// which selectors written for it (kubectl get pods -l ..., replicaStatuses' selector) name.
func OperatorName(kind string) string {
	return strings.ToLower(kind) + "-controller"
}

// The training container and its port, as Kubeflow names them. Render injects the environment
// into the container of this name (else into the first container) and reads the port of this name
// (else uses the default).
const (
	// PyTorchContainerName is the name of a PyTorchJob's training container.
	PyTorchContainerName = "pytorch"
	// PyTorchPortName is the name of the training container's port that MASTER_PORT points at.
	PyTorchPortName = "pytorchjob-port"
	// DefaultPyTorchPort is MASTER_PORT when the training container has no port of that name.
	DefaultPyTorchPort int32 = 23456

	// TFContainerName is the name of a TFJob's training container.
	TFContainerName = "tensorflow"
	// TFPortName is the name of the training container's port that TF_CONFIG's addresses use.
	TFPortName = "tfjob-port"
	// DefaultTFPort is the TF_CONFIG port when the training container has no port of that name.
	DefaultTFPort int32 = 2222
)
