//go:build integration

// Package integration checks what the API server itself admits: the CRDs of kustomize/crd/bases
// and of the kubeflow overlay (kustomize/kubeflow/crd) are installed into a real kube-apiserver
// (envtest) and manifests are created against it, so
// every OpenAPI bound and CEL rule of apis/ is exercised exactly as a user's `kubectl apply`
// would exercise it. No controller runs.
//
// Manifests are written as YAML and sent unstructured, so that aliases, unknown values and
// wrong types reach the server as a user would write them. Each case works in a namespace of
// its own, so cases never see each other's objects.
//
// Run with `make test-integration`, which builds the pinned kube-apiserver and etcd and points
// KUBEBUILDER_ASSETS at them.
package integration

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/yaml"
)

// apiVersion is filled in for manifests that leave it out.
const apiVersion = "batch.tensorstack.dev/v1beta1"

// resources maps the kinds under test to their REST resources. The version is the manifest's,
// since TFJob is served as kubeflow.org/v1 and v1beta2.
var resources = map[string]schema.GroupResource{
	"PyTorchTrainingJob":    {Group: "batch.tensorstack.dev", Resource: "pytorchtrainingjobs"},
	"TensorFlowTrainingJob": {Group: "batch.tensorstack.dev", Resource: "tensorflowtrainingjobs"},
	"PyTorchJob":            {Group: "kubeflow.org", Resource: "pytorchjobs"},
	"TFJob":                 {Group: "kubeflow.org", Resource: "tfjobs"},
}

var namespaces = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

// pods replaces the placeholders PYTORCH_POD and TF_POD (and, for the kubeflow.org kinds,
// PYTORCHJOB_POD and TFJOB_POD, with Kubeflow's port names) in manifests with a small pod
// template, so the cases show only what they are about.
var pods = strings.NewReplacer(
	"PYTORCH_POD", "{spec: {containers: [{name: pytorch, image: 'pytorch/pytorch:2.4.0', args: [train.py], ports: [{name: pytorch, containerPort: 29500}]}]}}",
	"TF_POD", "{spec: {containers: [{name: tensorflow, image: 'tensorflow/tensorflow:2.16.1', args: [train.py], ports: [{name: tensorflow, containerPort: 2222}]}]}}",
	"PYTORCHJOB_POD", "{spec: {containers: [{name: pytorch, image: 'pytorch/pytorch:2.4.0', args: [train.py], ports: [{name: pytorchjob-port, containerPort: 23456}]}]}}",
	"TFJOB_POD", "{spec: {containers: [{name: tensorflow, image: 'tensorflow/tensorflow:2.16.1', args: [train.py], ports: [{name: tfjob-port, containerPort: 2222}]}]}}",
)

// cluster is the client of the one API server all tests share; restConfig is its configuration,
// for tests that need a client of their own.
var (
	cluster    dynamic.Interface
	restConfig *rest.Config
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		fmt.Fprintln(os.Stderr, "integration: KUBEBUILDER_ASSETS is not set; run `make test-integration`, which builds kube-apiserver and etcd and sets it")
		return 1
	}
	logf.SetLogger(zap.New(zap.WriteTo(io.Discard)))

	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("..", "kustomize", "crd", "bases"), filepath.Join("..", "kustomize", "kubeflow", "crd")},
		ErrorIfCRDPathMissing: true,
	}
	start := time.Now()
	cfg, err := env.Start()
	if err != nil {
		fmt.Fprintf(os.Stderr, "integration: starting envtest (kube-apiserver, etcd and the CRDs): %v\n", err)
		// Note: a CRD the API server refuses fails Start after kube-apiserver and etcd are up;
		// they were left running (found 73 minutes later, orphaned).
		if err := env.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "integration: stopping envtest: %v\n", err)
		}
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "integration: stopping envtest: %v\n", err)
		}
	}()
	fmt.Printf("integration: envtest with %d CRDs ready in %s\n", len(env.CRDs), time.Since(start).Round(time.Millisecond))

	restConfig = cfg
	cluster, err = dynamic.NewForConfig(cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "integration: dynamic client: %v\n", err)
		return 1
	}
	return m.Run()
}

// longName returns a valid job name of n characters.
func longName(n int) string {
	return "j" + strings.Repeat("x", n-1)
}

// manifest decodes one YAML object, after replacing the pod placeholders.
func manifest(t *testing.T, text string) *unstructured.Unstructured {
	t.Helper()
	data, err := yaml.YAMLToJSON([]byte(pods.Replace(text)))
	if err != nil {
		t.Fatalf("the test's manifest is not YAML: %v\n%s", err, text)
	}
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(data); err != nil {
		t.Fatalf("the test's manifest is not an object: %v\n%s", err, text)
	}
	if obj.GetAPIVersion() == "" {
		obj.SetAPIVersion(apiVersion)
	}
	return obj
}

// newNamespace creates a namespace for one case. Namespaces are not deleted: the API server
// goes away with the test binary.
func newNamespace(t *testing.T) string {
	t.Helper()
	ns := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1",
		"kind":       "Namespace",
		"metadata":   map[string]any{"generateName": "admission-"},
	}}
	created, err := cluster.Resource(namespaces).Create(t.Context(), ns, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating a namespace: %v", err)
	}
	return created.GetName()
}

// jobs is the client of obj's kind in namespace ns.
func jobs(t *testing.T, obj *unstructured.Unstructured, ns string) dynamic.ResourceInterface {
	t.Helper()
	gr, ok := resources[obj.GetKind()]
	if !ok {
		t.Fatalf("the test does not know kind %q", obj.GetKind())
	}
	gvr := gr.WithVersion(obj.GroupVersionKind().Version)
	return cluster.Resource(gvr).Namespace(ns)
}

// create creates obj in namespace ns and returns the object the server stored.
func create(t *testing.T, ns string, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	t.Helper()
	return jobs(t, obj, ns).Create(t.Context(), obj, metav1.CreateOptions{})
}

// wantRefused fails the test unless err is the API server refusing an object as invalid with a
// message that contains every one of want.
func wantRefused(t *testing.T, err error, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("the API server accepted the object; want it refused with a message containing %q", want)
	}
	t.Logf("refused as expected: %v", err)
	if !apierrors.IsInvalid(err) {
		t.Errorf("the API server answered %s (%v); want Invalid (422)", apierrors.ReasonForError(err), err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("the refusal does not mention %q; it says:\n  %v", w, err)
		}
	}
}

// wantAccepted fails the test if err is not nil.
func wantAccepted(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("the API server refused the object; want it accepted. It says:\n  %v", err)
	}
}

