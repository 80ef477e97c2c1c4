//go:build integration

package integration

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
	"github.com/trainyard/trainyard/render"
	"github.com/trainyard/trainyard/status"
)

// Bad input (issue 9, SPEC §13): malformed and hostile manifests each get a refusal that names
// the field, or run safely. A job the API server admits is read back as stored and rendered as
// the operator renders it; a job render refuses gets the status the operator would write
// (Initialized=False, InvalidSpec, the refusal as its message). Every object render makes of an
// accepted job is sent to the same API server as a dry run: so each case shows what the user gets
// at admission and what the job's pods would get at run time (a refusal there becomes a
// CreateFailed event on the job). Every case runs beside a neighbour job in its namespace, which
// must come out untouched; and every field of an admitted manifest must be stored as written,
// unless the server warned that it dropped it.

// badInput is one manifest and what becomes of it.
type badInput struct {
	manifest string
	// strict sends the manifest as `kubectl apply` does: unknown fields are refused rather than
	// dropped with a warning (fieldValidation=Strict).
	strict bool
	// namespaceLabels label the case's namespace (e.g. a Pod Security level).
	namespaceLabels map[string]string

	// refused: the API server refuses the job, answering refusedCode (422 Invalid unless set),
	// with a message containing each string: the field's path and a phrase of the rule.
	refused     []string
	refusedCode int32

	// Otherwise the job is admitted and rendered. dropped are the fields the server drops (each
	// must come with a warning naming it); renderErr: render refuses the stored job with these,
	// and the job's Initialized condition says so.
	dropped   []string
	renderErr []string
	// podsRefused: the API server refuses the rendered pods with these (a run-time CreateFailed
	// event); otherwise every rendered object is admitted.
	podsRefused []string
	// check looks further at what was stored and rendered.
	check func(t *testing.T, r *badRun)
}

// badRun is an admitted case: what the server stored and warned, what render made of it.
type badRun struct {
	ns       string
	stored   *unstructured.Unstructured
	warnings []string
	job      render.Job
	out      *render.Output
	// renderTime is how long one Render took (recorded, never asserted).
	renderTime time.Duration
}

