package render

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
	kubeflowv1 "github.com/trainyard/trainyard/apis/kubeflow/v1"
	"github.com/trainyard/trainyard/apis/kueue"
)

// ReadJob decodes one job manifest of a kind Trainyard serves. Unknown fields are errors, so a
// misspelt field is caught by the dry run rather than silently dropped.
func ReadJob(data []byte) (Job, error) {
	docs, err := splitDocuments(data)
	if err != nil {
		return Job{}, err
	}
	if len(docs) != 1 {
		return Job{}, fmt.Errorf("want exactly one job manifest, found %d YAML documents", len(docs))
	}
	data = docs[0]
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := yaml.Unmarshal(data, &head); err != nil {
		return Job{}, err
	}
	kind := head.APIVersion + ", Kind=" + head.Kind
	switch kind {
	case batch.GroupVersion.String() + ", Kind=PyTorchTrainingJob":
		var j batch.PyTorchTrainingJob
		if err := yaml.UnmarshalStrict(data, &j); err != nil {
			return Job{}, fmt.Errorf("PyTorchTrainingJob: %w", err)
		}
		return FromPyTorchTrainingJob(&j), nil
	case batch.GroupVersion.String() + ", Kind=TensorFlowTrainingJob":
		var j batch.TensorFlowTrainingJob
		if err := yaml.UnmarshalStrict(data, &j); err != nil {
			return Job{}, fmt.Errorf("TensorFlowTrainingJob: %w", err)
		}
		return FromTensorFlowTrainingJob(&j), nil
	case kubeflowv1.GroupVersion.String() + ", Kind=PyTorchJob":
		var j kubeflowv1.PyTorchJob
		if err := yaml.UnmarshalStrict(data, &j); err != nil {
			return Job{}, fmt.Errorf("PyTorchJob: %w", err)
		}
		return FromPyTorchJob(&j), nil
	case kubeflowv1.GroupVersion.String() + ", Kind=TFJob", "kubeflow.org/v1beta2, Kind=TFJob":
		// v1beta2 is served with v1's schema: the same document reads as v1.
		var j kubeflowv1.TFJob
		if err := yaml.UnmarshalStrict(data, &j); err != nil {
			return Job{}, fmt.Errorf("TFJob: %w", err)
		}
		return FromTFJob(&j), nil
	}
	if head.APIVersion != batch.GroupVersion.String() && !strings.HasPrefix(head.APIVersion, kubeflowv1.GroupVersion.Group+"/") {
		return Job{}, fmt.Errorf("apiVersion: unsupported value %q: supported values: %q, %q, \"kubeflow.org/v1beta2\"", head.APIVersion, batch.GroupVersion.String(), kubeflowv1.GroupVersion.String())
	}
	return Job{}, fmt.Errorf("kind: unsupported value %q for %s: supported values: \"PyTorchTrainingJob\", \"TensorFlowTrainingJob\" (batch.tensorstack.dev/v1beta1), \"PyTorchJob\", \"TFJob\" (kubeflow.org/v1)", head.Kind, head.APIVersion)
}

// ReadObserved decodes a multi-document YAML of observed objects into the pods and the installed
// CRDs (ReadObservations reads everything else too).
func ReadObserved(data []byte) (pods []*corev1.Pod, crds map[string]bool, err error) {
	o, err := ReadObservations(data)
	return o.Pods, o.InstalledCRDs, err
}

// Observations are what a cluster shows of a job, as ReadObservations reads them: render's
// Input fields of the same names.
type Observations struct {
	Pods          []*corev1.Pod
	DeletedPods   []corev1.Pod
	InstalledCRDs map[string]bool
	Nodes         map[string]NodeState
	// Jobs are the training jobs of the four kinds among the documents: the others in the job's
	// namespace, for NameTakenBy.
	Jobs []JobRef
}

// ObservedAnnotation, on a pod of an --observed file, says what the controller saw happen to it
// (render's Input.DeletedPods): ObservedDeleted, someone else started deleting it (it is still
// there); ObservedGone, someone else deleted it and it is gone. On a Node, ObservedGone says the
// cluster has no such node (NodeState.Missing). Read by ReadObservations only;
// no object in a cluster carries it.
const (
	ObservedAnnotation = "render.trainyard.dev/observed"
	ObservedDeleted    = "deleted"
	ObservedGone       = "gone"
)