func TestBadManifestsAreRefused(t *testing.T) {
	cases := map[string]struct {
		manifest string
		// wantErr are the parts the refusal must contain: the field's path and the rule's meaning.
		wantErr []string
	}{
		// Replica types and counts.
		"an unknown TensorFlow replica type is refused": {
			manifest: `
kind: TensorFlowTrainingJob
metadata: {name: tf}
spec:
  replicaSpecs:
  - {type: master, template: TF_POD}`,
			wantErr: []string{"spec.replicaSpecs[0].type", `Unsupported value: "master"`, `"chief"`},
		},
		"a TensorFlow replica type in capitals is refused": {
			manifest: `
kind: TensorFlowTrainingJob
metadata: {name: tf}
spec:
  replicaSpecs:
  - {type: Worker, template: TF_POD}`,
			wantErr: []string{"spec.replicaSpecs[0].type", `Unsupported value: "Worker"`},
		},
		"a PyTorch replica type that is not a DNS label is refused": {
			manifest: `
kind: PyTorchTrainingJob
metadata: {name: pt}
spec:
  replicaSpecs:
  - {type: Worker_1, template: PYTORCH_POD}`,
			wantErr: []string{`spec.replicaSpecs[0].type: Invalid value: "Worker_1": must be a DNS label (lower-case letters, digits and hyphens, such as master or worker)`},
		},
		"a PyTorch replica type written as Kubeflow spells it is refused, saying so": {
			// Kubeflow's keys are Master and Worker; these types are lower case.
			manifest: `
kind: PyTorchTrainingJob
metadata: {name: pt}
spec:
  replicaSpecs:
  - {type: Worker, template: PYTORCH_POD}`,
			wantErr: []string{`spec.replicaSpecs[0].type: Invalid value: "Worker": replica types are written in lower case: worker, not Worker`},
		},
		"a topologyKey that is not a label key is refused": {
			manifest: `
kind: PyTorchTrainingJob
metadata: {name: pt}
spec:
  scheduler:
    kubernetes: {topologyKey: "rack/"}
  replicaSpecs:
  - {type: worker, template: PYTORCH_POD}`,
			wantErr: []string{`spec.scheduler.kubernetes.topologyKey: Invalid value: "rack/": must be a node label key`},
		},
		"two masters are refused": {
			manifest: `
kind: PyTorchTrainingJob
metadata: {name: pt}
spec:
  replicaSpecs:
  - {type: master, replicas: 2, template: PYTORCH_POD}
  - {type: worker, replicas: 2, template: PYTORCH_POD}`,
			wantErr: []string{"spec.replicaSpecs[0].replicas: Invalid value: the master replica type has at most 1 replica"},
		},
		"two chiefs are refused": {
			manifest: `
kind: TensorFlowTrainingJob
metadata: {name: tf}
spec:
  replicaSpecs:
  - {type: chief, replicas: 2, template: TF_POD}`,
			wantErr: []string{"spec.replicaSpecs[0].replicas: Invalid value: the chief replica type has at most 1 replica"},
		},
		"a master with a scalingWeight is refused": {
			// Elastic scaling would give the master more than its one replica.
			manifest: `
kind: PyTorchTrainingJob
metadata: {name: pt}
spec:
  elastic: {enabled: true, minReplicas: 2, maxReplicas: 4}
  torchrunConfig: {enabled: true}
  replicaSpecs:
  - {type: master, scalingWeight: 1, template: PYTORCH_POD}
  - {type: worker, scalingWeight: 1, template: PYTORCH_POD}`,
			wantErr: []string{"spec.replicaSpecs[0].scalingWeight: Invalid value: the master replica type has at most 1 replica"},
		},
		"a PyTorch replica type listed twice is refused": {
			manifest: `
kind: PyTorchTrainingJob
metadata: {name: pt}
spec:
  replicaSpecs:
  - {type: worker, replicas: 1, template: PYTORCH_POD}
  - {type: worker, replicas: 2, template: PYTORCH_POD}`,
			wantErr: []string{"spec.replicaSpecs[1]", "Duplicate value"},
		},
		"a TensorFlow replica type listed twice is refused": {
			manifest: `
kind: TensorFlowTrainingJob
metadata: {name: tf}
spec:
  replicaSpecs:
  - {type: chief, template: TF_POD}
  - {type: chief, template: TF_POD}`,
			wantErr: []string{"spec.replicaSpecs[1]", "Duplicate value"},
		},
		"negative replicas are refused": {
			manifest: `
kind: PyTorchTrainingJob
metadata: {name: pt}
spec:
  replicaSpecs:
  - {type: worker, replicas: -1, template: PYTORCH_POD}`,
			wantErr: []string{"spec.replicaSpecs[0].replicas", "greater than or equal to 0"},
		},
		"negative TensorFlow replicas are refused": {
			manifest: `
kind: TensorFlowTrainingJob
metadata: {name: tf}
spec:
  replicaSpecs:
  - {type: ps, replicas: -2, template: TF_POD}`,
			wantErr: []string{"spec.replicaSpecs[0].replicas", "greater than or equal to 0"},
		},
		"replicas written as a word are refused": {
			manifest: `
kind: PyTorchTrainingJob
metadata: {name: pt}
spec:
  replicaSpecs:
  - {type: worker, replicas: three, template: PYTORCH_POD}`,
			wantErr: []string{"spec.replicaSpecs[0].replicas", "must be of type integer"},
		},
		"a job without replicaSpecs is refused": {
			manifest: `
kind: PyTorchTrainingJob
metadata: {name: pt}
spec:
  runPolicy: {backoffLimit: 1}`,
			wantErr: []string{"spec.replicaSpecs", "Required value"},
		},
		"an empty replicaSpecs list is refused": {
			manifest: `
kind: TensorFlowTrainingJob
metadata: {name: tf}
spec:
  replicaSpecs: []`,
			wantErr: []string{"spec.replicaSpecs", "at least 1 items"},
		},
		"a negative scalingWeight is refused": {
			manifest: `
kind: PyTorchTrainingJob
metadata: {name: pt}
spec:
  replicaSpecs:
  - {type: worker, scalingWeight: -1, template: PYTORCH_POD}`,
			wantErr: []string{"spec.replicaSpecs[0].scalingWeight", "greater than or equal to 0"},
		},

		// Elastic training.
		"elastic minReplicas above maxReplicas is refused": {
			manifest: `
kind: PyTorchTrainingJob
metadata: {name: pt}
spec:
  elastic: {enabled: true, minReplicas: 4, maxReplicas: 2}
  torchrunConfig: {enabled: true}
  replicaSpecs:
  - {type: worker, scalingWeight: 1, template: PYTORCH_POD}`,
			wantErr: []string{"spec.elastic.minReplicas: Invalid value: minReplicas must be less than or equal to maxReplicas"},
		},
		"elastic expectedReplicas below minReplicas is refused": {
			manifest: `
kind: PyTorchTrainingJob
metadata: {name: pt}
spec:
  elastic: {enabled: true, minReplicas: 2, maxReplicas: 4, expectedReplicas: 1}
  torchrunConfig: {enabled: true}
  replicaSpecs:
  - {type: worker, scalingWeight: 1, template: PYTORCH_POD}`,
			wantErr: []string{"spec.elastic.expectedReplicas: Invalid value: expectedReplicas must be at least minReplicas"},
		},
		"elastic expectedReplicas above maxReplicas is refused": {
			manifest: `
kind: PyTorchTrainingJob
metadata: {name: pt}
spec:
  elastic: {enabled: true, minReplicas: 2, maxReplicas: 4, expectedReplicas: 5}
  torchrunConfig: {enabled: true}
  replicaSpecs:
  - {type: worker, scalingWeight: 1, template: PYTORCH_POD}`,
			wantErr: []string{"spec.elastic.expectedReplicas: Invalid value: expectedReplicas must be at most maxReplicas"},
		},
		"elastic without torchrun is refused": {
			manifest: `
kind: PyTorchTrainingJob
metadata: {name: pt}
spec:
  elastic: {enabled: true, minReplicas: 1, maxReplicas: 4}
  replicaSpecs:
  - {type: worker, scalingWeight: 1, template: PYTORCH_POD}`,
			wantErr: []string{"spec.torchrunConfig.enabled: Required value: elastic.enabled requires torchrunConfig.enabled"},
		},
		"elastic enabled through the enable alias without torchrun is refused": {
			manifest: `
kind: PyTorchTrainingJob
metadata: {name: pt}
spec:
  elastic: {enable: true, minReplicas: 1, maxReplicas: 4}
  replicaSpecs:
  - {type: worker, scalingWeight: 1, template: PYTORCH_POD}`,
			wantErr: []string{"spec.torchrunConfig.enabled: Required value: elastic.enabled requires torchrunConfig.enabled"},
		},
		"elastic with torchrun turned off is refused": {
			manifest: `
kind: PyTorchTrainingJob
metadata: {name: pt}
spec:
  elastic: {enabled: true, minReplicas: 1, maxReplicas: 4}
  torchrunConfig: {enable: false, procPerNode: "2"}
  replicaSpecs:
  - {type: worker, scalingWeight: 1, template: PYTORCH_POD}`,
			wantErr: []string{"spec.torchrunConfig.enabled: Required value: elastic.enabled requires torchrunConfig.enabled"},
		},
		"elastic without minReplicas and maxReplicas is refused": {
			manifest: `
kind: PyTorchTrainingJob
metadata: {name: pt}
spec:
  elastic: {enabled: true}
  torchrunConfig: {enabled: true}
  replicaSpecs:
  - {type: worker, scalingWeight: 1, template: PYTORCH_POD}`,
			wantErr: []string{"spec.elastic.minReplicas: Required value: minReplicas is required when elastic is enabled", "spec.elastic.maxReplicas: Required value: maxReplicas is required when elastic is enabled"},
		},
		"elastic with minReplicas 0 is refused": {
			manifest: `
kind: PyTorchTrainingJob
metadata: {name: pt}
spec:
  elastic: {enabled: true, minReplicas: 0, maxReplicas: 4}
  torchrunConfig: {enabled: true}
  replicaSpecs:
  - {type: worker, scalingWeight: 1, template: PYTORCH_POD}`,
			wantErr: []string{"spec.elastic.minReplicas", "greater than or equal to 1"},
		},

		// The enable alias (SPEC §2): both spellings set to different values.
		"elastic enabled and enable disagreeing is refused": {
			manifest: `
kind: PyTorchTrainingJob
metadata: {name: pt}
spec:
  elastic: {enabled: true, enable: false, minReplicas: 1, maxReplicas: 4}
  torchrunConfig: {enabled: true}
  replicaSpecs:
  - {type: worker, scalingWeight: 1, template: PYTORCH_POD}`,
			wantErr: []string{"spec.elastic.enable: Invalid value: enable is an alias of enabled and disagrees with it"},
		},
		"torchrunConfig enabled and enable disagreeing is refused": {
			manifest: `
kind: PyTorchTrainingJob
metadata: {name: pt}
spec:
  torchrunConfig: {enabled: false, enable: true}
  replicaSpecs:
  - {type: worker, template: PYTORCH_POD}`,
			wantErr: []string{"spec.torchrunConfig.enable: Invalid value: enable is an alias of enabled and disagrees with it"},
		},
		"runMode.debug enabled and enable disagreeing is refused": {
			manifest: `
kind: PyTorchTrainingJob
metadata: {name: pt}
spec:
  runMode:
    debug: {enabled: true, enable: false}
  replicaSpecs:
  - {type: worker, template: PYTORCH_POD}`,
			wantErr: []string{"spec.runMode.debug.enable: Invalid value: enable is an alias of enabled and disagrees with it"},
		},
		"runMode.pause enabled and enable disagreeing is refused": {
			manifest: `
kind: TensorFlowTrainingJob
metadata: {name: tf}
spec:
  runMode:
    pause: {enabled: false, enable: true}
  replicaSpecs:
  - {type: worker, template: TF_POD}`,
			wantErr: []string{"spec.runMode.pause.enable: Invalid value: enable is an alias of enabled and disagrees with it"},
		},
		"enable written as a string is refused": {
			manifest: `
kind: PyTorchTrainingJob
metadata: {name: pt}
spec:
  torchrunConfig: {enable: "yes"}
  replicaSpecs:
  - {type: worker, template: PYTORCH_POD}`,
			wantErr: []string{"spec.torchrunConfig.enable", "must be of type boolean"},
		},

		// Policies.
		"an unknown cleanUpPolicy is refused": {
			manifest: `
kind: PyTorchTrainingJob
metadata: {name: pt}
spec:
  runPolicy: {cleanUpPolicy: Running}
  replicaSpecs:
  - {type: worker, template: PYTORCH_POD}`,
			wantErr: []string{"spec.runPolicy.cleanUpPolicy", `Unsupported value: "Running"`, `"Unfinished"`},
		},
		"a cleanUpPolicy in capitals is refused": {
			manifest: `
kind: TensorFlowTrainingJob
metadata: {name: tf}
spec:
  runPolicy: {cleanUpPolicy: ALL}
  replicaSpecs:
  - {type: worker, template: TF_POD}`,
			wantErr: []string{"spec.runPolicy.cleanUpPolicy", `Unsupported value: "ALL"`},
		},
		"an unknown restartPolicy is refused": {
			manifest: `
kind: PyTorchTrainingJob
metadata: {name: pt}
spec:
  replicaSpecs:
  - {type: worker, restartPolicy: Sometimes, template: PYTORCH_POD}`,
			wantErr: []string{"spec.replicaSpecs[0].restartPolicy", `Unsupported value: "Sometimes"`, `"ExitCode"`},
		},
		"a lower-case restartPolicy is refused": {
			manifest: `
kind: TensorFlowTrainingJob
metadata: {name: tf}
spec:
  replicaSpecs:
  - {type: worker, restartPolicy: onFailure, template: TF_POD}`,
			wantErr: []string{"spec.replicaSpecs[0].restartPolicy", `Unsupported value: "onFailure"`},
		},
		"an unknown restartScope is refused": {
			manifest: `
kind: PyTorchTrainingJob
metadata: {name: pt}
spec:
  runPolicy: {restartScope: Pod}
  replicaSpecs:
  - {type: worker, template: PYTORCH_POD}`,
			wantErr: []string{"spec.runPolicy.restartScope", `Unsupported value: "Pod"`, `"Gang"`, `"Replica"`},
		},
		"a zero activeDeadlineSeconds is refused": {
			manifest: `
kind: PyTorchTrainingJob
metadata: {name: pt}
spec:
  runPolicy: {activeDeadlineSeconds: 0}
  replicaSpecs:
  - {type: worker, template: PYTORCH_POD}`,
			wantErr: []string{"spec.runPolicy.activeDeadlineSeconds", "greater than or equal to 1"},
		},
		"a negative backoffLimit is refused": {
			manifest: `
kind: TensorFlowTrainingJob
metadata: {name: tf}
spec:
  runPolicy: {backoffLimit: -1}
  replicaSpecs:
  - {type: worker, template: TF_POD}`,
			wantErr: []string{"spec.runPolicy.backoffLimit", "greater than or equal to 0"},
		},

		// Schedulers.
		"a priority below 0 is refused": {
			manifest: `
kind: PyTorchTrainingJob
metadata: {name: pt}
spec:
  scheduler:
    t9kScheduler: {queue: default, priority: -1}
  replicaSpecs:
  - {type: worker, template: PYTORCH_POD}`,
			wantErr: []string{"spec.scheduler.t9kScheduler.priority", "greater than or equal to 0"},
		},
		"a priority above 100 is refused": {
			manifest: `
kind: TensorFlowTrainingJob
metadata: {name: tf}
spec:
  scheduler:
    t9kScheduler: {queue: default, priority: 101}
  replicaSpecs:
  - {type: worker, template: TF_POD}`,
			wantErr: []string{"spec.scheduler.t9kScheduler.priority", "less than or equal to 100"},
		},
		"a t9kScheduler without a queue is refused": {
			manifest: `
kind: PyTorchTrainingJob
metadata: {name: pt}
spec:
  scheduler:
    t9kScheduler: {priority: 10}
  replicaSpecs:
  - {type: worker, template: PYTORCH_POD}`,
			wantErr: []string{"spec.scheduler.t9kScheduler.queue", "Required value"},
		},
		"two schedulers are refused": {
			manifest: `
kind: PyTorchTrainingJob
metadata: {name: pt}
spec:
  scheduler:
    t9kScheduler: {queue: default}
    volcano: {queue: default}
  replicaSpecs:
  - {type: worker, template: PYTORCH_POD}`,
			wantErr: []string{"spec.scheduler", "choose at most one of t9kScheduler, volcano, coscheduling and kubernetes"},
		},
		"three schedulers are refused": {
			manifest: `
kind: TensorFlowTrainingJob
metadata: {name: tf}
spec:
  scheduler:
    t9kScheduler: {queue: default}
    volcano: {}
    coscheduling: {scheduleTimeoutSeconds: 60}
  replicaSpecs:
  - {type: worker, template: TF_POD}`,
			wantErr: []string{"spec.scheduler", "choose at most one of t9kScheduler, volcano, coscheduling and kubernetes"},
		},

		// Names: every rendered name must be a DNS label.
		"a job name too long for its pod hostnames is refused": {
			// 55 + len("-worker-9") = 64 > 63.
			manifest: `
kind: PyTorchTrainingJob
metadata: {name: ` + longName(55) + `}
spec:
  replicaSpecs:
  - {type: worker, replicas: 10, template: PYTORCH_POD}`,
			wantErr: []string{"metadata.name: Invalid value: metadata.name is too long", "<job>-<type>-<index>"},
		},
		"a TensorFlow job name too long for its pod hostnames is refused": {
			// The last of 10000 parameter servers: 56 + len("-ps-9999") = 64 > 63.
			manifest: `
kind: TensorFlowTrainingJob
metadata: {name: ` + longName(56) + `}
spec:
  replicaSpecs:
  - {type: ps, replicas: 10000, template: TF_POD}`,
			wantErr: []string{"metadata.name: Invalid value: metadata.name is too long", "<job>-<type>-<index>"},
		},
		"an elastic job whose maxReplicas makes hostnames too long is refused": {
			// The worker has one replica now, but may grow to 100: 54 + len("-worker-99") = 64.
			manifest: `
kind: PyTorchTrainingJob
metadata: {name: ` + longName(54) + `}
spec:
  elastic: {enabled: true, minReplicas: 1, maxReplicas: 100}
  torchrunConfig: {enabled: true}
  replicaSpecs:
  - {type: worker, replicas: 1, scalingWeight: 1, template: PYTORCH_POD}`,
			wantErr: []string{"metadata.name: Invalid value: metadata.name is too long"},
		},
		"a job name with a dot is refused": {
			manifest: `
kind: PyTorchTrainingJob
metadata: {name: my.job}
spec:
  replicaSpecs:
  - {type: worker, template: PYTORCH_POD}`,
			wantErr: []string{"metadata.name: Invalid value: metadata.name must be a DNS-1035 label"},
		},
		"a job name starting with a digit is refused": {
			manifest: `
kind: TensorFlowTrainingJob
metadata: {name: 1job}
spec:
  replicaSpecs:
  - {type: worker, template: TF_POD}`,
			wantErr: []string{"metadata.name: Invalid value: metadata.name must be a DNS-1035 label"},
		},
		"a job name in capitals is refused": {
			// The API server's own object-name check refuses it before the CRD's rule runs.
			manifest: `
kind: PyTorchTrainingJob
metadata: {name: MyJob}
spec:
  replicaSpecs:
  - {type: worker, template: PYTORCH_POD}`,
			wantErr: []string{"metadata.name", "MyJob"},
		},

		// TensorBoard.
		"a job name over 51 characters with a TensorBoard is refused": {
			manifest: `
kind: PyTorchTrainingJob
metadata: {name: ` + longName(52) + `}
spec:
  tensorboardSpec:
    image: tensorflow/tensorflow:2.16.1
    trainingLogFilesets: ["t9k://pvc/logs/run1"]
  replicaSpecs:
  - {type: worker, template: PYTORCH_POD}`,
			wantErr: []string{"metadata.name: Invalid value: metadata.name is too long for a job with a TensorBoard"},
		},
		"a TensorFlow job name over 51 characters with a TensorBoard is refused": {
			manifest: `
kind: TensorFlowTrainingJob
metadata: {name: ` + longName(52) + `}
spec:
  tensorboardSpec:
    image: tensorflow/tensorflow:2.16.1
    logDir: {pvc: [{name: logs}]}
  replicaSpecs:
  - {type: worker, template: TF_POD}`,
			wantErr: []string{"metadata.name: Invalid value: metadata.name is too long for a job with a TensorBoard"},
		},
		"a trainingLogFilesets entry with the s3 scheme is refused": {
			manifest: `
kind: PyTorchTrainingJob
metadata: {name: pt}
spec:
  tensorboardSpec:
    image: tensorflow/tensorflow:2.16.1
    trainingLogFilesets: ["t9k://pvc/logs/run1", "s3://bucket/x"]
  replicaSpecs:
  - {type: worker, template: PYTORCH_POD}`,
			wantErr: []string{"spec.tensorboardSpec.trainingLogFilesets[1]", `unsupported URI scheme "s3"`},
		},
		"a trainingLogFilesets entry that is a plain path is refused": {
			manifest: `
kind: TensorFlowTrainingJob
metadata: {name: tf}
spec:
  tensorboardSpec:
    image: tensorflow/tensorflow:2.16.1
    trainingLogFilesets: ["/mnt/logs"]
  replicaSpecs:
  - {type: worker, template: TF_POD}`,
			wantErr: []string{"spec.tensorboardSpec.trainingLogFilesets[0]", "must have the form t9k://pvc/<pvc>/<path>"},
		},
		"a t9k fileset that is not a pvc is refused": {
			manifest: `
kind: PyTorchTrainingJob
metadata: {name: pt}
spec:
  tensorboardSpec:
    image: tensorflow/tensorflow:2.16.1
    trainingLogFilesets: ["t9k://bucket/logs"]
  replicaSpecs:
  - {type: worker, template: PYTORCH_POD}`,
			wantErr: []string{"spec.tensorboardSpec.trainingLogFilesets[0]", "must have the form t9k://pvc/<pvc>/<path>"},
		},
		"a TensorBoard without logs is refused": {
			manifest: `
kind: PyTorchTrainingJob
metadata: {name: pt}
spec:
  tensorboardSpec: {image: tensorflow/tensorflow:2.16.1}
  replicaSpecs:
  - {type: worker, template: PYTORCH_POD}`,
			wantErr: []string{"spec.tensorboardSpec", "set logDir or trainingLogFilesets"},
		},

		// Run modes.
		"a debug spec for a type the job does not have is refused": {
			manifest: `
kind: PyTorchTrainingJob
metadata: {name: pt}
spec:
  runMode:
    debug:
      enabled: true
      replicaSpecs: [{type: launcher, command: [sleep, inf]}]
  replicaSpecs:
  - {type: master, template: PYTORCH_POD}
  - {type: worker, template: PYTORCH_POD}`,
			wantErr: []string{"spec.runMode.debug.replicaSpecs: Invalid value: runMode.debug.replicaSpecs[].type must name a type listed in replicaSpecs"},
		},
		"a resume spec for a type the job does not have is refused": {
			manifest: `
kind: TensorFlowTrainingJob
metadata: {name: tf}
spec:
  runMode:
    pause:
      enabled: true
      resumeSpecs: [{type: evaluator, args: [resume.py]}]
  replicaSpecs:
  - {type: chief, template: TF_POD}
  - {type: worker, template: TF_POD}`,
			wantErr: []string{"spec.runMode.pause.resumeSpecs: Invalid value: runMode.pause.resumeSpecs[].type must name a type listed in replicaSpecs"},
		},
		"a PyTorch resume spec for a type the job does not have is refused": {
			manifest: `
kind: PyTorchTrainingJob
metadata: {name: pt}
spec:
  runMode:
    pause:
      resumeSpecs: [{type: master, args: [resume.py]}]
  replicaSpecs:
  - {type: worker, template: PYTORCH_POD}`,
			wantErr: []string{"spec.runMode.pause.resumeSpecs: Invalid value: runMode.pause.resumeSpecs[].type must name a type listed in replicaSpecs"},
		},

		// torchrun.
		"a procPerNode that is a word is refused": {
			manifest: `
kind: PyTorchTrainingJob
metadata: {name: pt}
spec:
  torchrunConfig: {enabled: true, procPerNode: eight}
  replicaSpecs:
  - {type: worker, template: PYTORCH_POD}`,
			wantErr: []string{"spec.torchrunConfig.procPerNode: Invalid value: ", "must be auto, cpu, gpu or a positive integer"},
		},
		"a procPerNode of 0 is refused": {
			manifest: `
kind: PyTorchTrainingJob
metadata: {name: pt}
spec:
  torchrunConfig: {enabled: true, procPerNode: "0"}
  replicaSpecs:
  - {type: worker, template: PYTORCH_POD}`,
			wantErr: []string{"spec.torchrunConfig.procPerNode: Invalid value: ", "must be auto, cpu, gpu or a positive integer"},
		},
		"a procPerNode written as a number is refused": {
			// procPerNode is a string (it may be gpu); YAML's 4 is an integer.
			manifest: `
kind: PyTorchTrainingJob
metadata: {name: pt}
spec:
  torchrunConfig: {enabled: true, procPerNode: 4}
  replicaSpecs:
  - {type: worker, template: PYTORCH_POD}`,
			wantErr: []string{"spec.torchrunConfig.procPerNode", "must be of type string"},
		},
		"a negative maxRestarts is refused": {
			manifest: `
kind: PyTorchTrainingJob
metadata: {name: pt}
spec:
  torchrunConfig: {enabled: true, maxRestarts: -1}
  replicaSpecs:
  - {type: worker, template: PYTORCH_POD}`,
			wantErr: []string{"spec.torchrunConfig.maxRestarts", "greater than or equal to 0"},
		},
	}

	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := create(t, newNamespace(t), manifest(t, tc.manifest))
			wantRefused(t, err, tc.wantErr...)
		})
	}
}