func TestBadInput(t *testing.T) {
	cases := map[string]badInput{
		// Names: every rendered name must be a DNS label.
		"a job name of 64 characters is refused": {
			manifest: fmt.Sprintf(`
kind: PyTorchTrainingJob
metadata: {name: %s}
spec:
  replicaSpecs:
  - {type: worker, template: PYTORCH_POD}`, longName(64)),
			refused: []string{"metadata.name: Invalid value: metadata.name is too long", "<job>-<type>-<index>"},
		},
		"a job name of 254 characters is refused by the API server's own name check": {
			manifest: fmt.Sprintf(`
kind: TensorFlowTrainingJob
metadata: {name: %s}
spec:
  replicaSpecs:
  - {type: worker, template: TF_POD}`, longName(254)),
			refused: []string{"metadata.name", "must be no more than 253 characters"},
		},
		"a PyTorchJob name one character too long for <name>-worker-9999 is refused": {
			manifest: fmt.Sprintf(`
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: %s}
spec:
  pytorchReplicaSpecs:
    Worker: {replicas: 10000, template: PYTORCHJOB_POD}`, longName(52)),
			refused: []string{"metadata.name: Invalid value: metadata.name is too long", "<job>-<type>-<index>"},
		},

		// Scale: replicas are bounded by the schema (100,000).
		"a PyTorchJob of 10,000 workers whose name just fits renders 10,000 pods and Services": {
			manifest: fmt.Sprintf(`
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: %s}
spec:
  pytorchReplicaSpecs:
    Worker: {replicas: 10000, template: PYTORCHJOB_POD}`, longName(51)),
			check: func(t *testing.T, r *badRun) {
				wantCounts(t, r, 10000, 10000)
				if last := r.out.Pods[len(r.out.Pods)-1].Name; len(last) != 63 {
					t.Errorf("the last pod is %q (%d characters); want 63", last, len(last))
				}
			},
		},
		"a PyTorchTrainingJob of 10,000 workers renders 10,001 pods": {
			manifest: `
kind: PyTorchTrainingJob
metadata: {name: big}
spec:
  replicaSpecs:
  - {type: master, template: PYTORCH_POD}
  - {type: worker, replicas: 10000, template: PYTORCH_POD}`,
			check: func(t *testing.T, r *badRun) { wantCounts(t, r, 10001, 0) },
		},
		"100,001 replicas are refused": {
			manifest: `
kind: PyTorchTrainingJob
metadata: {name: huge}
spec:
  replicaSpecs:
  - {type: worker, replicas: 100001, template: PYTORCH_POD}`,
			refused: []string{"spec.replicaSpecs[0].replicas", "less than or equal to 100000"},
		},

		// A replica needs a container: core's PodSpec only requires the key, so a rule on each
		// kind's template refuses an empty list or a template without a spec (issue 14).
		"a PyTorchTrainingJob replica whose template lists no container is refused, naming the field": {
			manifest: `
kind: PyTorchTrainingJob
metadata: {name: pt}
spec:
  replicaSpecs:
  - {type: master, template: PYTORCH_POD}
  - {type: worker, template: {spec: {containers: []}}}`,
			refused: []string{"spec.replicaSpecs[1].template.spec.containers", "Required value", "template.spec.containers is empty"},
		},
		"a TensorFlowTrainingJob replica whose template has no spec is refused, naming the field": {
			manifest: `
kind: TensorFlowTrainingJob
metadata: {name: tf}
spec:
  replicaSpecs:
  - {type: worker, template: {metadata: {labels: {team: vision}}}}`,
			refused: []string{"spec.replicaSpecs[0].template.spec.containers", "Required value", "template.spec.containers is empty"},
		},
		"a PyTorchJob Worker whose template lists no container is refused, naming the field": {
			manifest: `
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: pt}
spec:
  pytorchReplicaSpecs:
    Master: {template: PYTORCHJOB_POD}
    Worker: {replicas: 2, template: {spec: {containers: []}}}`,
			refused: []string{"spec.pytorchReplicaSpecs[Worker].template.spec.containers", "Required value", "template.spec.containers is empty"},
		},
		"a TFJob PS whose template lists no container is refused, naming the field": {
			manifest: `
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: tf}
spec:
  tfReplicaSpecs:
    PS: {template: {spec: {containers: []}}}
    Worker: {template: TFJOB_POD}`,
			refused: []string{"spec.tfReplicaSpecs[PS].template.spec.containers", "Required value", "template.spec.containers is empty"},
		},

		// Labels.
		"a job label value of 64 characters is refused": {
			manifest: fmt.Sprintf(`
kind: PyTorchTrainingJob
metadata: {name: pt, labels: {team: %s}}
spec:
  replicaSpecs:
  - {type: worker, template: PYTORCH_POD}`, strings.Repeat("v", 64)),
			refused: []string{"metadata.labels", "must be no more than 63 bytes"},
		},
		"a template label value of 64 characters is admitted and refused by the operator, naming the field": {
			manifest: fmt.Sprintf(`
kind: PyTorchTrainingJob
metadata: {name: pt}
spec:
  replicaSpecs:
  - type: worker
    template:
      metadata: {labels: {team: %s}}
      spec: {containers: [{name: pytorch, image: 'pytorch/pytorch:2.4.0'}]}`, strings.Repeat("v", 64)),
			renderErr: []string{"spec.replicaSpecs[0].template.metadata.labels", "must be no more than 63 bytes"},
		},
		"a template label key of 64 characters is admitted and refused by the operator, naming the field": {
			manifest: fmt.Sprintf(`
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: tf}
spec:
  tfReplicaSpecs:
    Worker:
      template:
        metadata: {labels: {example.com/%s: "yes"}}
        spec: {containers: [{name: tensorflow, image: 'tensorflow/tensorflow:2.16.1'}]}`, strings.Repeat("k", 64)),
			renderErr: []string{"spec.tfReplicaSpecs.Worker.template.metadata.labels", "name part must be no more than 63 bytes"},
		},

		// Size: the API server takes requests up to 3 MiB; etcd stores objects up to 1.5 MiB.
		"1 MiB of environment in a template runs": {
			manifest: envJob(1 << 20),
			check: func(t *testing.T, r *badRun) {
				env := r.out.Pods[0].Spec.Containers[0].Env
				if got := len(env[0].Value); got != 1<<20 {
					t.Errorf("the pod's first variable holds %d bytes; want 1 MiB", got)
				}
			},
		},
		"1.75 MiB of environment is refused: etcd stores objects up to 1.5 MiB": {
			manifest:    envJob(7 << 18),
			refused:     []string{"etcdserver: request is too large"},
			refusedCode: http.StatusInternalServerError,
		},
		"2 MiB of environment is refused: the API server sends etcd no request over 2 MiB": {
			manifest:    envJob(2 << 20),
			refused:     []string{"ResourceExhausted", "trying to send message larger than max"},
			refusedCode: http.StatusInternalServerError,
		},
		"a 4 MiB manifest is refused by the API server's request limit": {
			manifest:    envJob(4 << 20),
			refused:     []string{"limit is 3145728"},
			refusedCode: http.StatusRequestEntityTooLarge,
		},
		"1 MiB of template annotations is admitted and refused by the operator, naming the field": {
			manifest: fmt.Sprintf(`
kind: TensorFlowTrainingJob
metadata: {name: tf}
spec:
  replicaSpecs:
  - type: worker
    template:
      metadata: {annotations: {notes: %s}}
      spec: {containers: [{name: tensorflow, image: 'tensorflow/tensorflow:2.16.1'}]}`, strings.Repeat("n", 1<<20)),
			renderErr: []string{"spec.replicaSpecs[0].template.metadata.annotations", "Too long", "262144 bytes"},
		},
		"an unknown field nested 1,000 deep in a container is dropped with a warning": {
			manifest: fmt.Sprintf(`
kind: PyTorchTrainingJob
metadata: {name: pt}
spec:
  replicaSpecs:
  - type: worker
    template:
      spec: {containers: [{name: pytorch, image: 'pytorch/pytorch:2.4.0', deep: %s}]}`, nested(1000)),
			dropped: []string{"spec.replicaSpecs[0].template.spec.containers[0].deep"},
		},

		// Environment the contract sets: replaced, never duplicated, with a warning.
		"MASTER_ADDR and RANK set by the user are replaced with a warning": {
			manifest: `
kind: PyTorchTrainingJob
metadata: {name: pt}
spec:
  replicaSpecs:
  - type: master
    template:
      spec:
        containers:
        - name: pytorch
          image: pytorch/pytorch:2.4.0
          env: [{name: MASTER_ADDR, value: evil.example.com}, {name: RANK, value: "7"}, {name: NCCL_DEBUG, value: INFO}]
  - {type: worker, replicas: 2, template: PYTORCH_POD}`,
			check: func(t *testing.T, r *badRun) {
				wantEnv(t, r, "pt-master-0", "pytorch", map[string]string{"MASTER_ADDR": "pt-master-0.pt", "RANK": "0", "NCCL_DEBUG": "INFO"})
				wantWarning(t, r, render.WarnEnvOverridden, "MASTER_ADDR", "RANK")
			},
		},
		"TF_CONFIG set by the user in a TensorFlowTrainingJob is replaced with a warning": {
			manifest: `
kind: TensorFlowTrainingJob
metadata: {name: tf}
spec:
  replicaSpecs:
  - type: worker
    replicas: 2
    template:
      spec:
        containers:
        - name: tensorflow
          image: tensorflow/tensorflow:2.16.1
          env: [{name: TF_CONFIG, value: '{"cluster": {"worker": ["evil:2222"]}}'}]`,
			check: func(t *testing.T, r *badRun) {
				wantEnv(t, r, "tf-worker-1", "tensorflow", map[string]string{
					"TF_CONFIG": `{"cluster":{"worker":["tf-worker-0.tf:2222","tf-worker-1.tf:2222"]},"task":{"type":"worker","index":1},"environment":"cloud"}`})
				wantWarning(t, r, render.WarnEnvOverridden, "TF_CONFIG")
			},
		},
		"PET_NNODES and MASTER_ADDR set by the user in a PyTorchJob are replaced with a warning": {
			manifest: `
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: pt}
spec:
  pytorchReplicaSpecs:
    Master: {template: PYTORCHJOB_POD}
    Worker:
      replicas: 3
      template:
        spec:
          containers:
          - name: pytorch
            image: pytorch/pytorch:2.4.0
            env: [{name: PET_NNODES, value: "64"}, {name: MASTER_ADDR, value: evil.example.com}]`,
			check: func(t *testing.T, r *badRun) {
				wantEnv(t, r, "pt-worker-2", "pytorch", map[string]string{"PET_NNODES": "4", "MASTER_ADDR": "pt-master-0", "RANK": "3"})
				wantWarning(t, r, render.WarnEnvOverridden, "PET_NNODES", "MASTER_ADDR")
			},
		},
		"TF_CONFIG set by the user in a TFJob is replaced with a warning": {
			manifest: `
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: tf}
spec:
  tfReplicaSpecs:
    Chief: {template: TFJOB_POD}
    Worker:
      template:
        spec:
          containers:
          - name: tensorflow
            image: tensorflow/tensorflow:2.16.1
            env: [{name: TF_CONFIG, value: "{}"}]`,
			check: func(t *testing.T, r *badRun) {
				wantEnv(t, r, "tf-worker-0", "tensorflow", map[string]string{"TF_CONFIG": fmt.Sprintf(
					`{"cluster":{"chief":["tf-chief-0.%[1]s.svc:2222"],"worker":["tf-worker-0.%[1]s.svc:2222"]},"task":{"type":"worker","index":0},"environment":"cloud"}`, r.ns)})
				wantWarning(t, r, render.WarnEnvOverridden, "TF_CONFIG")
			},
		},
		"MASTER_ADDR in a sidecar is the sidecar's own": {
			manifest: `
kind: PyTorchTrainingJob
metadata: {name: pt}
spec:
  replicaSpecs:
  - type: worker
    template:
      spec:
        containers:
        - {name: proxy, image: envoyproxy/envoy:v1.31, env: [{name: MASTER_ADDR, value: upstream}]}
        - {name: pytorch, image: 'pytorch/pytorch:2.4.0'}`,
			check: func(t *testing.T, r *badRun) {
				wantEnv(t, r, "pt-worker-0", "proxy", map[string]string{"MASTER_ADDR": "upstream"})
				wantEnv(t, r, "pt-worker-0", "pytorch", map[string]string{"MASTER_ADDR": "pt-worker-0.pt"})
			},
		},

		// TensorBoard: claims of the job's namespace, paths within them.
		"a trainingLogFilesets path climbing out of its PVC with .. is refused": {
			manifest: `
kind: PyTorchTrainingJob
metadata: {name: pt}
spec:
  tensorboardSpec:
    image: tensorflow/tensorflow:2.16.1
    trainingLogFilesets: ["t9k://pvc/logs/../../etc"]
  replicaSpecs:
  - {type: worker, template: PYTORCH_POD}`,
			refused: []string{"spec.tensorboardSpec.trainingLogFilesets[0]", "must not contain '..'"},
		},
		"a logDir subPath climbing out of its PVC with .. is refused": {
			manifest: `
kind: TensorFlowTrainingJob
metadata: {name: tf}
spec:
  tensorboardSpec:
    image: tensorflow/tensorflow:2.16.1
    logDir: {pvc: [{name: logs, subPath: [run1, ../other-claim]}]}
  replicaSpecs:
  - {type: worker, template: TF_POD}`,
			refused: []string{"spec.tensorboardSpec.logDir.pvc[0].subPath", "subPath must not contain '..'"},
		},
		"a logDir PVC named other-ns/logs is refused": {
			manifest: `
kind: PyTorchTrainingJob
metadata: {name: pt}
spec:
  tensorboardSpec:
    image: tensorflow/tensorflow:2.16.1
    logDir: {pvc: [{name: other-ns/logs}]}
  replicaSpecs:
  - {type: worker, template: PYTORCH_POD}`,
			refused: []string{"spec.tensorboardSpec.logDir.pvc[0].name", "a claim of another namespace cannot be mounted"},
		},
		"a fileset t9k://pvc/other-ns/pvc reads claim other-ns of the job's own namespace": {
			manifest: `
kind: PyTorchTrainingJob
metadata: {name: pt}
spec:
  tensorboardSpec:
    image: tensorflow/tensorflow:2.16.1
    trainingLogFilesets: ["t9k://pvc/other-ns/pvc"]
  replicaSpecs:
  - {type: worker, template: PYTORCH_POD}`,
			check: func(t *testing.T, r *badRun) {
				d := r.out.TensorBoard.Deployment
				claim := d.Spec.Template.Spec.Volumes[0].PersistentVolumeClaim.ClaimName
				if claim != "other-ns" || d.Namespace != r.ns {
					t.Errorf("TensorBoard mounts claim %q in namespace %s; want claim other-ns of the job's namespace %s", claim, d.Namespace, r.ns)
				}
				if args := d.Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--logdir=/t9k/logs/other-ns/pvc") {
					t.Errorf("TensorBoard args %q; want --logdir=/t9k/logs/other-ns/pvc", args)
				}
			},
		},

		// Another namespace's objects: the pods of a job live in its namespace and can name only
		// that namespace's ServiceAccounts and claims.
		"a serviceAccountName naming another namespace's account is admitted and refused by the operator, naming the field": {
			manifest: `
kind: PyTorchTrainingJob
metadata: {name: pt}
spec:
  replicaSpecs:
  - type: worker
    template:
      spec:
        serviceAccountName: "system:serviceaccount:kube-system:default"
        containers: [{name: pytorch, image: 'pytorch/pytorch:2.4.0'}]`,
			renderErr: []string{"spec.replicaSpecs[0].template.spec.serviceAccountName", "an account of another namespace cannot be named"},
		},
		"a serviceAccountName of an account that exists only in another namespace is the job's namespace's": {
			manifest: `
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: pt}
spec:
  pytorchReplicaSpecs:
    Worker:
      template:
        spec:
          serviceAccountName: default
          containers: [{name: pytorch, image: 'pytorch/pytorch:2.4.0'}]`,
			check: func(t *testing.T, r *badRun) {
				if p := r.out.Pods[0]; p.Namespace != r.ns || p.Spec.ServiceAccountName != "default" {
					t.Errorf("pod %s/%s runs as %q; want the account default of the job's namespace", p.Namespace, p.Name, p.Spec.ServiceAccountName)
				}
			},
		},
		"a template volume with claimName other-ns/data is admitted and refused by the operator, naming the field": {
			manifest: `
kind: TensorFlowTrainingJob
metadata: {name: tf}
spec:
  replicaSpecs:
  - type: worker
    template:
      spec:
        containers: [{name: tensorflow, image: 'tensorflow/tensorflow:2.16.1', volumeMounts: [{name: data, mountPath: /data}]}]
        volumes: [{name: data, persistentVolumeClaim: {claimName: other-ns/data}}]`,
			renderErr: []string{"spec.replicaSpecs[0].template.spec.volumes[0].persistentVolumeClaim.claimName", "a claim of another namespace cannot be mounted"},
		},
		"a template naming another namespace still makes its pods in the job's": {
			manifest: `
kind: PyTorchTrainingJob
metadata: {name: pt}
spec:
  replicaSpecs:
  - type: worker
    template:
      metadata: {namespace: kube-system}
      spec: {containers: [{name: pytorch, image: 'pytorch/pytorch:2.4.0'}]}`,
			check: func(t *testing.T, r *badRun) {
				if p := r.out.Pods[0]; p.Namespace != r.ns {
					t.Errorf("pod %s is in namespace %s; want the job's, %s", p.Name, p.Namespace, r.ns)
				}
			},
		},
		"a privileged hostPath template in a restricted namespace: its pods are refused by Pod Security": {
			namespaceLabels: map[string]string{"pod-security.kubernetes.io/enforce": "restricted"},
			manifest: `
kind: PyTorchTrainingJob
metadata: {name: pt}
spec:
  replicaSpecs:
  - type: worker
    template:
      spec:
        hostNetwork: true
        containers: [{name: pytorch, image: 'pytorch/pytorch:2.4.0', securityContext: {privileged: true}, volumeMounts: [{name: root, mountPath: /host}]}]
        volumes: [{name: root, hostPath: {path: /}}]`,
			podsRefused: []string{"violates PodSecurity", "privileged", "hostPath"},
		},

		// Unknown fields.
		"unknown fields at four depths are dropped, each with a warning": {
			manifest: `
kind: PyTorchTrainingJob
metadata: {name: pt}
spec:
  retries: 3
  replicaSpecs:
  - type: worker
    replica: 4
    template:
      spec:
        containers: [{name: pytorch, image: 'pytorch/pytorch:2.4.0', gpus: 8}]
        priority_class: high`,
			dropped: []string{"spec.retries", "spec.replicaSpecs[0].replica", "spec.replicaSpecs[0].template.spec.containers[0].gpus",
				"spec.replicaSpecs[0].template.spec.priority_class"},
		},
		"unknown fields sent as kubectl apply sends them are refused, each named": {
			strict: true,
			manifest: `
kind: PyTorchTrainingJob
metadata: {name: pt}
spec:
  retries: 3
  replicaSpecs:
  - type: worker
    replica: 4
    template:
      spec:
        containers: [{name: pytorch, image: 'pytorch/pytorch:2.4.0', gpus: 8}]`,
			refused: []string{`unknown field "spec.retries"`, `unknown field "spec.replicaSpecs[0].replica"`,
				`unknown field "spec.replicaSpecs[0].template.spec.containers[0].gpus"`},
			refusedCode: http.StatusBadRequest,
		},
		"a misspelt replicas in a TFJob is dropped with a warning, and the job runs one replica": {
			manifest: `
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: tf}
spec:
  tfReplicaSpecs:
    Worker: {replica: 8, template: TFJOB_POD}`,
			dropped: []string{"spec.tfReplicaSpecs.Worker.replica"},
			check:   func(t *testing.T, r *badRun) { wantCounts(t, r, 1, 1) },
		},

		// Replica types and counts.
		"a PyTorchTrainingJob replica type of its own runs": {
			manifest: `
kind: PyTorchTrainingJob
metadata: {name: pt}
spec:
  replicaSpecs:
  - {type: launcher, template: PYTORCH_POD}
  - {type: worker, replicas: 2, template: PYTORCH_POD}`,
			check: func(t *testing.T, r *badRun) {
				wantEnv(t, r, "pt-launcher-0", "pytorch", map[string]string{"RANK": "0", "MASTER_ADDR": "pt-launcher-0.pt"})
			},
		},
		"zero replicas of every type are admitted and the job waits without pods": {
			manifest: `
kind: PyTorchTrainingJob
metadata: {name: pt}
spec:
  replicaSpecs:
  - {type: master, replicas: 0, template: PYTORCH_POD}
  - {type: worker, replicas: 0, template: PYTORCH_POD}`,
			check: func(t *testing.T, r *badRun) {
				wantCounts(t, r, 0, 0)
				if d := r.out.Decisions; d.Phase != "Pending" {
					t.Errorf("phase %s; want Pending", d.Phase)
				}
			},
		},

		// Run and restart policies.
		"an activeDeadlineSeconds of 10^10 s (317 years) runs, and an hour in it has not fallen due": {
			manifest: `
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: pt}
spec:
  runPolicy: {activeDeadlineSeconds: 10000000000}
  pytorchReplicaSpecs:
    Worker: {template: PYTORCHJOB_POD}`,
			check: func(t *testing.T, r *badRun) {
				wantCounts(t, r, 1, 1)
				now := time.Now()
				job := r.job
				job.Status.Phase, job.Status.StartTime = batch.JobRunning, &metav1.Time{Time: now.Add(-time.Hour)}
				out, err := render.Render(render.Input{Job: job, Now: now})
				if err != nil {
					t.Fatalf("render refused the job an hour in: %v", err)
				}
				if d := out.Decisions; d.Phase == batch.JobFailed {
					t.Errorf("an hour into a deadline of 10^10 s the job failed: %s: %s", d.Reason, d.Message)
				}
			},
		},
		"a template restartPolicy Always is replaced with Never, with a warning": {
			manifest: `
kind: TensorFlowTrainingJob
metadata: {name: tf}
spec:
  replicaSpecs:
  - type: worker
    restartPolicy: OnFailure
    template:
      spec:
        restartPolicy: Always
        containers: [{name: tensorflow, image: 'tensorflow/tensorflow:2.16.1'}]`,
			check: func(t *testing.T, r *badRun) {
				if p := r.out.Pods[0]; p.Spec.RestartPolicy != corev1.RestartPolicyNever {
					t.Errorf("pod %s has restartPolicy %s; want Never", p.Name, p.Spec.RestartPolicy)
				}
				wantWarning(t, r, render.WarnRestartPolicy, "restartPolicy Always replaced with Never")
			},
		},
	}

	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			runBadInput(t, tc)
		})
	}
}

