//go:build integration

package integration

import (
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// The kubeflow.org kinds (PyTorchJob, TFJob) as Kubeflow users write them. Their CRDs come from
// the opt-in overlay kustomize/kubeflow.

// seedPyTorchJob is a PyTorchJob in the layout of the kubeflow.org/v1 API reference: the run
// policy directly under spec.
const seedPyTorchJob = `
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: pytorch-dist-mnist}
spec:
  activeDeadlineSeconds: 3600
  backoffLimit: 3
  cleanPodPolicy: Running
  ttlSecondsAfterFinished: 600
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      restartPolicy: OnFailure
      template: PYTORCHJOB_POD
    Worker:
      replicas: 3
      restartPolicy: OnFailure
      template: PYTORCHJOB_POD`

// currentPyTorchJob is a PyTorchJob in the layout of later Kubeflow releases: spec.runPolicy,
// elastic training and nprocPerNode.
const currentPyTorchJob = `
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: elastic-imagenet}
spec:
  runPolicy:
    activeDeadlineSeconds: 86400
    backoffLimit: 10
    cleanPodPolicy: None
    ttlSecondsAfterFinished: 3600
    suspend: true
    managedBy: kubeflow.org/training-operator
    schedulingPolicy:
      minAvailable: 2
      queue: research
      minResources: {cpu: "16", nvidia.com/gpu: "8"}
      priorityClass: high
      scheduleTimeoutSeconds: 300
  nprocPerNode: "4"
  elasticPolicy:
    minReplicas: 1
    maxReplicas: 4
    rdzvBackend: c10d
    rdzvPort: 29400
    rdzvHost: elastic-imagenet-worker-0
    rdzvId: imagenet-1
    rdzvConf: [{key: join_timeout, value: "900"}]
    standalone: false
    nProcPerNode: 4
    maxRestarts: 3
    metrics:
    - type: Resource
      resource: {name: cpu, target: {type: Utilization, averageUtilization: 80}}
  pytorchReplicaSpecs:
    Worker:
      replicas: 2
      restartPolicy: ExitCode
      template: PYTORCHJOB_POD`

// v1beta2TFJob is a TFJob written against kubeflow.org/v1beta2, with every field that version has.
const v1beta2TFJob = `
apiVersion: kubeflow.org/v1beta2
kind: TFJob
metadata: {name: dist-mnist}
spec:
  activeDeadlineSeconds: 7200
  backoffLimit: 2
  cleanPodPolicy: All
  ttlSecondsAfterFinished: 300
  tfReplicaSpecs:
    Chief: {replicas: 1, restartPolicy: Never, template: TFJOB_POD}
    PS: {replicas: 2, restartPolicy: OnFailure, template: TFJOB_POD}
    Worker: {replicas: 4, restartPolicy: ExitCode, template: TFJOB_POD}
    Evaluator: {replicas: 1, restartPolicy: Always, template: TFJOB_POD}`

func TestKubeflowManifestsAreAccepted(t *testing.T) {
	cases := map[string]string{
		"a PyTorchJob in the layout of the v1 API reference is accepted":                                                seedPyTorchJob,
		"a PyTorchJob with runPolicy, suspend, schedulingPolicy, managedBy, elasticPolicy and nprocPerNode is accepted": currentPyTorchJob,
		"a TFJob written for v1beta2 is accepted":                                                                       v1beta2TFJob,
		"both layouts set to equal values are accepted": `
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: pt}
spec:
  activeDeadlineSeconds: 60
  backoffLimit: 0
  cleanPodPolicy: All
  ttlSecondsAfterFinished: 0
  runPolicy: {activeDeadlineSeconds: 60, backoffLimit: 0, cleanPodPolicy: All, ttlSecondsAfterFinished: 0}
  pytorchReplicaSpecs:
    Master: {template: PYTORCHJOB_POD}`,
		"the two layouts each setting different fields are accepted": `
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: tf}
spec:
  backoffLimit: 4
  cleanPodPolicy: None
  runPolicy: {activeDeadlineSeconds: 600, ttlSecondsAfterFinished: 60}
  tfReplicaSpecs:
    Worker: {replicas: 2, template: TFJOB_POD}`,
		"a TFJob with the v1 fields is accepted": `
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: tf}
spec:
  runPolicy: {cleanPodPolicy: Running, suspend: false}
  successPolicy: AllWorkers
  enableDynamicWorker: true
  tfReplicaSpecs:
    Master: {replicas: 1, template: TFJOB_POD}
    PS: {replicas: 1, template: TFJOB_POD}
    Worker: {replicas: 2, template: TFJOB_POD}`,
		"a TFJob with the default success policy spelled out is accepted": `
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: tf}
spec:
  successPolicy: ""
  tfReplicaSpecs:
    Worker: {template: TFJOB_POD}`,
		"a PyTorchJob of Workers alone is accepted": `
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: pt}
spec:
  pytorchReplicaSpecs:
    Worker: {replicas: 8, template: PYTORCHJOB_POD}`,
		"each nprocPerNode form is accepted": `
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: pt}
spec:
  nprocPerNode: gpu
  pytorchReplicaSpecs:
    Worker: {template: PYTORCHJOB_POD}`,
		"nprocPerNode equal to the deprecated elasticPolicy.nProcPerNode is accepted": `
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: pt}
spec:
  nprocPerNode: "8"
  elasticPolicy: {minReplicas: 1, maxReplicas: 2, nProcPerNode: 8}
  pytorchReplicaSpecs:
    Worker: {replicas: 1, template: PYTORCHJOB_POD}`,
		"Worker replicas at both elastic bounds are accepted": `
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: pt}
spec:
  elasticPolicy: {minReplicas: 3, maxReplicas: 3}
  pytorchReplicaSpecs:
    Worker: {replicas: 3, template: PYTORCHJOB_POD}`,
		"a Master with 0 replicas is accepted": `
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: pt}
spec:
  pytorchReplicaSpecs:
    Master: {replicas: 0, template: PYTORCHJOB_POD}
    Worker: {replicas: 1, template: PYTORCHJOB_POD}`,
		"a PyTorchJob name exactly as long as its pod names allow is accepted": `
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: ` + longName(54) + `}
spec:
  pytorchReplicaSpecs:
    Worker: {replicas: 10, template: PYTORCHJOB_POD}`,
		"a TFJob name exactly as long as its evaluator's pod name allows is accepted": `
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: ` + longName(51) + `}
spec:
  tfReplicaSpecs:
    Evaluator: {template: TFJOB_POD}`,
	}

	for name, manifestText := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := create(t, newNamespace(t), manifest(t, manifestText))
			wantAccepted(t, err)
		})
	}
}

