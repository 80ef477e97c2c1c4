package main

import (
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// A root rule may say fieldPath=".metadata.name" only if the schema declares metadata.name.
func TestDeclareMetadataName(t *testing.T) {
	root := &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
		"metadata": {Type: "object"},
		"spec":     {Type: "object"},
	}}
	declareMetadataName(root)
	meta := root.Properties["metadata"]
	if meta.Type != "object" || len(meta.Properties) != 1 || meta.Properties["name"].Type != "string" {
		t.Fatalf("metadata is %+v; want an object declaring only name, a string", meta)
	}
	noMeta := &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": {Type: "object"}}}
	declareMetadataName(noMeta)
	if _, ok := noMeta.Properties["metadata"]; ok {
		t.Errorf("a schema without metadata got one")
	}
}