// neighbour is a good job beside every case: the case must leave it as it was.
const neighbour = `
kind: PyTorchTrainingJob
metadata: {name: neighbour}
spec:
  replicaSpecs:
  - {type: master, template: PYTORCH_POD}
  - {type: worker, replicas: 2, template: PYTORCH_POD}`

func runBadInput(t *testing.T, tc badInput) {
	ns := newNamespace(t)
	if len(tc.namespaceLabels) > 0 {
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": tc.namespaceLabels}})
		if _, err := cluster.Resource(namespaces).Patch(t.Context(), ns, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatalf("labelling the namespace: %v", err)
		}
	}
	before, err := create(t, ns, manifest(t, neighbour))
	if err != nil {
		t.Fatalf("creating the neighbour job: %v", err)
	}
	defer func() {
		after, err := jobs(t, before, ns).Get(t.Context(), before.GetName(), metav1.GetOptions{})
		if err != nil {
			t.Fatalf("reading the neighbour job back: %v", err)
		}
		if after.GetResourceVersion() != before.GetResourceVersion() {
			t.Errorf("the neighbour job changed (resourceVersion %s -> %s)", before.GetResourceVersion(), after.GetResourceVersion())
		}
	}()

	client, seen := warningClient(t)
	sent := manifest(t, tc.manifest)
	opts := metav1.CreateOptions{}
	if tc.strict {
		opts.FieldValidation = metav1.FieldValidationStrict
	}
	gvr := resources[sent.GetKind()].WithVersion(sent.GroupVersionKind().Version)
	stored, err := client.Resource(gvr).Namespace(ns).Create(t.Context(), sent.DeepCopy(), opts)
	if tc.refused != nil {
		wantRefusedAs(t, err, tc.refusedCode, tc.refused...)
		return
	}
	wantAccepted(t, err)
	r := &badRun{ns: ns, stored: stored, warnings: seen.text}
	wantNothingLost(t, sent, stored, tc.dropped, r.warnings)

	r.job, r.out, r.renderTime, err = renderStored(stored)
	if tc.renderErr != nil {
		wantErrorText(t, "render", err, tc.renderErr...)
		wantInvalidSpec(t, &r.job, err, tc.renderErr...)
		return
	}
	if err != nil {
		t.Fatalf("render refused the admitted job: %v", err)
	}
	t.Logf("rendered %d pods in %s", len(r.out.Pods), r.renderTime.Round(time.Millisecond))
	err = dryRun(t, ns, r.out)
	if tc.podsRefused != nil {
		wantErrorText(t, "the API server, creating the rendered objects,", err, tc.podsRefused...)
	} else if err != nil {
		t.Errorf("the API server refuses an object render made of the admitted job: %v", err)
	}
	if tc.check != nil {
		tc.check(t, r)
	}
}