func TestGoodManifestsAreAccepted(t *testing.T) {
	cases := map[string]string{
		"label keys with and without a prefix, and replica types with digits and hyphens, are accepted": `
kind: PyTorchTrainingJob
metadata: {name: pt}
spec:
  torchrunConfig: {enabled: true, procPerNode: "8"}
  scheduler:
    kubernetes: {topologyKey: topology.kubernetes.io/zone}
  replicaSpecs:
  - {type: worker-2, template: PYTORCH_POD}`,
		"a topologyKey without a prefix is accepted": `
kind: PyTorchTrainingJob
metadata: {name: pt}
spec:
  scheduler:
    kubernetes: {topologyKey: rack_Name.1}
  replicaSpecs:
  - {type: worker, template: PYTORCH_POD}`,
		// The enable alias (SPEC §2).
		"enable alone is accepted everywhere it is an alias": `
kind: PyTorchTrainingJob
metadata: {name: pt}
spec:
  elastic: {enable: true, minReplicas: 1, maxReplicas: 4}
  torchrunConfig: {enable: true}
  runMode:
    debug: {enable: false}
    pause: {enable: false}
  replicaSpecs:
  - {type: worker, scalingWeight: 1, template: PYTORCH_POD}`,
		"enabled alone is accepted everywhere": `
kind: PyTorchTrainingJob
metadata: {name: pt}
spec:
  elastic: {enabled: true, minReplicas: 1, maxReplicas: 4}
  torchrunConfig: {enabled: true}
  runMode:
    debug: {enabled: true}
    pause: {enabled: false}
  replicaSpecs:
  - {type: worker, scalingWeight: 1, template: PYTORCH_POD}`,
		"enabled and enable set equal are accepted": `
kind: PyTorchTrainingJob
metadata: {name: pt}
spec:
  elastic: {enabled: true, enable: true, minReplicas: 1, maxReplicas: 4}
  torchrunConfig: {enabled: true, enable: true}
  runMode:
    debug: {enabled: false, enable: false}
    pause: {enabled: true, enable: true}
  replicaSpecs:
  - {type: worker, scalingWeight: 1, template: PYTORCH_POD}`,
		"a TensorFlow job paused through the enable alias is accepted": `
kind: TensorFlowTrainingJob
metadata: {name: tf}
spec:
  runMode:
    pause:
      enable: true
      resumeSpecs: [{type: worker, skipInitContainer: true, args: [resume.py]}]
  replicaSpecs:
  - {type: worker, replicas: 2, template: TF_POD}`,

		// Replica types.
		"a master and workers are accepted": `
kind: PyTorchTrainingJob
metadata: {name: pt}
spec:
  replicaSpecs:
  - {type: master, replicas: 1, restartPolicy: ExitCode, template: PYTORCH_POD}
  - {type: worker, replicas: 3, restartPolicy: OnFailure, template: PYTORCH_POD}`,
		"custom PyTorch replica types without a master are accepted": `
kind: PyTorchTrainingJob
metadata: {name: pt}
spec:
  replicaSpecs:
  - {type: launcher, template: PYTORCH_POD}
  - {type: trainer-gpu, replicas: 4, restartPolicy: Always, template: PYTORCH_POD}
  - {type: evaluator, replicas: 0, template: PYTORCH_POD}`,
		"every TensorFlow replica type is accepted": `
kind: TensorFlowTrainingJob
metadata: {name: tf}
spec:
  replicaSpecs:
  - {type: chief, replicas: 1, template: TF_POD}
  - {type: ps, replicas: 2, template: TF_POD}
  - {type: worker, replicas: 3, restartPolicy: ExitCode, template: TF_POD}
  - {type: evaluator, replicas: 1, restartPolicy: Never, template: TF_POD}`,
		"a job name exactly as long as its hostnames allow is accepted": `
kind: PyTorchTrainingJob
metadata: {name: ` + longName(54) + `}
spec:
  replicaSpecs:
  - {type: worker, replicas: 10, template: PYTORCH_POD}`,
		"a job name of 51 characters with a TensorBoard is accepted": `
kind: TensorFlowTrainingJob
metadata: {name: ` + longName(51) + `}
spec:
  tensorboardSpec:
    image: tensorflow/tensorflow:2.16.1
    trainingLogFilesets: ["t9k://pvc/logs"]
  replicaSpecs:
  - {type: worker, template: TF_POD}`,

		// Elastic and torchrun.
		"elastic with torchrun is accepted": `
kind: PyTorchTrainingJob
metadata: {name: pt}
spec:
  elastic: {enabled: true, minReplicas: 2, maxReplicas: 8, expectedReplicas: 8}
  torchrunConfig: {enabled: true, procPerNode: gpu, rdzvBackend: c10d, maxRestarts: 3, extraOptions: [--log-dir=/tmp/logs]}
  replicaSpecs:
  - {type: master, template: PYTORCH_POD}
  - {type: worker, replicas: 3, scalingWeight: 1, template: PYTORCH_POD}`,
		"elastic configured but not enabled needs no torchrun": `
kind: PyTorchTrainingJob
metadata: {name: pt}
spec:
  elastic: {enabled: false, minReplicas: 1, maxReplicas: 2}
  replicaSpecs:
  - {type: worker, template: PYTORCH_POD}`,
		"each procPerNode form is accepted": `
kind: PyTorchTrainingJob
metadata: {name: pt}
spec:
  torchrunConfig: {enabled: true, procPerNode: auto}
  replicaSpecs:
  - {type: worker, template: PYTORCH_POD}`,
		"a numeric procPerNode is accepted": `
kind: PyTorchTrainingJob
metadata: {name: pt}
spec:
  torchrunConfig: {enabled: true, procPerNode: "8"}
  replicaSpecs:
  - {type: worker, template: PYTORCH_POD}`,

		// Schedulers.
		"the T9k scheduler is accepted": `
kind: PyTorchTrainingJob
metadata: {name: pt}
spec:
  scheduler:
    t9kScheduler: {queue: default, priority: 100}
  replicaSpecs:
  - {type: worker, template: PYTORCH_POD}`,
		"the T9k scheduler with priority 0 is accepted": `
kind: TensorFlowTrainingJob
metadata: {name: tf}
spec:
  scheduler:
    t9kScheduler: {queue: default, priority: 0}
  replicaSpecs:
  - {type: worker, template: TF_POD}`,
		"Volcano is accepted": `
kind: TensorFlowTrainingJob
metadata: {name: tf}
spec:
  scheduler:
    volcano: {queue: research, priorityClassName: high}
  replicaSpecs:
  - {type: worker, template: TF_POD}`,
		"coscheduling is accepted": `
kind: PyTorchTrainingJob
metadata: {name: pt}
spec:
  scheduler:
    coscheduling: {scheduleTimeoutSeconds: 120}
  replicaSpecs:
  - {type: worker, template: PYTORCH_POD}`,
		"an empty scheduler is accepted": `
kind: PyTorchTrainingJob
metadata: {name: pt}
spec:
  scheduler: {}
  replicaSpecs:
  - {type: worker, template: PYTORCH_POD}`,

		// TensorBoard.
		"a TensorBoard over a t9k pvc fileset is accepted": `
kind: PyTorchTrainingJob
metadata: {name: pt}
spec:
  tensorboardSpec:
    image: tensorflow/tensorflow:2.16.1
    trainingLogFilesets: ["t9k://pvc/train-logs/mnist/run-1", "t9k://pvc/train-logs"]
    resources: {limits: {cpu: "1", memory: 1Gi}}
  replicaSpecs:
  - {type: worker, template: PYTORCH_POD}`,
		"a TensorBoard over a log directory is accepted": `
kind: TensorFlowTrainingJob
metadata: {name: tf}
spec:
  tensorboardSpec:
    image: tensorflow/tensorflow:2.16.1
    logDir: {pvc: [{name: logs, subPath: [mnist, cifar]}]}
  replicaSpecs:
  - {type: worker, template: TF_POD}`,

		// Run modes.
		"debug specs for listed types are accepted": `
kind: PyTorchTrainingJob
metadata: {name: pt}
spec:
  runMode:
    debug:
      enabled: true
      replicaSpecs: [{type: master, skipInitContainer: true, command: [sleep, "3600"]}, {type: worker}]
  replicaSpecs:
  - {type: master, template: PYTORCH_POD}
  - {type: worker, template: PYTORCH_POD}`,
	}
	// Both spellings of cleanUpPolicy (SPEC §2).
	for _, policy := range []string{"All", "Unfinished", "None", "all", "unfinished", "none"} {
		cases["cleanUpPolicy "+policy+" is accepted on PyTorch"] = `
kind: PyTorchTrainingJob
metadata: {name: pt}
spec:
  runPolicy: {cleanUpPolicy: ` + policy + `, backoffLimit: 0, activeDeadlineSeconds: 600}
  replicaSpecs:
  - {type: worker, template: PYTORCH_POD}`
		cases["cleanUpPolicy "+policy+" is accepted on TensorFlow"] = `
kind: TensorFlowTrainingJob
metadata: {name: tf}
spec:
  runPolicy: {cleanUpPolicy: ` + policy + `}
  replicaSpecs:
  - {type: worker, template: TF_POD}`
	}

	for name, text := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := create(t, newNamespace(t), manifest(t, text))
			wantAccepted(t, err)
		})
	}
}

