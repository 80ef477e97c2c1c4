package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// version is a generated CRD version with a small schema and a status subresource.
func version(name string, storage bool) apiextensionsv1.CustomResourceDefinitionVersion {
	return apiextensionsv1.CustomResourceDefinitionVersion{
		Name:    name,
		Served:  true,
		Storage: storage,
		Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
			Type:       "object",
			Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": {Type: "object"}},
		}},
		Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
	}
}

func crd(name string, versions ...apiextensionsv1.CustomResourceDefinitionVersion) *apiextensionsv1.CustomResourceDefinition {
	c := &apiextensionsv1.CustomResourceDefinition{Spec: apiextensionsv1.CustomResourceDefinitionSpec{Versions: versions}}
	c.Name = name
	return c
}

func TestAddAliasVersions(t *testing.T) {
	warning := "kubeflow.org/v1beta2 TFJob is deprecated; change apiVersion to kubeflow.org/v1 (the fields are the same)"
	v1beta2 := version("v1beta2", false)
	v1beta2.Deprecated = true
	v1beta2.DeprecationWarning = &warning

	cases := map[string]struct {
		in           *apiextensionsv1.CustomResourceDefinition
		wantVersions []apiextensionsv1.CustomResourceDefinitionVersion
		wantErr      string
	}{
		"TFJob gets v1beta2, a deprecated copy of v1 that is served but not stored": {
			in:           crd("tfjobs.kubeflow.org", version("v1", true)),
			wantVersions: []apiextensionsv1.CustomResourceDefinitionVersion{version("v1", true), v1beta2},
		},
		"an alias already present is replaced, not added twice": {
			in:           crd("tfjobs.kubeflow.org", version("v1", true), version("v1beta2", true)),
			wantVersions: []apiextensionsv1.CustomResourceDefinitionVersion{version("v1", true), v1beta2},
		},
		"a CRD without aliases is left as it is": {
			in:           crd("pytorchjobs.kubeflow.org", version("v1", true)),
			wantVersions: []apiextensionsv1.CustomResourceDefinitionVersion{version("v1", true)},
		},
		"an alias of a version the CRD lacks is an error": {
			in:      crd("tfjobs.kubeflow.org", version("v2", true)),
			wantErr: "copies version v1, which the CRD does not have",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := addAliasVersions(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("addAliasVersions error = %v; want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("addAliasVersions: %v", err)
			}
			if diff := cmp.Diff(tc.wantVersions, tc.in.Spec.Versions); diff != "" {
				t.Errorf("versions (-want +got):\n%s", diff)
			}
		})
	}
}

// The alias is a deep copy: changing it must not change the version it was copied from.
func TestAliasSharesNoSchemaWithItsSource(t *testing.T) {
	c := crd("tfjobs.kubeflow.org", version("v1", true))
	if err := addAliasVersions(c); err != nil {
		t.Fatal(err)
	}
	c.Spec.Versions[1].Schema.OpenAPIV3Schema.Properties["spec"] = apiextensionsv1.JSONSchemaProps{Type: "string"}
	if got := c.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Type; got != "object" {
		t.Errorf("v1's spec type became %q after the alias changed; want object", got)
	}
}