// ReadObservations decodes a multi-document YAML of observed objects: Pods (one document each;
// ObservedAnnotation marks those deleted by someone else),
// Nodes (their Ready condition), CustomResourceDefinitions (only their names count: they say
// which PodGroup kinds exist), and the APIServices of KubernetesGangAPIs (`kubectl get apiservice
// v1beta1.scheduling.k8s.io`), which say at which versions the cluster serves the built-in
// Workload and PodGroup.
func ReadObservations(data []byte) (Observations, error) {
	o := Observations{InstalledCRDs: map[string]bool{}}
	docs, err := observedDocuments(data)
	if err != nil {
		return Observations{}, err
	}
	for i, doc := range docs {
		var u unstructured.Unstructured
		if err := yaml.Unmarshal(doc, &u.Object); err != nil {
			return Observations{}, fmt.Errorf("observed document %d: %w", i+1, err)
		}
		switch u.GetKind() {
		case "Pod":
			var p corev1.Pod
			if err := yaml.UnmarshalStrict(doc, &p); err != nil {
				return Observations{}, fmt.Errorf("observed document %d (Pod %s): %w", i+1, u.GetName(), err)
			}
			mark := p.Annotations[ObservedAnnotation]
			delete(p.Annotations, ObservedAnnotation)
			switch mark {
			case "":
				o.Pods = append(o.Pods, &p)
			case ObservedDeleted:
				o.Pods = append(o.Pods, p.DeepCopy())
				o.DeletedPods = append(o.DeletedPods, p)
			case ObservedGone:
				o.DeletedPods = append(o.DeletedPods, p)
			default:
				return Observations{}, fmt.Errorf("observed document %d (Pod %s): annotation %s: unsupported value %q: supported values: %q, %q",
					i+1, u.GetName(), ObservedAnnotation, mark, ObservedDeleted, ObservedGone)
			}
		case "Node":
			var n corev1.Node
			if err := yaml.Unmarshal(doc, &n); err != nil {
				return Observations{}, fmt.Errorf("observed document %d (Node %s): %w", i+1, u.GetName(), err)
			}
			if o.Nodes == nil {
				o.Nodes = map[string]NodeState{}
			}
			state := NodeStateOf(&n)
			// A Node marked gone is one the cluster has not (a template's spec.nodeName).
			state.Missing = n.Annotations[ObservedAnnotation] == ObservedGone
			o.Nodes[n.Name] = state
		case "CustomResourceDefinition":
			o.InstalledCRDs[u.GetName()] = true
		case "PyTorchTrainingJob", "TensorFlowTrainingJob", "PyTorchJob", "TFJob":
			o.Jobs = append(o.Jobs, JobRefOf(u.GetKind(), &u))
		case "APIService":
			if slices.Contains(KubernetesGangAPIs(), u.GetName()) {
				o.InstalledCRDs[u.GetName()] = true
			}
		case kueue.KindWorkload, kueue.KindResourceFlavor, kueue.KindWorkloadPriorityClass, "PriorityClass":
			// Kueue's objects: ReadObservedKueue reads them.
		default:
			return Observations{}, fmt.Errorf("observed document %d: kind %q is not one render reads (Pod, Node, CustomResourceDefinition, APIService, a training job, Kueue's Workload, ResourceFlavor, WorkloadPriorityClass, PriorityClass)", i+1, u.GetKind())
		}
	}
	return o, nil
}

// Observe reads a multi-document YAML of observed objects (as ReadObservations) into the input:
// its pods, deleted pods, installed CRDs and nodes, which other job holds the job's names, and
// Kueue's objects for a queued job. in.Job must be set first.
func (in *Input) Observe(data []byte) error {
	o, err := ReadObservations(data)
	if err != nil {
		return err
	}
	in.Pods, in.DeletedPods, in.InstalledCRDs, in.Nodes = o.Pods, o.DeletedPods, o.InstalledCRDs, o.Nodes
	in.NameTakenBy = NameTakenBy(in.Job.Ref(), o.Jobs)
	in.Kueue, err = ReadObservedKueue(data, &in.Job)
	return err
}