// TestDefaultsAreApplied checks the schema defaults the controller relies on.
func TestDefaultsAreApplied(t *testing.T) {
	got, err := create(t, newNamespace(t), manifest(t, `
kind: TensorFlowTrainingJob
metadata: {name: tf}
spec:
  replicaSpecs:
  - {type: worker, template: TF_POD}`))
	wantAccepted(t, err)
	specs, _, err := unstructured.NestedSlice(got.Object, "spec", "replicaSpecs")
	if err != nil || len(specs) != 1 {
		t.Fatalf("stored spec.replicaSpecs = %v (%v); want one entry", specs, err)
	}
	spec := specs[0].(map[string]any)
	want := map[string]any{"replicas": int64(1), "restartPolicy": "Never"}
	gotDefaults := map[string]any{"replicas": spec["replicas"], "restartPolicy": spec["restartPolicy"]}
	if diff := cmp.Diff(want, gotDefaults); diff != "" {
		t.Errorf("defaults of an empty replica spec (-want +got):\n%s", diff)
	}
}

// elasticJob is a good elastic PyTorch job with resume specs, the start of the update cases.
const elasticJob = `
kind: PyTorchTrainingJob
metadata: {name: elastic}
spec:
  elastic: {enabled: true, minReplicas: 2, maxReplicas: 8, expectedReplicas: 4}
  torchrunConfig: {enabled: true, procPerNode: "1"}
  runMode:
    pause:
      enabled: false
      resumeSpecs: [{type: worker, args: [resume.py]}]
  replicaSpecs:
  - {type: master, template: PYTORCH_POD}
  - {type: worker, replicas: 3, scalingWeight: 1, template: PYTORCH_POD}`