// wantRefusedAs is wantRefused for a refusal of the given HTTP status (422 Invalid if 0).
func wantRefusedAs(t *testing.T, err error, code int32, want ...string) {
	t.Helper()
	if code == 0 || code == http.StatusUnprocessableEntity {
		wantRefused(t, err, want...)
		return
	}
	if err == nil {
		t.Fatalf("the API server accepted the object; want it refused (%d) with a message containing %q", code, want)
	}
	var answer apierrors.APIStatus
	if !errors.As(err, &answer) || answer.Status().Code != code {
		t.Errorf("the API server answered %v; want HTTP status %d", err, code)
	}
	wantErrorText(t, "the API server", err, want...)
}

// wantInvalidSpec checks the status the operator derives for a job render refused: Pending,
// Initialized=False with reason InvalidSpec and a message containing each of want.
func wantInvalidSpec(t *testing.T, job *render.Job, renderErr error, want ...string) {
	t.Helper()
	st := status.Derive(status.Input{Job: job, RenderErr: renderErr, Now: time.Now()})
	c := meta.FindStatusCondition(st.Conditions, batch.ConditionInitialized)
	if st.Phase != batch.JobPending || c == nil || c.Status != metav1.ConditionFalse || c.Reason != status.ReasonInvalidSpec {
		t.Fatalf("phase %s, Initialized %+v; want Pending and Initialized False/%s", st.Phase, c, status.ReasonInvalidSpec)
	}
	for _, w := range want {
		if !strings.Contains(c.Message, w) {
			t.Errorf("the Initialized condition does not mention %q; it says:\n  %s", w, c.Message)
		}
	}
}