// Print writes the output as multi-document YAML: the objects in a fixed order (Kueue Workload, scheduling Workload, PodGroup,
// Service or a Kubeflow job's per-replica Services and HPA, pods by type and index, TensorBoard
// Deployment and Service), then the decisions as a
// final document made of comments, so that the whole stream can go to `kubectl apply`.
func Print(out *Output) ([]byte, error) {
	var objs []runtime.Object
	if out.KueueWorkload != nil {
		objs = append(objs, out.KueueWorkload)
	}
	if out.Workload != nil {
		objs = append(objs, out.Workload)
	}
	if out.PodGroup != nil {
		objs = append(objs, out.PodGroup)
	}
	if out.Service != nil {
		objs = append(objs, out.Service)
	}
	for _, s := range out.ReplicaServices.All() {
		objs = append(objs, s)
	}
	if out.Autoscaler != nil {
		objs = append(objs, out.Autoscaler)
	}
	for _, p := range out.Pods {
		objs = append(objs, p)
	}
	if tb := out.TensorBoard; tb != nil {
		objs = append(objs, tb.Deployment, tb.Service)
	}
	var buf bytes.Buffer
	for _, o := range objs {
		m, err := manifest(o)
		if err != nil {
			return nil, err
		}
		doc, err := yaml.Marshal(m)
		if err != nil {
			return nil, err
		}
		buf.WriteString("---\n")
		buf.Write(doc)
	}
	d, err := yaml.Marshal(out.Decisions)
	if err != nil {
		return nil, err
	}
	buf.WriteString("---\n# decisions:\n")
	for _, line := range strings.Split(strings.TrimSuffix(string(d), "\n"), "\n") {
		buf.WriteString("#   " + line + "\n")
	}
	return buf.Bytes(), nil
}

// manifest is an object as a user would write it: no status, no empty creationTimestamp.
func manifest(o runtime.Object) (map[string]any, error) {
	var m map[string]any
	if u, ok := o.(*unstructured.Unstructured); ok {
		m = u.DeepCopy().Object
	} else {
		var err error
		if m, err = runtime.DefaultUnstructuredConverter.ToUnstructured(o); err != nil {
			return nil, err
		}
	}
	delete(m, "status")
	if meta, ok := m["metadata"].(map[string]any); ok && meta["creationTimestamp"] == nil {
		delete(meta, "creationTimestamp")
	}
	if tmpl, found, _ := unstructured.NestedMap(m, "spec", "template", "metadata"); found && tmpl["creationTimestamp"] == nil {
		delete(tmpl, "creationTimestamp")
		_ = unstructured.SetNestedMap(m, tmpl, "spec", "template", "metadata")
	}
	return m, nil
}

func splitDocuments(data []byte) ([][]byte, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var docs [][]byte
	for {
		doc, err := r.Read()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return docs, nil
			}
			return nil, err
		}
		if len(bytes.TrimSpace(stripComments(doc))) > 0 {
			docs = append(docs, doc)
		}
	}
}

// observedDocuments are the documents of an --observed file, each item of a List (what `kubectl
// get pods -o yaml` prints) as a document of its own.
func observedDocuments(data []byte) ([][]byte, error) {
	docs, err := splitDocuments(data)
	if err != nil {
		return nil, err
	}
	var out [][]byte
	for i, doc := range docs {
		var list struct {
			Kind  string            `json:"kind"`
			Items []json.RawMessage `json:"items"`
		}
		if err := yaml.Unmarshal(doc, &list); err != nil || !strings.HasSuffix(list.Kind, "List") {
			out = append(out, doc)
			continue
		}
		for j, item := range list.Items {
			if len(bytes.TrimSpace(item)) == 0 {
				return nil, fmt.Errorf("observed document %d: item %d is empty", i+1, j+1)
			}
			out = append(out, item)
		}
	}
	return out, nil
}

func stripComments(doc []byte) []byte {
	var out []byte
	for _, line := range bytes.Split(doc, []byte("\n")) {
		if t := bytes.TrimSpace(line); len(t) > 0 && t[0] != '#' {
			out = append(out, line...)
			out = append(out, '\n')
		}
	}
	return out
}
