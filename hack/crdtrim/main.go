// Command crdtrim finishes the CRDs controller-gen generates.
//
// It joins each description's lines into paragraphs (unwrap.go), for kubectl explain.
//
// It removes the descriptions inside pod templates. Each replica spec embeds a full
// PodTemplateSpec, whose upstream descriptions make a CRD about 720 KB: too large for the
// last-applied annotation of a client-side `kubectl apply` (256 KiB). The pod template's
// documentation is Kubernetes' own (`kubectl explain pod.spec`); the descriptions of Trainyard's
// fields are kept. A CRD still too large for that annotation is an error.
//
// It declares metadata.name (a string) in each root schema: controller-gen writes metadata as a
// bare object, and the API server accepts a rule's fieldPath only when the schema has the field, so
// without it the root rules on the job's name (a DNS-1035 label, short enough for the pod names)
// could not name metadata.name and were reported on "<nil>".
//
// It also adds the deprecated alias versions listed in alias.go (TFJob kubeflow.org/v1beta2).
//
// Usage: go run ./hack/crdtrim FILE...   (rewrites each file in place)
package main

import (
	"encoding/json"
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
			declareMetadataName(s.OpenAPIV3Schema)
		}
	}
	if err := addAliasVersions(&crd); err != nil {
		return err
	}
	if err := checkSize(&crd); err != nil {
		return err
	}
	out, err := yaml.Marshal(&crd)
	if err != nil {
		return err
	}
	// Drop the empty status the typed round trip adds, so the file stays a pure manifest.
	out = []byte(stripStatus(string(out)))
	return os.WriteFile(path, append([]byte("---\n"), out...), 0o644)
}

// lastAppliedLimit is the most bytes the annotations of an object may hold; a client-side
// `kubectl apply` stores the whole object, as JSON, in one of them.
const lastAppliedLimit = 256 * 1024

// checkSize fails when crd could not be installed by a client-side `kubectl apply`.
func checkSize(crd *apiextensionsv1.CustomResourceDefinition) error {
	data, err := json.Marshal(crd)
	if err != nil {
		return err
	}
	if len(data) > lastAppliedLimit {
		return fmt.Errorf("the CRD is %d bytes as JSON, more than the %d a client-side kubectl apply can record in its last-applied annotation; trim more descriptions", len(data), lastAppliedLimit)
	}
	return nil
}

// walk clears the descriptions inside pod templates (below any property named "template", a
// PodTemplateSpec) and unwraps the others. The template's own description stays: it is the
// job's, and kubectl explain showed "<empty>" for the field.
func walk(s *apiextensionsv1.JSONSchemaProps, inTemplate bool) {
	if inTemplate {
		s.Description = ""
	}
	s.Description = unwrap(s.Description)
	for name, p := range s.Properties {
		if name == "template" && !inTemplate {
			walkTemplate(&p)
		} else {
			walk(&p, inTemplate)
		}
		s.Properties[name] = p
	}
	if s.Items != nil && s.Items.Schema != nil {
		walk(s.Items.Schema, inTemplate)
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		walk(s.AdditionalProperties.Schema, inTemplate)
	}
}

// walkTemplate keeps a pod template's own description and clears those inside it.
func walkTemplate(s *apiextensionsv1.JSONSchemaProps) {
	d := unwrap(s.Description)
	walk(s, true)
	s.Description = d
}

// declareMetadataName adds metadata.name, a string, to root's metadata. The API server allows a
// root schema to declare metadata's name and generateName and nothing else there; declaring it
// lets a root rule say fieldPath=".metadata.name".
func declareMetadataName(root *apiextensionsv1.JSONSchemaProps) {
	meta, ok := root.Properties["metadata"]
	if !ok {
		return
	}
	if meta.Properties == nil {
		meta.Properties = map[string]apiextensionsv1.JSONSchemaProps{}
	}
	if _, ok := meta.Properties["name"]; !ok {
		meta.Properties["name"] = apiextensionsv1.JSONSchemaProps{Type: "string"}
	}
	root.Properties["metadata"] = meta
}

func stripStatus(s string) string {
	const tail = "status:\n  acceptedNames:\n    kind: \"\"\n    plural: \"\"\n  conditions: null\n  storedVersions: null\n"
	if len(s) >= len(tail) && s[len(s)-len(tail):] == tail {
		return s[:len(s)-len(tail)]
	}
	return s
}
