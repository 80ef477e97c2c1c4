// Command crdtrim removes the descriptions inside the pod templates of generated CRDs.
//
// Each replica spec embeds a full PodTemplateSpec, whose upstream descriptions make a CRD about
// 720 KB: too large for the last-applied annotation of a client-side `kubectl apply` (256 KiB).
// The pod template's documentation is Kubernetes' own (`kubectl explain pod.spec`); the
// descriptions of Trainyard's fields are kept.
//
// Usage: go run ./hack/crdtrim FILE...   (rewrites each file in place)
package main

import (
	"fmt"
	"os"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

func main() {
	for _, path := range os.Args[1:] {
		if err := trim(path); err != nil {
			fmt.Fprintf(os.Stderr, "crdtrim: %s: %v\n", path, err)
			os.Exit(1)
		}
	}
}

func trim(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(data, &crd); err != nil {
		return err
	}
	for i := range crd.Spec.Versions {
		if s := crd.Spec.Versions[i].Schema; s != nil && s.OpenAPIV3Schema != nil {
			walk(s.OpenAPIV3Schema, false)
		}
	}
	out, err := yaml.Marshal(&crd)
	if err != nil {
		return err
	}
	// Drop the empty status the typed round trip adds, so the file stays a pure manifest.
	out = []byte(stripStatus(string(out)))
	return os.WriteFile(path, append([]byte("---\n"), out...), 0o644)
}

// walk clears descriptions below any property named "template" (a PodTemplateSpec).
func walk(s *apiextensionsv1.JSONSchemaProps, inTemplate bool) {
	if inTemplate {
		s.Description = ""
	}
	for name, p := range s.Properties {
		walk(&p, inTemplate || name == "template")
		s.Properties[name] = p
	}
	if s.Items != nil && s.Items.Schema != nil {
		walk(s.Items.Schema, inTemplate)
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		walk(s.AdditionalProperties.Schema, inTemplate)
	}
}

func stripStatus(s string) string {
	const tail = "status:\n  acceptedNames:\n    kind: \"\"\n    plural: \"\"\n  conditions: null\n  storedVersions: null\n"
	if len(s) >= len(tail) && s[len(s)-len(tail):] == tail {
		return s[:len(s)-len(tail)]
	}
	return s
}
