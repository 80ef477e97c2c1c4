//go:build integration

package integration

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// TestDocumentedExamplesAreAccepted: every example manifest the README or docs/ name exists, and
// the API server accepts each of its objects (a server-side dry run, with the CRDs installed):
// the docs never point a user at a file that is gone or that admission refuses.
func TestDocumentedExamplesAreAccepted(t *testing.T) {
	docs := []string{filepath.Join("..", "README.md")}
	err := filepath.WalkDir(filepath.Join("..", "docs"), func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".md") {
			docs = append(docs, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	named := map[string][]string{}
	exampleRE := regexp.MustCompile(`examples/[A-Za-z0-9_./-]+\.ya?ml`)
	for _, doc := range docs {
		data, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range exampleRE.FindAllString(string(data), -1) {
			named[path] = append(named[path], doc)
		}
	}
	if len(named) < 5 {
		t.Fatalf("the docs name %d example manifests; want every example in examples/ named somewhere", len(named))
	}
	paths := make([]string, 0, len(named))
	for p := range named {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, path := range paths {
		t.Run(path, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("..", path))
			if err != nil {
				t.Fatalf("%v names it, but: %v", named[path], err)
			}
			dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
			for n := 0; ; n++ {
				obj := &unstructured.Unstructured{}
				if err := dec.Decode(&obj.Object); err == io.EOF {
					if n == 0 {
						t.Fatal("no object in the file")
					}
					return
				} else if err != nil {
					t.Fatalf("document %d: %v", n+1, err)
				}
				if len(obj.Object) == 0 {
					continue
				}
				gvk := obj.GroupVersionKind()
				resource := schema.GroupVersionResource{Group: gvk.Group, Version: gvk.Version, Resource: strings.ToLower(gvk.Kind) + "s"}
				if obj.GetNamespace() == "" {
					obj.SetNamespace("default")
				}
				_, err := cluster.Resource(resource).Namespace(obj.GetNamespace()).Create(context.Background(), obj, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
				if err != nil {
					t.Errorf("%s %s: the API server refuses it: %v", gvk.Kind, obj.GetName(), err)
				}
			}
		})
	}
	// Every example is named by some doc.
	all, _ := filepath.Glob(filepath.Join("..", "examples", "*.yaml"))
	more, _ := filepath.Glob(filepath.Join("..", "examples", "*", "*.yaml"))
	for _, f := range append(all, more...) {
		rel := strings.TrimPrefix(filepath.ToSlash(f), "../")
		if named[rel] == nil {
			t.Errorf("%s is named by no doc", rel)
		}
	}
}
