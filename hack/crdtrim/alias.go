package main

import (
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// aliasVersion is a version a CRD serves besides its generated one, with that version's schema,
// subresources and columns. The schemas being identical, the CRD needs no conversion webhook: the
// API server only rewrites apiVersion (conversion strategy None).
type aliasVersion struct {
	// name of the served alias, e.g. v1beta2.
	name string
	// from is the generated version whose entry is copied; it stays the storage version.
	from string
	// warning is the deprecation warning clients print for each request to the alias.
	warning string
}

// aliasVersions lists, by CRD name, the alias versions to add. controller-gen builds one version
// per Go package; an alias needs no Go package of its own when it accepts exactly the same fields.
var aliasVersions = map[string][]aliasVersion{
	// Kubeflow's TFJob v1beta2 field set is a subset of v1's, so manifests written for v1beta2
	// apply unchanged; users are told to move on.
	"tfjobs.kubeflow.org": {{
		name:    "v1beta2",
		from:    "v1",
		warning: "kubeflow.org/v1beta2 TFJob is deprecated; change apiVersion to kubeflow.org/v1 (the fields are the same)",
	}},
}

// addAliasVersions adds the alias versions aliasVersions lists for crd, deprecated and not
// stored. An alias already present is replaced, so running twice changes nothing.
func addAliasVersions(crd *apiextensionsv1.CustomResourceDefinition) error {
	for _, alias := range aliasVersions[crd.Name] {
		source := -1
		for i, v := range crd.Spec.Versions {
			if v.Name == alias.from {
				source = i
			}
		}
		if source < 0 {
			return fmt.Errorf("alias %s copies version %s, which the CRD does not have", alias.name, alias.from)
		}
		entry := *crd.Spec.Versions[source].DeepCopy()
		entry.Name = alias.name
		entry.Served = true
		entry.Storage = false
		entry.Deprecated = true
		warning := alias.warning
		entry.DeprecationWarning = &warning

		replaced := false
		for i, v := range crd.Spec.Versions {
			if v.Name == alias.name {
				crd.Spec.Versions[i] = entry
				replaced = true
			}
		}
		if !replaced {
			crd.Spec.Versions = append(crd.Spec.Versions, entry)
		}
	}
	return nil
}
