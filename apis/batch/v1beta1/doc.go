// Package v1beta1 holds the batch.tensorstack.dev/v1beta1 training-job APIs served by Trainyard:
// PyTorchTrainingJob and TensorFlowTrainingJob.
//
// Every check that can be made without the cluster is declared here as an OpenAPI bound or a CEL
// rule whose message names the field, so bad input is refused at admission and never reaches the
// controller.
//
// +kubebuilder:object:generate=true
// +kubebuilder:ac:generate=true
// +kubebuilder:ac:output:package=../../applyconfiguration
// +groupName=batch.tensorstack.dev
package v1beta1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of these APIs.
	GroupVersion = schema.GroupVersion{Group: "batch.tensorstack.dev", Version: "v1beta1"}

	// SchemeGroupVersion is GroupVersion under the name generated code expects.
	SchemeGroupVersion = GroupVersion

	// SchemeBuilder registers the types of this package.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the types of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
