//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"
	"sigs.k8s.io/yaml"
)

// The operator's identity in the install: its ServiceAccount and namespace (kustomize/default).
const (
	operatorNamespace      = "trainyard-system"
	operatorServiceAccount = "trainyard"
)

// operatorKubeconfig is a kubeconfig with a token of the operator's ServiceAccount: the suite runs
// the operator under exactly the RBAC the install grants, so every operator feature also proves
// that RBAC enough.
var operatorKubeconfig string

// rbacKinds are the objects of the install that grant the operator its rights.
var rbacKinds = []string{"Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}

// installManifests renders a kustomize overlay with the pinned kubectl and returns the documents
// whose kind is in kinds.
func installManifests(ctx context.Context, cfg *envconf.Config, overlay string, kinds []string) ([]*unstructured.Unstructured, error) {
	out, err := kubectl(ctx, cfg, "", "kustomize", filepath.Join(repoRoot, "kustomize", overlay))
	if err != nil {
		return nil, err
	}
	var objs []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(out), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			break
		}
		if len(u.Object) > 0 && slices.Contains(kinds, u.GetKind()) {
			objs = append(objs, u)
		}
	}
	return objs, nil
}

func toYAML(objs []*unstructured.Unstructured) (string, error) {
	var buf bytes.Buffer
	for _, o := range objs {
		b, err := yaml.Marshal(o.Object)
		if err != nil {
			return "", err
		}
		buf.WriteString("---\n")
		buf.Write(b)
	}
	return buf.String(), nil
}

// installOperatorRBAC applies the RBAC of kustomize/kubeflow (the default install's and the
// overlay's) and writes operatorKubeconfig with a token of the operator's ServiceAccount.
func installOperatorRBAC(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
	objs, err := installManifests(ctx, cfg, "kubeflow", rbacKinds)
	if err != nil {
		return ctx, err
	}
	manifest, err := toYAML(objs)
	if err != nil {
		return ctx, err
	}
	if out, err := kubectl(ctx, cfg, manifest, "apply", "--server-side", "-f", "-"); err != nil {
		return ctx, fmt.Errorf("applying the operator's RBAC: %w\n%s", err, out)
	}
	path := filepath.Join(repoRoot, ".devcluster", "e2e", "operator.kubeconfig")
	if err := serviceAccountKubeconfig(ctx, cfg, operatorNamespace, operatorServiceAccount, path); err != nil {
		return ctx, err
	}
	operatorKubeconfig = path
	return ctx, nil
}