// wantErrorText fails unless err contains every one of want.
func wantErrorText(t *testing.T, who string, err error, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s accepted it; want a refusal containing %q", who, want)
	}
	t.Logf("%s refused as expected: %.600s", who, err)
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s's refusal does not mention %q; it says:\n  %.2000s", who, w, err)
		}
	}
}

// wantNothingLost: every field of the manifest is stored as written, except those dropped, and
// for each of those the server warned.
func wantNothingLost(t *testing.T, sent, stored *unstructured.Unstructured, dropped, warned []string) {
	t.Helper()
	lost := lostFields("", sent.Object, stored.Object)
	if diff := slices.Compare(slices.Sorted(slices.Values(dropped)), lost); diff != 0 {
		t.Errorf("fields the server did not store as written: %q; want %q", lost, dropped)
	}
	for _, path := range dropped {
		if !slices.ContainsFunc(warned, func(w string) bool { return strings.Contains(w, `unknown field "`+path+`"`) }) {
			t.Errorf("the server dropped %s without a warning naming it; it warned %q", path, warned)
		}
	}
}

// lostFields lists, sorted, the paths of sent that stored lacks or holds otherwise, spelt as the
// server's warnings spell them: list items by index in brackets, map keys (a Kubeflow replica
// type too) after a dot. Lists are compared item by item.
func lostFields(path string, sent, stored any) []string {
	var lost []string
	switch s := sent.(type) {
	case map[string]any:
		st, ok := stored.(map[string]any)
		if !ok {
			return []string{path}
		}
		for k, v := range s {
			child := strings.TrimPrefix(path+"."+k, ".")
			if sv, found := st[k]; found {
				lost = append(lost, lostFields(child, v, sv)...)
			} else {
				lost = append(lost, child)
			}
		}
	case []any:
		st, ok := stored.([]any)
		if !ok || len(st) != len(s) {
			return []string{path}
		}
		for i := range s {
			lost = append(lost, lostFields(fmt.Sprintf("%s[%d]", path, i), s[i], st[i])...)
		}
	default:
		if !reflect.DeepEqual(sent, stored) {
			return []string{path}
		}
	}
	slices.Sort(lost)
	return lost
}

