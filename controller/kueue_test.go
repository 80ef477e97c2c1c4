package controller

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// trimJobWorkload keeps of a kubeflow.org job's Workload what render reads (owners, spec.active
// and queueName, the conditions) and drops the rest (the pod templates); of another job's Workload
// (a batch Job's, which the same cache holds) it keeps only the name and owners.
func TestTrimJobWorkload(t *testing.T) {
	workload := func(owner string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		doc := `apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata:
  name: w
  namespace: ns
  uid: wuid
  resourceVersion: "7"
  creationTimestamp: "2026-01-01T00:00:00Z"
  labels: {kueue.x-k8s.io/job-uid: juid}
  ownerReferences:
  - {` + owner + `, name: j, uid: juid, controller: true}
spec:
  active: false
  queueName: q
  podSets: [{name: master, count: 1, template: {spec: {containers: [{name: c, image: i}]}}}]
status:
  conditions: [{type: QuotaReserved, status: "False", reason: Pending, message: "couldn't assign flavors", lastTransitionTime: "2026-01-01T00:00:00Z"}]
  admission: {clusterQueue: cq}
`
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatal(err)
		}
		return u
	}
	got, err := trimJobWorkload(workload("apiVersion: kubeflow.org/v1, kind: TFJob"))
	if err != nil {
		t.Fatal(err)
	}
	kf := got.(*unstructured.Unstructured)
	if active, found, _ := unstructured.NestedBool(kf.Object, "spec", "active"); !found || active {
		t.Errorf("kubeflow.org job's Workload: spec.active %v (found %v); want false", active, found)
	}
	if conds, _, _ := unstructured.NestedSlice(kf.Object, "status", "conditions"); len(conds) != 1 {
		t.Errorf("kubeflow.org job's Workload: %d conditions; want 1", len(conds))
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(kf.Object, "spec", "podSets"); found {
		t.Error("kubeflow.org job's Workload keeps its pod sets")
	}
	if kf.GetName() != "w" || kf.GetResourceVersion() != "7" || len(kf.GetOwnerReferences()) != 1 || kf.GetCreationTimestamp().Time.IsZero() {
		t.Errorf("kubeflow.org job's Workload metadata: %v", kf.Object["metadata"])
	}
	got, err = trimJobWorkload(workload("apiVersion: batch/v1, kind: Job"))
	if err != nil {
		t.Fatal(err)
	}
	other := got.(*unstructured.Unstructured)
	if _, found := other.Object["spec"]; found {
		t.Errorf("a batch Job's Workload keeps its spec: %v", other.Object)
	}
	if _, found := other.Object["status"]; found {
		t.Errorf("a batch Job's Workload keeps its status: %v", other.Object)
	}
	if other.GetName() != "w" || len(other.GetOwnerReferences()) != 1 {
		t.Errorf("a batch Job's Workload metadata: %v", other.Object["metadata"])
	}
	// The cache deep-copies what it holds: the trimmed object must be JSON values only.
	_ = kf.DeepCopy()
	_ = other.DeepCopy()
}
