package controller

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/yaml"

	"github.com/trainyard/trainyard/apis/kueue"
	"github.com/trainyard/trainyard/render"
)

// trimJobWorkload keeps of a kubeflow.org job's Workload what render reads (owners, spec.active,
// queueName and maximumExecutionTimeSeconds, the conditions) and drops the rest (the pod templates); of another job's Workload
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
  maximumExecutionTimeSeconds: 600
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
	if v, _, _ := unstructured.NestedFieldNoCopy(kf.Object, "spec", "maximumExecutionTimeSeconds"); fmt.Sprint(v) != "600" {
		t.Errorf("kubeflow.org job's Workload: spec.maximumExecutionTimeSeconds %v; want 600 (its inactive message names it)", v)
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

// notServingManager is a manager whose RESTMapper does not know Kueue's kinds, as the operator's
// is between the creation of Kueue's CRDs and their being served.
type notServingManager struct {
	ctrl.Manager
	mapper meta.RESTMapper
}

func (m notServingManager) GetRESTMapper() meta.RESTMapper { return m.mapper }
func (m notServingManager) GetScheme() *runtime.Scheme     { return Scheme() }
func (m notServingManager) GetConfig() *rest.Config        { return &rest.Config{Host: "http://127.0.0.1:1"} }
func (m notServingManager) Add(manager.Runnable) error     { return nil }

func notServedKueue(kubeflow bool, watched *int) *kueueSync {
	mgr := notServingManager{mapper: meta.NewDefaultRESTMapper(nil)}
	return &kueueSync{
		caches: &kueueCache{mgr: mgr}, kind: pyTorchKind, kubeflow: kubeflow, patched: map[types.UID]string{},
		watch: func(cache.Cache) error { *watched++; return nil },
	}
}

// Kueue's CRDs installed while the operator ran: the CRD's creation woke the queued jobs before
// the API server served the kind, and making the cache of Workloads failed with "no matches for
// kind Workload", a reconciler error at each backoff retry (8 in 1 s for a PyTorchJob, 9 for a
// PyTorchTrainingJob on the local cluster). A kind not served yet is taken as not installed.
func TestAKueueKindNotServedYetIsNotAnError(t *testing.T) {
	installed := map[string]bool{kueue.WorkloadCRD: true}
	for name, tc := range map[string]struct {
		kubeflow bool
		model    render.Job
	}{
		"T9k":          {model: render.Job{Queue: &render.Queue{Name: "lq"}}},
		"kubeflow.org": {kubeflow: true, model: render.Job{Kubeflow: &render.Kubeflow{KueueQueue: "lq"}}},
	} {
		t.Run(name, func(t *testing.T) {
			watched := 0
			k := notServedKueue(tc.kubeflow, &watched)
			obs, _, err := k.observe(context.Background(), testJob(1, ""), &tc.model, installed)
			if !errors.Is(err, errKueueNotServed) || obs != nil || watched != 0 {
				t.Fatalf("observe: %v, %v, %d watches; want errKueueNotServed, nothing observed, no watch", err, obs, watched)
			}
		})
	}

	// The reconciler: no error, the job waits as without Kueue, and is looked at again shortly.
	job := testJob(1, "")
	job.Labels = map[string]string{kueue.LabelQueueName: "lq"}
	now := time.Now()
	cl := newCluster(t, job)
	r := newTestReconciler(cl, &now)
	r.crds.update(kueue.WorkloadCRD, true)
	watched := 0
	r.kueue = notServedKueue(false, &watched)
	res := reconcileOnce(t, r)
	if res.RequeueAfter <= 0 || res.RequeueAfter > kueueNotServedRecheck {
		t.Errorf("requeued after %v, want at most %v", res.RequeueAfter, kueueNotServedRecheck)
	}
	got, pods := cl.get()
	if c := meta.FindStatusCondition(got.Status.Conditions, "Waiting"); c == nil || c.Reason != render.ReasonKueueNotInstalled {
		t.Errorf("Waiting condition %+v, want reason %s", c, render.ReasonKueueNotInstalled)
	}
	if len(pods.Items) != 0 {
		t.Errorf("%d pods created for a job Kueue has not admitted", len(pods.Items))
	}
	if !r.crds.installed()[kueue.WorkloadCRD] {
		t.Error("the shared set of installed CRDs lost Kueue's")
	}
}
