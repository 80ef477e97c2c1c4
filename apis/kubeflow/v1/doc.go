// Package v1 holds the kubeflow.org/v1 APIs Trainyard serves for compatibility with Kubeflow's
// training operator: PyTorchJob and TFJob. A manifest written for Kubeflow applies unchanged and is
// run by the same core as the batch.tensorstack.dev kinds.
//
// Both field layouts Kubeflow has used are accepted: the run policy written directly under spec
// (activeDeadlineSeconds, backoffLimit, cleanPodPolicy, ttlSecondsAfterFinished, as the v1 API
// reference and TFJob v1beta2 have it) and spec.runPolicy of later releases. A job may set a field
// in both places only to the same value; EffectiveRunPolicy merges the two.
//
// TFJob is also served as kubeflow.org/v1beta2, a deprecated alias with the same schema (added to
// the CRD by hack/crdtrim, not declared here): the v1beta2 field set is a subset of v1's.
//
// Apply configurations are generated into apis/kubeflow/applyconfiguration, apart from the
// batch.tensorstack.dev ones: controller-gen writes one utils.go and internal/ per output folder
// and package, so two API packages cannot share one.
//
// The CRDs are installed only by the opt-in overlay kustomize/kubeflow, because they would clash
// with a Kubeflow install. Every check that can be made without the cluster is an OpenAPI bound or
// a CEL rule whose message names the field.
//
// +kubebuilder:object:generate=true
// +kubebuilder:ac:generate=true
// +kubebuilder:ac:output:package=../applyconfiguration
// +groupName=kubeflow.org
package v1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of these APIs.
	GroupVersion = schema.GroupVersion{Group: "kubeflow.org", Version: "v1"}

	// SchemeGroupVersion is GroupVersion under the name generated code expects.
	SchemeGroupVersion = GroupVersion

	// SchemeBuilder registers the types of this package.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the types of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