func TestKubeflowBadManifestsAreRefused(t *testing.T) {
	cases := map[string]struct {
		manifest string
		// wantErr are the parts the refusal must contain: the field's path and the rule's meaning.
		wantErr []string
	}{
		// Replica types and counts.
		"an unknown PyTorch replica type is refused": {
			manifest: `
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: pt}
spec:
  pytorchReplicaSpecs:
    Launcher: {template: PYTORCHJOB_POD}
    Worker: {template: PYTORCHJOB_POD}`,
			wantErr: []string{"spec.pytorchReplicaSpecs", "spec.pytorchReplicaSpecs has an unknown replica type Launcher", "the keys must be Master or Worker"},
		},
		"a PyTorch replica type in lower case is refused": {
			manifest: `
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: pt}
spec:
  pytorchReplicaSpecs:
    worker: {template: PYTORCHJOB_POD}`,
			wantErr: []string{"spec.pytorchReplicaSpecs", "unknown replica type worker", "spelled so"},
		},
		"three PyTorch replica types are refused": {
			manifest: `
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: pt}
spec:
  pytorchReplicaSpecs:
    Master: {template: PYTORCHJOB_POD}
    Worker: {template: PYTORCHJOB_POD}
    Evaluator: {template: PYTORCHJOB_POD}`,
			// The schema's bound refuses it before the CEL rule on the keys runs.
			wantErr: []string{"spec.pytorchReplicaSpecs", "must have at most 2 items"},
		},
		"an unknown TensorFlow replica type is refused": {
			manifest: `
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: tf}
spec:
  tfReplicaSpecs:
    Worker: {template: TFJOB_POD}
    ps: {template: TFJOB_POD}`,
			wantErr: []string{"spec.tfReplicaSpecs", "unknown replica type ps", "Chief, Master, PS, Worker or Evaluator"},
		},
		"a PyTorchJob without replica specs is refused": {
			manifest: `
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: pt}
spec:
  pytorchReplicaSpecs: {}`,
			wantErr: []string{"spec.pytorchReplicaSpecs", "should have at least 1 properties"},
		},
		"two PyTorch Masters are refused": {
			manifest: `
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: pt}
spec:
  pytorchReplicaSpecs:
    Master: {replicas: 2, template: PYTORCHJOB_POD}`,
			wantErr: []string{"spec.pytorchReplicaSpecs[Master].replicas", "spec.pytorchReplicaSpecs.Master.replicas must be 0 or 1"},
		},
		"two TensorFlow Chiefs are refused": {
			manifest: `
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: tf}
spec:
  tfReplicaSpecs:
    Chief: {replicas: 2, template: TFJOB_POD}`,
			wantErr: []string{"spec.tfReplicaSpecs[Chief].replicas", "spec.tfReplicaSpecs.Chief.replicas must be 0 or 1"},
		},
		"two TensorFlow Masters are refused": {
			manifest: `
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: tf}
spec:
  tfReplicaSpecs:
    Master: {replicas: 2, template: TFJOB_POD}`,
			wantErr: []string{"spec.tfReplicaSpecs[Master].replicas", "spec.tfReplicaSpecs.Master.replicas must be 0 or 1"},
		},
		"a TensorFlow Chief beside a Master is refused": {
			manifest: `
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: tf}
spec:
  tfReplicaSpecs:
    Chief: {template: TFJOB_POD}
    Master: {template: TFJOB_POD}`,
			wantErr: []string{"spec.tfReplicaSpecs", "spec.tfReplicaSpecs sets both Chief and Master"},
		},
		"negative PyTorch replicas are refused": {
			manifest: `
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: pt}
spec:
  pytorchReplicaSpecs:
    Worker: {replicas: -1, template: PYTORCHJOB_POD}`,
			wantErr: []string{"spec.pytorchReplicaSpecs.Worker.replicas", "greater than or equal to 0"},
		},
		"negative TensorFlow replicas are refused": {
			manifest: `
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: tf}
spec:
  tfReplicaSpecs:
    PS: {replicas: -2, template: TFJOB_POD}`,
			wantErr: []string{"spec.tfReplicaSpecs.PS.replicas", "greater than or equal to 0"},
		},
		"an unknown restartPolicy is refused": {
			manifest: `
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: pt}
spec:
  pytorchReplicaSpecs:
    Worker: {restartPolicy: Sometimes, template: PYTORCHJOB_POD}`,
			wantErr: []string{"spec.pytorchReplicaSpecs.Worker.restartPolicy", `Unsupported value: "Sometimes"`, `"ExitCode"`},
		},

		// The two layouts of the run policy disagreeing.
		"activeDeadlineSeconds set differently in both layouts is refused": {
			manifest: `
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: pt}
spec:
  activeDeadlineSeconds: 60
  runPolicy: {activeDeadlineSeconds: 120}
  pytorchReplicaSpecs:
    Worker: {template: PYTORCHJOB_POD}`,
			wantErr: []string{"spec.activeDeadlineSeconds and spec.runPolicy.activeDeadlineSeconds differ: set only one"},
		},
		"backoffLimit set differently in both layouts is refused": {
			manifest: `
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: pt}
spec:
  backoffLimit: 3
  runPolicy: {backoffLimit: 0}
  pytorchReplicaSpecs:
    Worker: {template: PYTORCHJOB_POD}`,
			wantErr: []string{"spec.backoffLimit and spec.runPolicy.backoffLimit differ: set only one"},
		},
		"cleanPodPolicy set differently in both layouts is refused": {
			manifest: `
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: tf}
spec:
  cleanPodPolicy: Running
  runPolicy: {cleanPodPolicy: None}
  tfReplicaSpecs:
    Worker: {template: TFJOB_POD}`,
			wantErr: []string{"spec.cleanPodPolicy and spec.runPolicy.cleanPodPolicy differ: set only one"},
		},
		"ttlSecondsAfterFinished set differently in both layouts is refused": {
			manifest: `
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: tf}
spec:
  ttlSecondsAfterFinished: 0
  runPolicy: {ttlSecondsAfterFinished: 60}
  tfReplicaSpecs:
    Worker: {template: TFJOB_POD}`,
			wantErr: []string{"spec.ttlSecondsAfterFinished and spec.runPolicy.ttlSecondsAfterFinished differ: set only one"},
		},
		"TFJob backoffLimit set differently in both layouts is refused": {
			manifest: `
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: tf}
spec:
  backoffLimit: 1
  runPolicy: {backoffLimit: 2}
  tfReplicaSpecs:
    Worker: {template: TFJOB_POD}`,
			wantErr: []string{"spec.backoffLimit and spec.runPolicy.backoffLimit differ: set only one"},
		},
		"PyTorchJob ttlSecondsAfterFinished set differently in both layouts is refused": {
			manifest: `
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: pt}
spec:
  ttlSecondsAfterFinished: 10
  runPolicy: {ttlSecondsAfterFinished: 20}
  pytorchReplicaSpecs:
    Worker: {template: PYTORCHJOB_POD}`,
			wantErr: []string{"spec.ttlSecondsAfterFinished and spec.runPolicy.ttlSecondsAfterFinished differ: set only one"},
		},

		// Run policy bounds, in either layout.
		"activeDeadlineSeconds 0 is refused": {
			manifest: `
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: pt}
spec:
  activeDeadlineSeconds: 0
  pytorchReplicaSpecs:
    Worker: {template: PYTORCHJOB_POD}`,
			wantErr: []string{"spec.activeDeadlineSeconds", "greater than or equal to 1"},
		},
		"runPolicy.activeDeadlineSeconds 0 is refused": {
			manifest: `
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: tf}
spec:
  runPolicy: {activeDeadlineSeconds: 0}
  tfReplicaSpecs:
    Worker: {template: TFJOB_POD}`,
			wantErr: []string{"spec.runPolicy.activeDeadlineSeconds", "greater than or equal to 1"},
		},
		"a negative backoffLimit is refused": {
			manifest: `
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: tf}
spec:
  backoffLimit: -1
  tfReplicaSpecs:
    Worker: {template: TFJOB_POD}`,
			wantErr: []string{"spec.backoffLimit", "greater than or equal to 0"},
		},
		"a negative runPolicy.backoffLimit is refused": {
			manifest: `
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: pt}
spec:
  runPolicy: {backoffLimit: -1}
  pytorchReplicaSpecs:
    Worker: {template: PYTORCHJOB_POD}`,
			wantErr: []string{"spec.runPolicy.backoffLimit", "greater than or equal to 0"},
		},
		"a negative ttlSecondsAfterFinished is refused": {
			manifest: `
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: pt}
spec:
  ttlSecondsAfterFinished: -5
  pytorchReplicaSpecs:
    Worker: {template: PYTORCHJOB_POD}`,
			wantErr: []string{"spec.ttlSecondsAfterFinished", "greater than or equal to 0"},
		},
		"a negative runPolicy.ttlSecondsAfterFinished is refused": {
			manifest: `
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: tf}
spec:
  runPolicy: {ttlSecondsAfterFinished: -5}
  tfReplicaSpecs:
    Worker: {template: TFJOB_POD}`,
			wantErr: []string{"spec.runPolicy.ttlSecondsAfterFinished", "greater than or equal to 0"},
		},
		"the T9k cleanUpPolicy value Unfinished is refused": {
			manifest: `
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: pt}
spec:
  cleanPodPolicy: Unfinished
  pytorchReplicaSpecs:
    Worker: {template: PYTORCHJOB_POD}`,
			wantErr: []string{"spec.cleanPodPolicy", `Unsupported value: "Unfinished"`, `"All", "Running", "None"`},
		},
		"a lower-case runPolicy.cleanPodPolicy is refused": {
			manifest: `
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: tf}
spec:
  runPolicy: {cleanPodPolicy: all}
  tfReplicaSpecs:
    Worker: {template: TFJOB_POD}`,
			wantErr: []string{"spec.runPolicy.cleanPodPolicy", `Unsupported value: "all"`},
		},
		"a scheduleTimeoutSeconds of 0 is refused": {
			manifest: `
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: pt}
spec:
  runPolicy:
    schedulingPolicy: {scheduleTimeoutSeconds: 0}
  pytorchReplicaSpecs:
    Worker: {template: PYTORCHJOB_POD}`,
			wantErr: []string{"spec.runPolicy.schedulingPolicy.scheduleTimeoutSeconds", "greater than or equal to 1"},
		},

		// TensorFlow success.
		"an unknown successPolicy is refused": {
			manifest: `
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: tf}
spec:
  successPolicy: AnyWorker
  tfReplicaSpecs:
    Worker: {template: TFJOB_POD}`,
			wantErr: []string{"spec.successPolicy", `Unsupported value: "AnyWorker"`, `"AllWorkers"`},
		},

		// Elastic training and processes per pod.
		"elasticPolicy.minReplicas 0 is refused": {
			manifest: `
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: pt}
spec:
  elasticPolicy: {minReplicas: 0, maxReplicas: 4}
  pytorchReplicaSpecs:
    Worker: {replicas: 1, template: PYTORCHJOB_POD}`,
			wantErr: []string{"spec.elasticPolicy.minReplicas", "greater than or equal to 1"},
		},
		"elasticPolicy.minReplicas above maxReplicas is refused": {
			manifest: `
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: pt}
spec:
  elasticPolicy: {minReplicas: 4, maxReplicas: 2}
  pytorchReplicaSpecs:
    Worker: {replicas: 3, template: PYTORCHJOB_POD}`,
			wantErr: []string{"spec.elasticPolicy.minReplicas: Invalid value: spec.elasticPolicy.minReplicas must be at most spec.elasticPolicy.maxReplicas"},
		},
		"Worker replicas below elasticPolicy.minReplicas are refused": {
			manifest: `
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: pt}
spec:
  elasticPolicy: {minReplicas: 2, maxReplicas: 4}
  pytorchReplicaSpecs:
    Worker: {replicas: 1, template: PYTORCHJOB_POD}`,
			wantErr: []string{"spec.pytorchReplicaSpecs[Worker].replicas", "spec.pytorchReplicaSpecs.Worker.replicas is below spec.elasticPolicy.minReplicas"},
		},
		"Worker replicas left to their default below elasticPolicy.minReplicas are refused": {
			manifest: `
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: pt}
spec:
  elasticPolicy: {minReplicas: 2}
  pytorchReplicaSpecs:
    Worker: {template: PYTORCHJOB_POD}`,
			wantErr: []string{"spec.pytorchReplicaSpecs.Worker.replicas is below spec.elasticPolicy.minReplicas"},
		},
		"Worker replicas above elasticPolicy.maxReplicas are refused": {
			manifest: `
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: pt}
spec:
  elasticPolicy: {minReplicas: 1, maxReplicas: 4}
  pytorchReplicaSpecs:
    Worker: {replicas: 5, template: PYTORCHJOB_POD}`,
			wantErr: []string{"spec.pytorchReplicaSpecs[Worker].replicas", "spec.pytorchReplicaSpecs.Worker.replicas is above spec.elasticPolicy.maxReplicas"},
		},
		"a word nprocPerNode other than auto, cpu and gpu is refused": {
			manifest: `
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: pt}
spec:
  nprocPerNode: all
  pytorchReplicaSpecs:
    Worker: {template: PYTORCHJOB_POD}`,
			wantErr: []string{"spec.nprocPerNode", "spec.nprocPerNode must be auto, cpu, gpu or a positive integer"},
		},
		"nprocPerNode 0 is refused": {
			manifest: `
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: pt}
spec:
  nprocPerNode: "0"
  pytorchReplicaSpecs:
    Worker: {template: PYTORCHJOB_POD}`,
			wantErr: []string{"spec.nprocPerNode", "spec.nprocPerNode must be auto, cpu, gpu or a positive integer"},
		},
		"nprocPerNode disagreeing with the deprecated elasticPolicy.nProcPerNode is refused": {
			manifest: `
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: pt}
spec:
  nprocPerNode: "4"
  elasticPolicy: {minReplicas: 1, maxReplicas: 2, nProcPerNode: 8}
  pytorchReplicaSpecs:
    Worker: {replicas: 1, template: PYTORCHJOB_POD}`,
			wantErr: []string{"spec.nprocPerNode", "spec.nprocPerNode and spec.elasticPolicy.nProcPerNode differ"},
		},

		// Names: every pod and Service name must be a DNS label.
		"a PyTorchJob name too long for its pod names is refused": {
			// 55 + len("-worker-9") = 64 > 63.
			manifest: `
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: ` + longName(55) + `}
spec:
  pytorchReplicaSpecs:
    Worker: {replicas: 10, template: PYTORCHJOB_POD}`,
			wantErr: []string{"metadata.name: Invalid value: metadata.name is too long", "<job>-<type>-<index>"},
		},
		"an elastic PyTorchJob whose maxReplicas makes pod names too long is refused": {
			// One Worker now, up to 100 later: 54 + len("-worker-99") = 64 > 63.
			manifest: `
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: ` + longName(54) + `}
spec:
  elasticPolicy: {minReplicas: 1, maxReplicas: 100}
  pytorchReplicaSpecs:
    Worker: {replicas: 1, template: PYTORCHJOB_POD}`,
			wantErr: []string{"metadata.name: Invalid value: metadata.name is too long"},
		},
		"a TFJob name too long for its evaluator's pod name is refused": {
			// 52 + len("-evaluator-0") = 64 > 63.
			manifest: `
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: ` + longName(52) + `}
spec:
  tfReplicaSpecs:
    Evaluator: {template: TFJOB_POD}`,
			wantErr: []string{"metadata.name: Invalid value: metadata.name is too long", "<job>-<type>-<index>"},
		},
		"a job name with a dot is refused": {
			manifest: `
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: dist.mnist}
spec:
  tfReplicaSpecs:
    Worker: {template: TFJOB_POD}`,
			wantErr: []string{"metadata.name: Invalid value: metadata.name must be a DNS-1035 label"},
		},
		"a job name starting with a digit is refused": {
			manifest: `
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: 1job}
spec:
  pytorchReplicaSpecs:
    Worker: {template: PYTORCHJOB_POD}`,
			wantErr: []string{"metadata.name: Invalid value: metadata.name must be a DNS-1035 label"},
		},

		// The deprecated v1beta2 alias has the same rules.
		"a v1beta2 TFJob with two Chiefs is refused": {
			manifest: `
apiVersion: kubeflow.org/v1beta2
kind: TFJob
metadata: {name: tf}
spec:
  tfReplicaSpecs:
    Chief: {replicas: 2, template: TFJOB_POD}`,
			wantErr: []string{"spec.tfReplicaSpecs[Chief].replicas", "spec.tfReplicaSpecs.Chief.replicas must be 0 or 1"},
		},
		"a v1beta2 TFJob with both layouts disagreeing is refused": {
			manifest: `
apiVersion: kubeflow.org/v1beta2
kind: TFJob
metadata: {name: tf}
spec:
  activeDeadlineSeconds: 10
  runPolicy: {activeDeadlineSeconds: 20}
  tfReplicaSpecs:
    Worker: {template: TFJOB_POD}`,
			wantErr: []string{"spec.activeDeadlineSeconds and spec.runPolicy.activeDeadlineSeconds differ: set only one"},
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

// TestKubeflowDefaultsAreApplied pins what the schema fills in, and what it leaves to render:
// replicas default to 1; restartPolicy (whose default differs by kind) and the run policy are
// left unset.
func TestKubeflowDefaultsAreApplied(t *testing.T) {
	got, err := create(t, newNamespace(t), manifest(t, `
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: pt}
spec:
  pytorchReplicaSpecs:
    Master: {template: PYTORCHJOB_POD}`))
	wantAccepted(t, err)
	spec := got.Object["spec"].(map[string]any)
	master := spec["pytorchReplicaSpecs"].(map[string]any)["Master"].(map[string]any)
	delete(master, "template")
	delete(spec, "pytorchReplicaSpecs")
	if diff := cmp.Diff(map[string]any{"replicas": int64(1)}, master); diff != "" {
		t.Errorf("the stored Master spec without its template (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]any{}, spec); diff != "" {
		t.Errorf("the stored spec without its replica specs (-want +got):\n%s", diff)
	}
}

// warnings records the warnings an API server sends with its answers.
type warnings struct {
	mu   sync.Mutex
	text []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.text = append(w.text, text)
}

// warningClient is a client of the shared API server that records the warnings it answers with.
func warningClient(t *testing.T) (dynamic.Interface, *warnings) {
	t.Helper()
	cfg := rest.CopyConfig(restConfig)
	seen := &warnings{}
	cfg.WarningHandler = seen
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return client, seen
}

// TestKubeflowV1beta2TFJobIsReadAsV1 creates a TFJob through the deprecated kubeflow.org/v1beta2
// and reads it back through kubeflow.org/v1: same fields, and a warning that tells the user to
// move on.
func TestKubeflowV1beta2TFJobIsReadAsV1(t *testing.T) {
	client, seen := warningClient(t)
	ns := newNamespace(t)
	job := manifest(t, v1beta2TFJob)
	tfjobs := resources["TFJob"]

	created, err := client.Resource(tfjobs.WithVersion("v1beta2")).Namespace(ns).Create(t.Context(), job, metav1.CreateOptions{})
	wantAccepted(t, err)
	wantWarning := []string{"kubeflow.org/v1beta2 TFJob is deprecated; change apiVersion to kubeflow.org/v1 (the fields are the same)"}
	if diff := cmp.Diff(wantWarning, seen.text); diff != "" {
		t.Errorf("warnings on creating through v1beta2 (-want +got):\n%s", diff)
	}

	got, err := cluster.Resource(tfjobs.WithVersion("v1")).Namespace(ns).Get(t.Context(), job.GetName(), metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading the job as kubeflow.org/v1: %v", err)
	}
	if got.GetAPIVersion() != "kubeflow.org/v1" {
		t.Errorf("apiVersion read through v1 = %q; want kubeflow.org/v1", got.GetAPIVersion())
	}
	if diff := cmp.Diff(created.Object["spec"], got.Object["spec"]); diff != "" {
		t.Errorf("spec read through v1 differs from the one stored through v1beta2 (-v1beta2 +v1):\n%s", diff)
	}
	counts := map[string]int64{}
	for name, spec := range got.Object["spec"].(map[string]any)["tfReplicaSpecs"].(map[string]any) {
		counts[name] = spec.(map[string]any)["replicas"].(int64)
	}
	if diff := cmp.Diff(map[string]int64{"Chief": 1, "PS": 2, "Worker": 4, "Evaluator": 1}, counts); diff != "" {
		t.Errorf("replica types and counts read through v1 (-want +got):\n%s", diff)
	}
}

// elasticPyTorchJob is an elastic PyTorchJob, the start of the update cases.
const elasticPyTorchJob = `
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: elastic}
spec:
  runPolicy: {managedBy: kubeflow.org/training-operator}
  elasticPolicy: {minReplicas: 1, maxReplicas: 4}
  pytorchReplicaSpecs:
    Worker: {replicas: 2, template: PYTORCHJOB_POD}`

func TestKubeflowUpdates(t *testing.T) {
	cases := map[string]updateCase{
		"changing runPolicy.managedBy is refused": {
			initial: elasticPyTorchJob,
			patch:   `{spec: {runPolicy: {managedBy: kueue.x-k8s.io/multikueue}}}`,
			wantErr: []string{"spec.runPolicy.managedBy: Invalid value: spec.runPolicy.managedBy is immutable"},
		},
		"removing runPolicy.managedBy is refused": {
			initial: elasticPyTorchJob,
			patch:   `{spec: {runPolicy: null}}`,
			wantErr: []string{"spec.runPolicy.managedBy: Invalid value: spec.runPolicy.managedBy is immutable"},
		},
		"setting runPolicy.managedBy after creation is refused": {
			initial: v1beta2TFJob,
			patch:   `{spec: {runPolicy: {managedBy: kueue.x-k8s.io/multikueue}}}`,
			wantErr: []string{"spec.runPolicy.managedBy: Invalid value: spec.runPolicy.managedBy is immutable"},
		},
		"suspending a job is accepted": {
			initial: seedPyTorchJob,
			patch:   `{spec: {runPolicy: {suspend: true}}}`,
		},
		"resuming a job is accepted": {
			initial: currentPyTorchJob,
			patch:   `{spec: {runPolicy: {suspend: false}}}`,
		},
		"scaling Workers within the elastic bounds is accepted": {
			initial: elasticPyTorchJob,
			patch:   `{spec: {pytorchReplicaSpecs: {Worker: {replicas: 4}}}}`,
		},
		"moving the legacy backoffLimit away from runPolicy's is refused": {
			initial: `
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: tf}
spec:
  backoffLimit: 3
  runPolicy: {backoffLimit: 3}
  tfReplicaSpecs:
    Worker: {template: TFJOB_POD}`,
			patch:   `{spec: {backoffLimit: 5}}`,
			wantErr: []string{"spec.backoffLimit and spec.runPolicy.backoffLimit differ: set only one"},
		},
	}

	runUpdates(t, cases)
}

// TestPyTorchJobScaleSubresourceSetsWorkerReplicas scales a PyTorchJob the way `kubectl scale`
// and an HPA do: through /scale, which reads and writes spec.pytorchReplicaSpecs.Worker.replicas.
func TestPyTorchJobScaleSubresourceSetsWorkerReplicas(t *testing.T) {
	s := newScaler(t, elasticPyTorchJob)
	if diff := cmp.Diff(map[string]any{"replicas": int64(2)}, s.scale.Object["spec"]); diff != "" {
		t.Errorf("/scale spec on creation, from the Worker replicas 2 (-want +got):\n%s", diff)
	}

	if err := s.set(3); err != nil {
		t.Fatalf("scaling to 3: %v", err)
	}
	replicas, _, err := unstructured.NestedInt64(s.job().Object, "spec", "pytorchReplicaSpecs", "Worker", "replicas")
	if err != nil || replicas != 3 {
		t.Errorf("spec.pytorchReplicaSpecs.Worker.replicas after scaling to 3 = %d (%v); want 3", replicas, err)
	}

	// Scaling outside the elastic bounds is refused like any other update.
	wantRefused(t, s.set(5), "spec.pytorchReplicaSpecs.Worker.replicas is above spec.elasticPolicy.maxReplicas")
	wantRefused(t, s.set(0), "spec.pytorchReplicaSpecs.Worker.replicas is below spec.elasticPolicy.minReplicas")
}