// tensorflowJob is a good TensorFlow job with resume specs.
const tensorflowJob = `
kind: TensorFlowTrainingJob
metadata: {name: tf}
spec:
  runMode:
    pause:
      resumeSpecs: [{type: worker, args: [resume.py]}]
  replicaSpecs:
  - {type: chief, template: TF_POD}
  - {type: worker, replicas: 2, template: TF_POD}`

func TestUpdates(t *testing.T) {
	cases := map[string]updateCase{
		"changing elastic.minReplicas is refused": {
			initial: elasticJob,
			patch:   `{spec: {elastic: {minReplicas: 3}}}`,
			wantErr: []string{"spec.elastic.minReplicas: Invalid value: elastic.minReplicas is immutable"},
		},
		"changing elastic.maxReplicas is refused": {
			initial: elasticJob,
			patch:   `{spec: {elastic: {maxReplicas: 6}}}`,
			wantErr: []string{"spec.elastic.maxReplicas: Invalid value: elastic.maxReplicas is immutable"},
		},
		"removing elastic.maxReplicas is refused": {
			initial: elasticJob,
			patch:   `{spec: {elastic: {maxReplicas: null}}}`,
			wantErr: []string{"spec.elastic.maxReplicas: Invalid value: elastic.maxReplicas is immutable"},
		},
		"changing runMode.pause.resumeSpecs is refused": {
			initial: elasticJob,
			patch:   `{spec: {runMode: {pause: {resumeSpecs: [{type: worker, args: [other.py]}]}}}}`,
			wantErr: []string{"spec.runMode.pause.resumeSpecs: Invalid value: runMode.pause.resumeSpecs is immutable"},
		},
		"removing runMode.pause.resumeSpecs is refused": {
			initial: elasticJob,
			patch:   `{spec: {runMode: null}}`,
			wantErr: []string{"spec.runMode.pause.resumeSpecs: Invalid value: runMode.pause.resumeSpecs is immutable"},
		},
		"changing TensorFlow resumeSpecs is refused": {
			initial: tensorflowJob,
			patch:   `{spec: {runMode: {pause: {resumeSpecs: [{type: worker, skipInitContainer: true, args: [resume.py]}]}}}}`,
			wantErr: []string{"spec.runMode.pause.resumeSpecs: Invalid value: runMode.pause.resumeSpecs is immutable"},
		},
		"setting spec.managedBy after creation is refused": {
			initial: elasticJob,
			patch:   `{spec: {managedBy: kueue.x-k8s.io/multikueue}}`,
			wantErr: []string{"spec.managedBy: Invalid value: spec.managedBy is immutable"},
		},
		"changing TensorFlow spec.managedBy is refused": {
			initial: strings.Replace(tensorflowJob, "spec:\n", "spec:\n  managedBy: kueue.x-k8s.io/multikueue\n", 1),
			patch:   `{spec: {managedBy: batch.tensorstack.dev/trainyard}}`,
			wantErr: []string{"spec.managedBy: Invalid value: spec.managedBy is immutable"},
		},
		"removing spec.managedBy is refused": {
			initial: strings.Replace(elasticJob, "spec:\n", "spec:\n  managedBy: kueue.x-k8s.io/multikueue\n", 1),
			patch:   `{spec: {managedBy: null}}`,
			wantErr: []string{"spec.managedBy: Invalid value: spec.managedBy is immutable"},
		},
		"keeping spec.managedBy while pausing is accepted": {
			initial: strings.Replace(elasticJob, "spec:\n", "spec:\n  managedBy: kueue.x-k8s.io/multikueue\n", 1),
			patch:   `{spec: {runMode: {pause: {enabled: true}}}}`,
		},
		"changing expectedReplicas within bounds is accepted": {
			initial: elasticJob,
			patch:   `{spec: {elastic: {expectedReplicas: 6}}}`,
		},
		"changing expectedReplicas to minReplicas is accepted": {
			initial: elasticJob,
			patch:   `{spec: {elastic: {expectedReplicas: 2}}}`,
		},
		"changing expectedReplicas above maxReplicas is refused": {
			initial: elasticJob,
			patch:   `{spec: {elastic: {expectedReplicas: 9}}}`,
			wantErr: []string{"spec.elastic.expectedReplicas: Invalid value: expectedReplicas must be at most maxReplicas"},
		},
		"turning pause on is accepted": {
			initial: elasticJob,
			patch:   `{spec: {runMode: {pause: {enabled: true}}}}`,
		},
		"turning pause on through the enable alias is accepted": {
			initial: tensorflowJob,
			patch:   `{spec: {runMode: {pause: {enable: true}}}}`,
		},
		"turning pause on through enable while enabled is false is refused": {
			initial: elasticJob,
			patch:   `{spec: {runMode: {pause: {enable: true}}}}`,
			wantErr: []string{"spec.runMode.pause.enable: Invalid value: enable is an alias of enabled and disagrees with it"},
		},
		"turning debug on is accepted": {
			initial: tensorflowJob,
			patch:   `{spec: {runMode: {debug: {enabled: true, replicaSpecs: [{type: chief}]}}}}`,
		},
		"changing labels and cleanUpPolicy is accepted": {
			initial: tensorflowJob,
			patch:   `{metadata: {labels: {team: vision}}, spec: {runPolicy: {cleanUpPolicy: none}}}`,
		},
	}

	runUpdates(t, cases)
}