// renderStored renders the job as the server stored it, as the controller would on its first
// round: no pods yet, every PodGroup CRD installed.
func renderStored(stored *unstructured.Unstructured) (render.Job, *render.Output, time.Duration, error) {
	data, err := json.Marshal(stored.Object)
	if err != nil {
		return render.Job{}, nil, 0, err
	}
	job, err := render.ReadJob(data)
	if err != nil {
		return job, nil, 0, fmt.Errorf("reading the stored job: %w", err)
	}
	crds := map[string]bool{}
	for _, crd := range render.PodGroupCRDs() {
		crds[crd] = true
	}
	start := time.Now()
	out, err := render.Render(render.Input{Job: job, Now: start, InstalledCRDs: crds})
	return job, out, time.Since(start), err
}

// dryRun sends what render made to the API server as a dry run (nothing is stored) and returns
// the first refusal. Of many pods or Services, the first and the last are sent. The PodGroup is
// left out: its CRD is a scheduler's, not installed here.
func dryRun(t *testing.T, ns string, out *render.Output) error {
	t.Helper()
	var objs []runtime.Object
	firstAndLast := func(n int, add func(int)) {
		if n > 0 {
			add(0)
		}
		if n > 1 {
			add(n - 1)
		}
	}
	firstAndLast(len(out.Pods), func(i int) { objs = append(objs, out.Pods[i]) })
	firstAndLast(out.ReplicaServices.Len(), func(i int) { objs = append(objs, out.ReplicaServices.Service(i)) })
	if out.Service != nil {
		objs = append(objs, out.Service)
	}
	if out.Autoscaler != nil {
		objs = append(objs, out.Autoscaler)
	}
	if tb := out.TensorBoard; tb != nil {
		objs = append(objs, tb.Deployment, tb.Service)
	}
	for _, obj := range objs {
		content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{Object: content}
		if _, err := cluster.Resource(resourceOf(t, obj)).Namespace(ns).Create(t.Context(), u,
			metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
			return fmt.Errorf("%s %s: %w", u.GetKind(), u.GetName(), err)
		}
	}
	return nil
}

func resourceOf(t *testing.T, obj runtime.Object) schema.GroupVersionResource {
	t.Helper()
	switch obj.(type) {
	case *corev1.Pod:
		return corev1.SchemeGroupVersion.WithResource("pods")
	case *corev1.Service:
		return corev1.SchemeGroupVersion.WithResource("services")
	case *appsv1.Deployment:
		return appsv1.SchemeGroupVersion.WithResource("deployments")
	case *autoscalingv2.HorizontalPodAutoscaler:
		return autoscalingv2.SchemeGroupVersion.WithResource("horizontalpodautoscalers")
	}
	t.Fatalf("no resource for %T", obj)
	return schema.GroupVersionResource{}
}

// wantCounts checks how many pods and per-replica Services render made, and that every name is
// unique.
func wantCounts(t *testing.T, r *badRun, pods, services int) {
	t.Helper()
	if len(r.out.Pods) != pods || r.out.ReplicaServices.Len() != services {
		t.Errorf("rendered %d pods and %d replica Services; want %d and %d", len(r.out.Pods), r.out.ReplicaServices.Len(), pods, services)
	}
	seen := map[string]bool{}
	for _, p := range r.out.Pods {
		if seen[p.Name] {
			t.Errorf("pod %s is rendered twice", p.Name)
		}
		seen[p.Name] = true
	}
}

// wantEnv checks variables of a container of a rendered pod: each is set once, to want's value.
func wantEnv(t *testing.T, r *badRun, pod, container string, want map[string]string) {
	t.Helper()
	i := slices.IndexFunc(r.out.Pods, func(p *corev1.Pod) bool { return p.Name == pod })
	if i < 0 {
		t.Fatalf("no pod %s rendered", pod)
	}
	spec := r.out.Pods[i].Spec
	j := slices.IndexFunc(spec.Containers, func(c corev1.Container) bool { return c.Name == container })
	if j < 0 {
		t.Fatalf("pod %s has no container %s", pod, container)
	}
	got := map[string][]string{}
	for _, e := range spec.Containers[j].Env {
		got[e.Name] = append(got[e.Name], e.Value)
	}
	for name, value := range want {
		if v := got[name]; len(v) != 1 || v[0] != value {
			t.Errorf("pod %s, container %s: %s = %q; want it once, %q", pod, container, name, v, value)
		}
	}
}

// wantWarning checks that render warns with reason, in messages naming each of names.
func wantWarning(t *testing.T, r *badRun, reason string, names ...string) {
	t.Helper()
	for _, name := range names {
		if !slices.ContainsFunc(r.out.Decisions.Warnings, func(w render.Warning) bool {
			return w.Reason == reason && strings.Contains(w.Message, name)
		}) {
			t.Errorf("no %s warning mentions %s; render warned %v", reason, name, r.out.Decisions.Warnings)
		}
	}
}