// serviceAccountKubeconfig writes to path the test cluster's kubeconfig with a token of the
// ServiceAccount namespace/name as its only user.
func serviceAccountKubeconfig(ctx context.Context, cfg *envconf.Config, namespace, name, path string) error {
	token, err := kubectl(ctx, cfg, "", "create", "token", name, "-n", namespace, "--duration=2h")
	if err != nil {
		return fmt.Errorf("a token for the ServiceAccount %s/%s: %w", namespace, name, err)
	}
	kc, err := clientcmd.LoadFromFile(cfg.KubeconfigFile())
	if err != nil {
		return err
	}
	kc.AuthInfos = map[string]*clientcmdapi.AuthInfo{name: {Token: strings.TrimSpace(token)}}
	for _, c := range kc.Contexts {
		c.AuthInfo = name
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return clientcmd.WriteToFile(*kc, path)
}

func uninstallOperatorRBAC(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
	objs, err := installManifests(ctx, cfg, "kubeflow", rbacKinds[1:]) // the namespace stays
	if err != nil {
		return ctx, err
	}
	manifest, err := toYAML(objs)
	if err != nil {
		return ctx, err
	}
	_, err = kubectl(ctx, cfg, manifest, "delete", "--ignore-not-found", "-f", "-")
	return ctx, err
}

// TestLockedDownInstall: the install runs the operator under the restricted Pod Security profile,
// and its ServiceAccount may do exactly what e2e/testdata/rbac-can-i.txt lists.
func TestLockedDownInstall(t *testing.T) {
	restricted := features.New("the operator's Deployment is admitted into a namespace that enforces the restricted Pod Security profile").
		WithLabel("area", "install").
		Assess("server dry-run of the Deployment and of a pod of its template: admitted, no warning", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			ns := fmt.Sprintf("restricted-%04x", rand.IntN(1<<16))
			nsYAML := fmt.Sprintf(`apiVersion: v1
kind: Namespace
metadata:
  name: %s
  labels:
    pod-security.kubernetes.io/enforce: restricted
    pod-security.kubernetes.io/enforce-version: latest
    pod-security.kubernetes.io/warn: restricted
    pod-security.kubernetes.io/warn-version: latest
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: %s, namespace: %s}
`, ns, operatorServiceAccount, ns)
			if out, err := kubectl(ctx, cfg, nsYAML, "apply", "-f", "-"); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			t.Cleanup(func() { _, _ = kubectl(context.Background(), cfg, "", "delete", "namespace", ns, "--wait=false") })
			deps, err := installManifests(ctx, cfg, "default", []string{"Deployment"})
			if err != nil || len(deps) != 1 {
				t.Fatalf("the default install's Deployment: %d found, %v", len(deps), err)
			}
			dep := deps[0]
			dep.SetNamespace(ns)
			manifest, _ := toYAML(deps)
			out, err := kubectl(ctx, cfg, manifest, "apply", "--dry-run=server", "-f", "-")
			if err != nil || strings.Contains(out, "PodSecurity") {
				t.Errorf("the Deployment in a restricted namespace: %v\n%s", err, out)
			}
			// Pod Security enforces on pods, not Deployments: a pod of the template must pass.
			tmpl, _, _ := unstructured.NestedMap(dep.Object, "spec", "template")
			pod := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": tmpl["metadata"], "spec": tmpl["spec"]}}
			pod.SetNamespace(ns)
			pod.SetName("trainyard-dry-run")
			manifest, _ = toYAML([]*unstructured.Unstructured{pod})
			out, err = kubectl(ctx, cfg, manifest, "apply", "--dry-run=server", "-f", "-")
			if err != nil || strings.Contains(out, "PodSecurity") {
				t.Errorf("a pod of the operator's template in a restricted namespace: %v\n%s", err, out)
			}
			return ctx
		}).
		Feature()
	canI := features.New("the operator's ServiceAccount can do exactly what e2e/testdata/rbac-can-i.txt lists: no Secrets, no cluster-wide writes beyond its kinds and what it creates").
		WithLabel("area", "install").
		Assess("kubectl auth can-i --list as the ServiceAccount, compared", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			out, err := kubectl(ctx, cfg, "", "auth", "can-i", "--list", "-n", operatorNamespace,
				"--as=system:serviceaccount:"+operatorNamespace+":"+operatorServiceAccount)
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			got := canIRules(out)
			wantFile := filepath.Join(repoRoot, "e2e", "testdata", "rbac-can-i.txt")
			if os.Getenv("E2E_UPDATE") != "" {
				_ = os.WriteFile(wantFile, []byte(strings.Join(got, "\n")+"\n"), 0o644)
			}
			data, err := os.ReadFile(wantFile)
			if err != nil {
				t.Fatal(err)
			}
			want := canIRules(string(data))
			for _, r := range got {
				if !slices.Contains(want, r) {
					t.Errorf("the ServiceAccount may %q, which %s does not list", r, wantFile)
				}
				if strings.HasPrefix(r, "secrets") || strings.HasPrefix(r, "configmaps") {
					t.Errorf("the ServiceAccount may touch %s", r)
				}
			}
			for _, r := range want {
				if !slices.Contains(got, r) {
					t.Errorf("%s lists %q, which the ServiceAccount may not do", wantFile, r)
				}
			}
			return ctx
		}).
		Feature()
	users := features.New("a namespace's editors may run training jobs of every kind and its viewers may read them: the users' roles aggregate into edit, admin and view").
		WithLabel("area", "install").
		Assess("kubectl auth can-i as ServiceAccounts bound to edit and to view, and a job created as each", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			ns := fmt.Sprintf("users-%04x", rand.IntN(1<<16))
			manifest := fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata: {name: %s}\n", ns)
			for who, role := range map[string]string{"alice": "edit", "bob": "view"} {
				manifest += fmt.Sprintf(`---
apiVersion: v1
kind: ServiceAccount
metadata: {name: %[1]s, namespace: %[3]s}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: %[1]s-%[2]s, namespace: %[3]s}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: %[2]s}
subjects: [{kind: ServiceAccount, name: %[1]s, namespace: %[3]s}]
`, who, role, ns)
			}
			if out, err := kubectl(ctx, cfg, manifest, "apply", "-f", "-"); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			t.Cleanup(func() { _, _ = kubectl(context.Background(), cfg, "", "delete", "namespace", ns, "--wait=false") })
			may := func(who, verb, resource, sub, in string) string {
				args := []string{"auth", "can-i", verb, resource, "-n", in, "--as=system:serviceaccount:" + ns + ":" + who}
				if sub != "" {
					args = append(args, "--subresource="+sub)
				}
				out, _ := kubectl(ctx, cfg, "", args...) // "no" exits 1
				return strings.TrimSpace(out)
			}
			// The aggregation is kube-controller-manager's (its clusterrole-aggregation controller).
			start := time.Now()
			eventually(t, 60*time.Second, "edit and view hold the training jobs' rules", func() (bool, string) {
				a, b := may("alice", "create", "tfjobs.kubeflow.org", "", ns), may("bob", "list", "tfjobs.kubeflow.org", "", ns)
				return a == "yes" && b == "yes", "alice create " + a + ", bob list " + b
			})
			t.Logf("edit and view aggregated the users' roles %.1f s after the RoleBindings", time.Since(start).Seconds())
			jobKinds := []string{"pytorchtrainingjobs.batch.tensorstack.dev", "tensorflowtrainingjobs.batch.tensorstack.dev", "pytorchjobs.kubeflow.org", "tfjobs.kubeflow.org"}
			for _, r := range jobKinds {
				for _, verb := range []string{"create", "delete", "patch", "get", "list", "watch"} {
					if got := may("alice", verb, r, "", ns); got != "yes" {
						t.Errorf("alice (edit) may not %s %s: %s", verb, r, got)
					}
					want := map[bool]string{true: "yes", false: "no"}[verb == "get" || verb == "list" || verb == "watch"]
					if got := may("bob", verb, r, "", ns); got != want {
						t.Errorf("bob (view) %s %s: %s; want %s", verb, r, got, want)
					}
				}
				if got := may("alice", "create", r, "", "default"); got != "no" {
					t.Errorf("alice may create %s outside her namespace: %s", r, got)
				}
			}
			for _, r := range []string{"pytorchtrainingjobs.batch.tensorstack.dev", "pytorchjobs.kubeflow.org"} {
				if a, b := may("alice", "patch", r, "scale", ns), may("bob", "patch", r, "scale", ns); a != "yes" || b != "no" {
					t.Errorf("kubectl scale of %s: alice (edit) %s, bob (view) %s; want yes and no", r, a, b)
				}
			}
			job := fmt.Sprintf(`apiVersion: batch.tensorstack.dev/v1beta1
kind: PyTorchTrainingJob
metadata: {name: by-alice, namespace: %s}
spec:
  replicaSpecs:
  - type: master
    replicas: 1
    template: {spec: {containers: [{name: pytorch, image: example.invalid/train:1}]}}
`, ns)
			if out, err := kubectl(ctx, cfg, job, "create", "--dry-run=server", "-f", "-", "--as=system:serviceaccount:"+ns+":alice"); err != nil {
				t.Errorf("creating a job as alice (edit): %v", err)
			} else {
				t.Logf("as alice: %s", strings.TrimSpace(out))
			}
			if out, err := kubectl(ctx, cfg, job, "create", "--dry-run=server", "-f", "-", "--as=system:serviceaccount:"+ns+":bob"); err == nil || !strings.Contains(out, "Forbidden") && !strings.Contains(out, "forbidden") {
				t.Errorf("creating a job as bob (view): %v\n%s; want forbidden", err, out)
			}
			return ctx
		}).
		Feature()
	testenv.Test(t, restricted, canI, users)
}

var spaces = regexp.MustCompile(`\s+`)

// canIRules reduces `kubectl auth can-i --list` output to one "resource urls names verbs" line per
// rule, sorted, the header dropped.
func canIRules(out string) []string {
	var rules []string
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(spaces.ReplaceAllString(line, " "))
		if line == "" || strings.HasPrefix(line, "Resources ") {
			continue
		}
		rules = append(rules, line)
	}
	slices.Sort(rules)
	return slices.Compact(rules)
}