// updateCase is a job that is created and then changed by a merge patch.
type updateCase struct {
	initial string
	// patch is a JSON merge patch, written in YAML, sent as an update of the created job.
	patch string
	// wantErr are the parts the refusal must contain; none means the update is accepted.
	wantErr []string
}

// runUpdates runs each case in a namespace of its own.
func runUpdates(t *testing.T, cases map[string]updateCase) {
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			job := manifest(t, tc.initial)
			ns := newNamespace(t)
			if _, err := create(t, ns, job); err != nil {
				t.Fatalf("creating the initial job: %v", err)
			}
			patch, err := yaml.YAMLToJSON([]byte(tc.patch))
			if err != nil {
				t.Fatalf("the test's patch is not YAML: %v", err)
			}
			_, err = jobs(t, job, ns).Patch(t.Context(), job.GetName(), types.MergePatchType, patch, metav1.PatchOptions{})
			if len(tc.wantErr) == 0 {
				wantAccepted(t, err)
				return
			}
			wantRefused(t, err, tc.wantErr...)
		})
	}
}

// TestExamplesAreAccepted creates every object of every file in examples/.
func TestExamplesAreAccepted(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "examples", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("examples/ holds no *.yaml file")
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			t.Parallel()
			objs := decodeAll(t, file)
			if len(objs) == 0 {
				t.Fatalf("%s holds no object", file)
			}
			ns := newNamespace(t)
			for _, obj := range objs {
				if _, err := create(t, ns, obj); err != nil {
					t.Errorf("%s: %s %q was refused:\n  %v", file, obj.GetKind(), obj.GetName(), err)
				}
			}
		})
	}
}

