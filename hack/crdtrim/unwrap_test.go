package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

func TestUnwrap(t *testing.T) {
	for in, want := range map[string]string{
		"one line":                         "one line",
		"a Go comment's\nlines, joined":    "a Go comment's lines, joined",
		"first\nparagraph\n\nsecond\none":  "first paragraph\n\nsecond one",
		"a list:\n- one\n- two\nafter":     "a list:\n- one\n- two after",
		"code:\n  indented\n  kept\nprose": "code:\n  indented\n  kept prose",
	} {
		if got := unwrap(in); got != want {
			t.Errorf("unwrap(%q) = %q; want %q", in, got, want)
		}
	}
}

// eachSchema calls visit on every schema of the installed CRDs (the four files under kustomize/),
// with its file's name and its path from the version's root; the parent of a property sees it
// before its own properties are visited.
func eachSchema(t *testing.T, visit func(file, path string, s *apiextensionsv1.JSONSchemaProps)) {
	t.Helper()
	files, _ := filepath.Glob("../../kustomize/crd/bases/*.yaml")
	more, _ := filepath.Glob("../../kustomize/kubeflow/crd/*.yaml")
	files = append(files, more...)
	if len(files) != 4 {
		t.Fatalf("found %d CRD files; want 4", len(files))
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.Unmarshal(data, &crd); err != nil {
			t.Fatal(err)
		}
		var walk func(path string, s *apiextensionsv1.JSONSchemaProps)
		walk = func(path string, s *apiextensionsv1.JSONSchemaProps) {
			visit(filepath.Base(f), path, s)
			for name, p := range s.Properties {
				walk(path+"."+name, &p)
			}
			if s.Items != nil && s.Items.Schema != nil {
				walk(path+"[]", s.Items.Schema)
			}
			if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
				walk(path+"{}", s.AdditionalProperties.Schema)
			}
		}
		for _, v := range crd.Spec.Versions {
			if v.Schema != nil && v.Schema.OpenAPIV3Schema != nil {
				walk(v.Name, v.Schema.OpenAPIV3Schema)
			}
		}
	}
}

// TestTheCRDsDescriptionsReadAsParagraphs: controller-gen keeps the Go comments' line breaks in
// the descriptions, and kubectl explain prints them as they are and then wraps again, so every
// field's text read ragged (a line of 90 characters, then one of 20). The installed CRDs hold
// each paragraph on one line.
func TestTheCRDsDescriptionsReadAsParagraphs(t *testing.T) {
	bad := map[string]int{}
	first := map[string]string{}
	eachSchema(t, func(file, path string, s *apiextensionsv1.JSONSchemaProps) {
		if d := s.Description; strings.Contains(strings.ReplaceAll(d, "\n\n", ""), "\n") {
			if bad[file] == 0 {
				first[file] = path + ": " + d
			}
			bad[file]++
		}
	})
	for file, n := range bad {
		t.Errorf("%s: %d descriptions break lines inside a paragraph (make manifests), the first %q", file, n, first[file])
	}
}

// TestTheCRDsDescriptionsNameNoGoIdentifier: the descriptions come from the Go comments of apis/,
// which named the Go constants behind a value ("Defaults to Running (DefaultCleanPodPolicy)"),
// and kubectl explain showed those names to users, who can set only the value. No exported
// identifier of the API packages appears in a description (the kinds' names excepted). The
// pod template keeps a description of its own (the ones inside it are trimmed).
func TestTheCRDsDescriptionsNameNoGoIdentifier(t *testing.T) {
	idents := map[string]bool{}
	for _, dir := range []string{"../../apis/batch/v1beta1", "../../apis/kubeflow/v1"} {
		pkgs, err := parser.ParseDir(token.NewFileSet(), dir, func(fi fs.FileInfo) bool {
			return !strings.HasSuffix(fi.Name(), "_test.go") && !strings.HasPrefix(fi.Name(), "zz_")
		}, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pkgs {
			for _, f := range p.Files {
				for name, obj := range f.Scope.Objects {
					if ast.IsExported(name) && (obj.Kind == ast.Con || obj.Kind == ast.Var || obj.Kind == ast.Fun) {
						idents[name] = true
					}
				}
			}
		}
	}
	if len(idents) < 10 {
		t.Fatalf("found %d exported identifiers in apis/; want the packages' constants", len(idents))
	}
	word := regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)
	eachSchema(t, func(file, path string, s *apiextensionsv1.JSONSchemaProps) {
		for _, w := range word.FindAllString(s.Description, -1) {
			if idents[w] {
				t.Errorf("%s %s: the description names the Go identifier %s: %q", file, path, w, s.Description)
			}
		}
		if p, ok := s.Properties["template"]; ok && p.Description == "" {
			t.Errorf("%s %s.template has no description", file, path)
		}
	})
}