// envJob is a PyTorchTrainingJob whose training container holds size bytes of environment.
func envJob(size int) string {
	return fmt.Sprintf(`
kind: PyTorchTrainingJob
metadata: {name: pt}
spec:
  replicaSpecs:
  - type: worker
    template:
      spec:
        containers:
        - name: pytorch
          image: pytorch/pytorch:2.4.0
          env: [{name: BLOB, value: %s}]`, strings.Repeat("e", size))
}

// nested is a YAML flow mapping depth levels deep.
func nested(depth int) string {
	return strings.Repeat("{a: ", depth) + "1" + strings.Repeat("}", depth)
}

// TestCRDsAreInstalledWithinTheCELCostBudget: the API server refuses a CRD whose rules' estimated
// cost is over its budget (10,000,000 a rule, 100,000,000 a CRD), so every CRD being installed
// and Established is the check. The estimated costs themselves are not served; the README
// records them.
func TestCRDsAreInstalledWithinTheCELCostBudget(t *testing.T) {
	crds := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	for _, name := range []string{
		"pytorchtrainingjobs.batch.tensorstack.dev", "tensorflowtrainingjobs.batch.tensorstack.dev",
		"pytorchjobs.kubeflow.org", "tfjobs.kubeflow.org",
	} {
		crd, err := cluster.Resource(crds).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Errorf("CRD %s is not installed: %v", name, err)
			continue
		}
		conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
		established := slices.ContainsFunc(conds, func(c any) bool {
			m := c.(map[string]any)
			return m["type"] == "Established" && m["status"] == "True"
		})
		versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
		rules := 0
		for _, v := range versions {
			rules += countRules(v.(map[string]any)["schema"])
		}
		t.Logf("%s: Established %t, %d CEL rules over %d versions", name, established, rules, len(versions))
		if !established || rules == 0 {
			t.Errorf("CRD %s: Established %t with %d CEL rules; want Established, with its rules", name, established, rules)
		}
	}
}

// countRules counts the x-kubernetes-validations rules in a schema.
func countRules(node any) int {
	n := 0
	switch v := node.(type) {
	case map[string]any:
		if rules, ok := v["x-kubernetes-validations"].([]any); ok {
			n += len(rules)
		}
		for _, child := range v {
			n += countRules(child)
		}
	case []any:
		for _, child := range v {
			n += countRules(child)
		}
	}
	return n
}

// TestLargestJobsPassTheCELBudget creates, for each kind, the largest job the schema allows: every
// list at its most items and every string a rule reads at its most characters, as far as the 1.5
// MiB etcd stores; then changes it, so the rules that compare with the old object run too. The
// API server stops a request whose rules run over the runtime budget; none may.
func TestLargestJobsPassTheCELBudget(t *testing.T) {
	cases := map[string]struct {
		job   map[string]any
		patch string
	}{
		"PyTorchTrainingJob":    {largestPyTorchTrainingJob(), `{spec: {elastic: {expectedReplicas: 99999}}}`},
		"TensorFlowTrainingJob": {largestTensorFlowTrainingJob(), `{spec: {runMode: {pause: {enabled: true, enable: true}}}}`},
		"PyTorchJob":            {largestPyTorchJob(), `{spec: {runPolicy: {suspend: true}}}`},
		"TFJob":                 {largestTFJob(), `{spec: {runPolicy: {suspend: true}}}`},
	}
	for kind, tc := range cases {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			job := &unstructured.Unstructured{Object: tc.job}
			data, _ := json.Marshal(job.Object)
			ns := newNamespace(t)
			start := time.Now()
			_, err := create(t, ns, job)
			wantAccepted(t, err)
			t.Logf("%s of %d KiB admitted in %s", kind, len(data)>>10, time.Since(start).Round(time.Millisecond))
			body, err := yaml.YAMLToJSON([]byte(tc.patch))
			if err != nil {
				t.Fatalf("the test's patch is not YAML: %v", err)
			}
			start = time.Now()
			_, err = jobs(t, job, ns).Patch(t.Context(), job.GetName(), types.MergePatchType, body, metav1.PatchOptions{})
			wantAccepted(t, err)
			t.Logf("%s updated in %s", kind, time.Since(start).Round(time.Millisecond))
		})
	}
}

// text is a string of n characters: prefix, then x.
func text(prefix string, n int) string {
	return prefix + strings.Repeat("x", n-len(prefix))
}

// texts is n strings of size characters.
func texts(n, size int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = text(fmt.Sprintf("s%03d", i), size)
	}
	return out
}

func container(name string) map[string]any {
	return map[string]any{"template": map[string]any{"spec": map[string]any{
		"containers": []any{map[string]any{"name": name, "image": "example/train:1"}}}}}
}

// largestTensorBoard fills every list of tensorboardSpec, each string at the most characters
// its schema allows (the rules match every one against a pattern): 32 claims of 253 characters
// with 32 folders of 1,024 each, and 32 filesets of 1,024.
func largestTensorBoard() map[string]any {
	var pvcs, filesets []any
	for i := range 32 {
		claim := text(fmt.Sprintf("c%02d", i), 253)
		pvcs = append(pvcs, map[string]any{"name": claim, "subPath": texts(32, 1024)})
		filesets = append(filesets, text("t9k://pvc/"+claim+"/", 1024))
	}
	return map[string]any{
		"image":               text("tensorflow/tensorflow:", 1024),
		"logDir":              map[string]any{"pvc": pvcs},
		"trainingLogFilesets": filesets,
	}
}

// largestRunMode gives every type a debug and a resume spec. The rules read only the debug
// specs' types, but compare the resume specs whole (they are immutable): those get as much
// command and args as fits beside the TensorBoard in the 1.5 MiB etcd stores.
func largestRunMode(types []string) map[string]any {
	var debug, resume []any
	for _, typ := range types {
		debug = append(debug, map[string]any{"type": typ, "skipInitContainer": true, "command": texts(1, 64)})
		resume = append(resume, map[string]any{"type": typ, "skipInitContainer": true, "command": texts(64, 64), "args": texts(256, 64)})
	}
	return map[string]any{
		"debug": map[string]any{"enabled": false, "enable": false, "replicaSpecs": debug},
		"pause": map[string]any{"enabled": false, "enable": false, "resumeSpecs": resume},
	}
}