// decodeAll decodes every document of a multi-document YAML file, skipping empty ones.
func decodeAll(t *testing.T, file string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var objs []*unstructured.Unstructured
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		obj := &unstructured.Unstructured{}
		err := decoder.Decode(obj)
		if errors.Is(err, io.EOF) {
			return objs
		}
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if len(obj.Object) > 0 {
			objs = append(objs, obj)
		}
	}
}

// TestScaleSubresourceSetsExpectedReplicas scales a PyTorchTrainingJob the way `kubectl scale`
// and an HPA do: through /scale, which reads and writes spec.elastic.expectedReplicas.
func TestScaleSubresourceSetsExpectedReplicas(t *testing.T) {
	s := newScaler(t, elasticJob)
	if diff := cmp.Diff(map[string]any{"replicas": int64(4)}, s.scale.Object["spec"]); diff != "" {
		t.Errorf("/scale spec on creation, from expectedReplicas 4 (-want +got):\n%s", diff)
	}

	if err := s.set(6); err != nil {
		t.Fatalf("scaling to 6: %v", err)
	}
	wantElastic := map[string]any{"enabled": true, "minReplicas": int64(2), "maxReplicas": int64(8), "expectedReplicas": int64(6)}
	if diff := cmp.Diff(wantElastic, s.job().Object["spec"].(map[string]any)["elastic"]); diff != "" {
		t.Errorf("spec.elastic after scaling to 6 (-want +got):\n%s", diff)
	}

	// Scaling outside [minReplicas, maxReplicas] is refused like any other update.
	wantRefused(t, s.set(9), "expectedReplicas must be at most maxReplicas")
	wantRefused(t, s.set(1), "expectedReplicas must be at least minReplicas")
}

// scaler reads and writes a job's /scale subresource, as `kubectl scale` and an HPA do.
type scaler struct {
	t      *testing.T
	client dynamic.ResourceInterface
	name   string
	// scale is the last /scale object read or written.
	scale *unstructured.Unstructured
}

// newScaler creates the job of a manifest in a namespace of its own and reads its /scale.
func newScaler(t *testing.T, text string) *scaler {
	t.Helper()
	job := manifest(t, text)
	ns := newNamespace(t)
	if _, err := create(t, ns, job); err != nil {
		t.Fatalf("creating the job: %v", err)
	}
	s := &scaler{t: t, client: jobs(t, job, ns), name: job.GetName()}
	scale, err := s.client.Get(t.Context(), s.name, metav1.GetOptions{}, "scale")
	if err != nil {
		t.Fatalf("getting /scale: %v", err)
	}
	s.scale = scale
	return s
}

// set writes spec.replicas through /scale.
func (s *scaler) set(replicas int64) error {
	if err := unstructured.SetNestedField(s.scale.Object, replicas, "spec", "replicas"); err != nil {
		return err
	}
	updated, err := s.client.Update(s.t.Context(), s.scale, metav1.UpdateOptions{}, "scale")
	if err == nil {
		s.scale = updated
	}
	return err
}

// job reads the job itself.
func (s *scaler) job() *unstructured.Unstructured {
	s.t.Helper()
	got, err := s.client.Get(s.t.Context(), s.name, metav1.GetOptions{})
	if err != nil {
		s.t.Fatalf("reading the job: %v", err)
	}
	return got
}