func largestT9kJob(kind, name string, specs []any, types []string) map[string]any {
	return map[string]any{
		"apiVersion": apiVersion, "kind": kind,
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{
			"replicaSpecs":    specs,
			"runMode":         largestRunMode(types),
			"runPolicy":       map[string]any{"activeDeadlineSeconds": int64(1) << 40, "backoffLimit": int64(1) << 30, "cleanUpPolicy": "all"},
			"tensorboardSpec": largestTensorBoard(),
			"scheduler":       map[string]any{"t9kScheduler": map[string]any{"queue": text("q", 253), "priority": int64(100)}},
		},
	}
}

// largestPyTorchTrainingJob: 16 replica types of 40 characters with 100,000 replicas each, so the
// name may have 16; elastic up to 100,000; torchrun with 64 extra options.
func largestPyTorchTrainingJob() map[string]any {
	var specs []any
	var types []string
	for i := range 16 {
		typ := text(fmt.Sprintf("t%02d", i), 40)
		types = append(types, typ)
		spec := container("pytorch")
		spec["type"], spec["replicas"], spec["scalingWeight"], spec["restartPolicy"] = typ, int64(100000), int64(1000), "ExitCode"
		specs = append(specs, spec)
	}
	job := largestT9kJob("PyTorchTrainingJob", text("pt", 16), specs, types)
	spec := job["spec"].(map[string]any)
	spec["elastic"] = map[string]any{"enabled": true, "enable": true, "minReplicas": int64(1), "maxReplicas": int64(100000), "expectedReplicas": int64(100000)}
	spec["torchrunConfig"] = map[string]any{"enabled": true, "enable": true, "maxRestarts": int64(3), "procPerNode": "auto",
		"rdzvBackend": text("c10d", 63), "extraOptions": texts(64, 64)}
	return job
}

// largestTensorFlowTrainingJob: the four task types, 100,000 replicas each but the one chief.
func largestTensorFlowTrainingJob() map[string]any {
	types := []string{"chief", "worker", "ps", "evaluator"}
	var specs []any
	for _, typ := range types {
		spec := container("tensorflow")
		spec["type"], spec["replicas"], spec["restartPolicy"] = typ, int64(100000), "OnFailure"
		if typ == "chief" {
			spec["replicas"] = int64(1)
		}
		specs = append(specs, spec)
	}
	return largestT9kJob("TensorFlowTrainingJob", text("tf", 47), specs, types)
}

// largestKubeflowJob sets both run-policy layouts (the rules compare them) and every list of the
// scheduling policy.
func largestKubeflowJob(kind, name string) map[string]any {
	resources := map[string]any{}
	for i := range 32 {
		resources[fmt.Sprintf("example.com/r%02d", i)] = "1"
	}
	return map[string]any{
		"apiVersion": "kubeflow.org/v1", "kind": kind,
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{
			"activeDeadlineSeconds": int64(1) << 40, "backoffLimit": int64(1) << 30, "cleanPodPolicy": "All", "ttlSecondsAfterFinished": int64(1) << 30,
			"runPolicy": map[string]any{
				"activeDeadlineSeconds": int64(1) << 40, "backoffLimit": int64(1) << 30, "cleanPodPolicy": "All", "ttlSecondsAfterFinished": int64(1) << 30,
				"suspend": false, "managedBy": text("kubeflow.org/", 63),
				"schedulingPolicy": map[string]any{"minAvailable": int64(100000), "queue": text("q", 253), "minResources": resources,
					"priorityClass": text("p", 253), "scheduleTimeoutSeconds": int64(1) << 30},
			},
		},
	}
}

// largestPyTorchJob: a Master and 100,000 Workers, elastic up to 100,000 with every rendezvous
// setting and 16 metrics.
func largestPyTorchJob() map[string]any {
	job := largestKubeflowJob("PyTorchJob", text("pt", 50))
	master, worker := container("pytorch"), container("pytorch")
	master["replicas"], worker["replicas"], worker["restartPolicy"] = int64(1), int64(100000), "ExitCode"
	var conf, metrics []any
	for i := range 32 {
		conf = append(conf, map[string]any{"key": text(fmt.Sprintf("k%02d", i), 253), "value": text("v", 1024)})
	}
	for range 16 {
		metrics = append(metrics, map[string]any{"type": "Resource", "resource": map[string]any{"name": "cpu",
			"target": map[string]any{"type": "Utilization", "averageUtilization": int64(80)}}})
	}
	spec := job["spec"].(map[string]any)
	spec["pytorchReplicaSpecs"] = map[string]any{"Master": master, "Worker": worker}
	spec["nprocPerNode"] = "8"
	spec["elasticPolicy"] = map[string]any{"minReplicas": int64(1), "maxReplicas": int64(100000), "rdzvBackend": text("c10d", 63),
		"rdzvPort": int64(29400), "rdzvHost": text("h", 253), "rdzvId": text("i", 253), "rdzvConf": conf, "standalone": false,
		"nProcPerNode": int64(8), "maxRestarts": int64(3), "metrics": metrics}
	return job
}

// largestTFJob: a Chief and 100,000 of each other type.
func largestTFJob() map[string]any {
	job := largestKubeflowJob("TFJob", text("tf", 47))
	specs := map[string]any{}
	for _, typ := range []string{"Chief", "PS", "Worker", "Evaluator"} {
		spec := container("tensorflow")
		spec["replicas"], spec["restartPolicy"] = int64(100000), "Always"
		if typ == "Chief" {
			spec["replicas"] = int64(1)
		}
		specs[typ] = spec
	}
	spec := job["spec"].(map[string]any)
	spec["tfReplicaSpecs"] = specs
	spec["successPolicy"] = "AllWorkers"
	spec["enableDynamicWorker"] = true
	return job
}
