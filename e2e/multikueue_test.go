//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"
	"sigs.k8s.io/yaml"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
	kubeflowv1 "github.com/trainyard/trainyard/apis/kubeflow/v1"
	"github.com/trainyard/trainyard/apis/kueue"
)

// TestMultiKueue: Kueue's MultiKueue dispatches T9k jobs from a manager cluster to the suite's
// cluster, its worker, through Kueue's generic adapter for external frameworks. The manager is a
// second loopback control plane (hack/cluster.sh, one KWOK node) with Trainyard's CRDs, a Kueue of
// its own (the same pinned build, with multiKueue.externalFrameworks) and a Trainyard operator of
// its own; the worker is the suite's cluster with the suite's Kueue and operator. Both Kueues
// listen on the suite's loopback, so it runs beside the local cluster only.
func TestMultiKueue(t *testing.T) {
	mk := &multiKueue{}
	f := features.New("MultiKueue runs jobs of a manager cluster in its worker: the T9k kinds and a kubeflow.org PyTorchJob").
		WithLabel("area", "kueue").
		Setup(mk.setUp).
		Assess("a PyTorchTrainingJob's copy runs in the worker under the prebuilt Workload, its status comes back, and the manager holds only the Workload; a TensorFlowTrainingJob's too", mk.dispatched).
		Assess("pausing the manager's job deletes its copy in the worker; resumed, it is dispatched again", mk.paused).
		Assess("a kubeflow.org PyTorchJob goes through Kueue's own MultiKueue adapter: left alone in the manager, its copy run by the worker's operator", mk.kubeflow).
		Teardown(mk.tearDown).
		Feature()
	testenv.Test(t, f)
}

// multiKueue is the manager cluster of the feature and what runs beside it.
type multiKueue struct {
	side *sideCluster
	// manager and worker are clients of the two clusters; ns is the namespace the feature uses
	// in both (MultiKueue creates a job's copy in the namespace of the same name).
	manager, worker client.Client
	ns              string
}

// managerCluster is the manager's cluster name (hack/cluster.sh's CLUSTER).
const managerCluster = "trainyard-mk"

// multiKueueCheck names the manager's MultiKueue AdmissionCheck, MultiKueueConfig and the
// worker's MultiKueueCluster (and its kubeconfig Secret).
const (
	multiKueueCheck  = "multikueue"
	multiKueueWorker = "worker-1"
)

func (mk *multiKueue) setUp(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
	mk.side = startSideCluster(ctx, t, managerCluster, 1, nil, `multiKueue:
  gcInterval: 1m
  origin: trainyard-e2e-manager
  externalFrameworks:
  - name: PyTorchTrainingJob.v1beta1.batch.tensorstack.dev
  - name: TensorFlowTrainingJob.v1beta1.batch.tensorstack.dev
`)
	// The worker's kubeconfig, as MultiKueue takes it: its CA and credentials inline.
	workerKC, err := kubectl(ctx, cfg, "", "config", "view", "--raw", "--flatten", "--minify")
	if err != nil {
		t.Fatal(err)
	}
	mk.manager, mk.worker = mk.side.client, newClient(t, cfg)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: kueueNamespace, Name: multiKueueWorker}, StringData: map[string]string{"kubeconfig": workerKC}}
	if err := mk.manager.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}

	// The worker: a namespace, its ClusterQueue of 4 GPUs over the suite's flavour, LocalQueue q.
	_, mk.ns = namespaced(ctx, t, cfg, "mk")
	createKueue(ctx, t, mk.worker, clusterQueue(mk.ns, 4, false))
	createKueue(ctx, t, mk.worker, kueueObject("LocalQueue", mk.ns, "q", map[string]any{"clusterQueue": mk.ns}))
	t.Cleanup(func() { _ = mk.worker.Delete(context.Background(), kueueObject("ClusterQueue", "", mk.ns, nil)) })

	// The manager: the worker as a MultiKueueCluster, the AdmissionCheck over it, a ClusterQueue
	// of the same 4 GPUs that requires the check, LocalQueue q in the namespace of the same name.
	if err := mk.manager.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: mk.ns}}); err != nil {
		t.Fatal(err)
	}
	cq := clusterQueue(mk.ns, 4, false)
	cq.Object["spec"].(map[string]any)["admissionChecksStrategy"] = map[string]any{"admissionChecks": []any{map[string]any{"name": multiKueueCheck}}}
	for _, o := range []*unstructured.Unstructured{
		kueueObject("ResourceFlavor", "", kueueFlavor, map[string]any{}),
		kueueObject("MultiKueueCluster", "", multiKueueWorker, map[string]any{"clusterSource": map[string]any{"kubeConfig": map[string]any{"locationType": "Secret", "location": multiKueueWorker}}}),
		kueueObject("MultiKueueConfig", "", multiKueueCheck, map[string]any{"clusters": []any{multiKueueWorker}}),
		kueueObject("AdmissionCheck", "", multiKueueCheck, map[string]any{
			"controllerName": kueue.ManagedByMultiKueue,
			"parameters":     map[string]any{"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": multiKueueCheck},
		}),
		cq,
		kueueObject("LocalQueue", mk.ns, "q", map[string]any{"clusterQueue": mk.ns}),
	} {
		createKueue(ctx, t, mk.manager, o)
	}
	eventually(t, 60*time.Second, "the manager's AdmissionCheck is active (MultiKueue reaches the worker)", func() (bool, string) {
		ac := kueueObject("AdmissionCheck", "", multiKueueCheck, nil)
		if err := mk.manager.Get(ctx, types.NamespacedName{Name: multiKueueCheck}, ac); err != nil {
			return false, err.Error()
		}
		c := workloadCondition(ac, "Active")
		return strings.HasPrefix(c, "True/"), "Active " + c
	})
	return ctx
}

// multiKueueJob is a queued PyTorchTrainingJob handed to MultiKueue: a master that runs for
// master (empty: until deleted) and exits 0, one worker that runs until deleted.
func multiKueueJob(name, master string) *batch.PyTorchTrainingJob {
	code := "0"
	if master == "" {
		code = ""
	}
	j := queued(pyTorchJob(name).Master(sim(master, code)).Workers(1, sim("", "")).Obj(), "").(*batch.PyTorchTrainingJob)
	j.Spec.ManagedBy = ptr(kueue.ManagedByMultiKueue)
	return j
}

func (mk *multiKueue) dispatched(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
	c, w, ns := mk.manager, mk.worker, mk.ns
	// A job no queue admits (its LocalQueue does not exist) keeps Trainyard's status, written
	// whole (apply.ReplaceStatus): Pending, Queued, from its first write, which once left the
	// schema's required counts out and was refused.
	lost := multiKueueJob("mk-lost", "5s")
	lost.Labels[kueue.LabelQueueName] = "no-such-queue"
	created := time.Now()
	create(ctx, t, c, ns, lost)
	held := waitPhase(ctx, t, c, ns, "mk-lost", batch.JobPending)
	if cond := meta.FindStatusCondition(held.Conditions, batch.ConditionWaiting); cond == nil || cond.Reason != batch.ReasonQueued {
		t.Errorf("the job of a LocalQueue that does not exist: Waiting %+v; want reason Queued", cond)
	}
	t.Logf("the job of a LocalQueue that does not exist: Pending, Queued, %.1f s after its creation", time.Since(created).Seconds())
	if err := c.Delete(ctx, lost); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	create(ctx, t, c, ns, multiKueueJob("mk", "5s"))
	waitWorkload(ctx, t, c, ns, "mk", "admitted in the manager (MultiKueue's check Ready)", admitted)
	t.Logf("the manager's Workload admitted %.1f s after the job's creation", time.Since(start).Seconds())

	// The worker's copy: created by MultiKueue with the prebuilt Workload's name, no managedBy.
	var copy batch.PyTorchTrainingJob
	eventually(t, 60*time.Second, "MultiKueue creates the job's copy in the worker", func() (bool, string) {
		err := w.Get(ctx, types.NamespacedName{Namespace: ns, Name: "mk"}, &copy)
		return err == nil, fmt.Sprint(err)
	})
	// Kueue v0.19 names it in an annotation (its WorkloadIdentifierAnnotations gate, on by
	// default); earlier releases in the label.
	prebuilt := copy.Annotations[kueue.AnnotationPrebuiltWorkload]
	if prebuilt == "" {
		prebuilt = copy.Labels[kueue.LabelPrebuiltWorkload]
	}
	if prebuilt == "" || copy.Labels[kueue.LabelMultiKueueOrigin] != "trainyard-e2e-manager" || copy.Spec.ManagedBy != nil {
		t.Fatalf("the worker's copy: labels %v, annotations %v, managedBy %v; want the prebuilt Workload's name, the origin and no managedBy", copy.Labels, copy.Annotations, copy.Spec.ManagedBy)
	}
	ww := waitWorkload(ctx, t, w, ns, "mk", "the prebuilt Workload, adopted by the copy and admitted in the worker", admitted)
	if ww.GetName() != prebuilt || metav1.GetControllerOf(ww).UID != copy.UID {
		t.Fatalf("the worker's Workload %s (controller %v); want %s controlled by the copy %s", ww.GetName(), metav1.GetControllerOf(ww), prebuilt, copy.UID)
	}
	waitPhase(ctx, t, w, ns, "mk", batch.JobRunning)
	if n := len(kfPodsOf(ctx, t, w, ns, "mk")); n != 2 {
		t.Errorf("the copy has %d pods in the worker; want 2", n)
	}
	st := waitPhase(ctx, t, c, ns, "mk", batch.JobRunning)
	t.Logf("the manager's job Running (MultiKueue's copy of the worker's status) %.1f s after its creation; %d tasks", time.Since(start).Seconds(), len(st.Tasks))
	// trainyard describe in the manager shows MultiKueue's check in Kueue's words.
	out := trainyardCLIAt(t, mk.side.cfg.KubeconfigFile(), "describe", "ptj/mk", "-n", ns)
	if !regexp.MustCompile(`check `+multiKueueCheck+` +Ready .*admitted on "`+multiKueueWorker+`"`).MatchString(out) ||
		!strings.Contains(out, "the pods run in a worker cluster") {
		t.Errorf("trainyard describe in the manager does not show MultiKueue's check Ready on %s, and that the pods run there:\n%s", multiKueueWorker, out)
	}
	t.Logf("trainyard describe in the manager:\n%s", out)

	// A TensorFlowTrainingJob goes the same way.
	tf := queued(tensorFlowJob("tf").Replica("chief", 1, sim("3s", "0")).Replica("worker", 1, sim("", "")).Obj(), "").(*batch.TensorFlowTrainingJob)
	tf.Spec.ManagedBy = ptr(kueue.ManagedByMultiKueue)
	create(ctx, t, c, ns, tf)

	st = waitPhase(ctx, t, c, ns, "mk", batch.JobSucceeded)
	t.Logf("the manager's job Succeeded %.1f s after its creation: %s", time.Since(start).Seconds(), conditionText(st, batch.ConditionCompleted))
	st = waitPhase(ctx, t, c, ns, "tf", batch.JobSucceeded)
	t.Logf("the manager's TensorFlowTrainingJob Succeeded: %s", conditionText(st, batch.ConditionCompleted))
	for _, j := range []string{"mk", "tf"} {
		waitWorkload(ctx, t, c, ns, j, "Finished in the manager", func(w *unstructured.Unstructured) bool {
			return strings.HasPrefix(workloadCondition(w, "Finished"), "True/")
		})
		mk.managerHoldsOnlyTheWorkload(ctx, t, j)
	}
	return ctx
}

// managerHoldsOnlyTheWorkload checks that the manager's job owns nothing but its Workload there.
func (mk *multiKueue) managerHoldsOnlyTheWorkload(ctx context.Context, t *testing.T, job string) {
	t.Helper()
	if pods := kfPodsOf(ctx, t, mk.manager, mk.ns, job); len(pods) > 0 {
		t.Errorf("the manager's job has %d pods in the manager; want none", len(pods))
	}
	var svcs corev1.ServiceList
	if err := mk.manager.List(ctx, &svcs, client.InNamespace(mk.ns)); err != nil {
		t.Fatal(err)
	}
	for _, s := range svcs.Items {
		if ref := metav1.GetControllerOf(&s); ref != nil && ref.Name == job {
			t.Errorf("the manager's job has Service %s in the manager; want none", s.Name)
		}
	}
}

func (mk *multiKueue) paused(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
	c, w, ns := mk.manager, mk.worker, mk.ns
	create(ctx, t, c, ns, multiKueueJob("mp", ""))
	running := waitPhase(ctx, t, c, ns, "mp", batch.JobRunning)
	workerPods := map[types.UID]string{}
	for _, task := range running.Tasks {
		for _, r := range task.ReplicaStatus {
			if r.UID != "" {
				workerPods[r.UID] = r.Name
			}
		}
	}
	if len(workerPods) == 0 {
		t.Fatalf("the manager's Running job lists no pod of the worker's copy: %+v", running.Tasks)
	}
	var first batch.PyTorchTrainingJob
	if err := w.Get(ctx, types.NamespacedName{Namespace: ns, Name: "mp"}, &first); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	patchJob(ctx, t, c, ns, "mp", `{"spec":{"runMode":{"pause":{"enabled":true}}}}`)
	st := waitPhase(ctx, t, c, ns, "mp", batch.JobPaused)
	t.Logf("the manager's job Paused %.1f s after the pause", time.Since(start).Seconds())
	eventually(t, 60*time.Second, "the job's copy and its pods are gone from the worker", func() (bool, string) {
		var j batch.PyTorchTrainingJob
		err := w.Get(ctx, types.NamespacedName{Namespace: ns, Name: "mp"}, &j)
		pods := kfPodsOf(ctx, t, w, ns, "mp")
		return apierrors.IsNotFound(err) && len(pods) == 0, fmt.Sprintf("copy: %v, %d pods", err, len(pods))
	})
	t.Logf("the copy and its pods gone from the worker %.1f s after the pause", time.Since(start).Seconds())
	// The paused status is Trainyard's whole: nothing of the worker's copied status is left.
	st = waitPhase(ctx, t, c, ns, "mp", batch.JobPaused)
	for _, task := range st.Tasks {
		for _, r := range task.ReplicaStatus {
			if name, ok := workerPods[r.UID]; ok && r.UID != "" {
				t.Errorf("the paused job's status still lists pod %s of the worker's copy", name)
			}
		}
	}
	if c := condition(st, batch.ConditionRunning); strings.HasPrefix(c, "True") {
		t.Errorf("the paused job's Running condition is %s; the worker's was not to stay", c)
	}

	patchJob(ctx, t, c, ns, "mp", `{"spec":{"runMode":{"pause":{"enabled":false}}}}`)
	var again batch.PyTorchTrainingJob
	eventually(t, 60*time.Second, "resumed, the job is dispatched again: a new copy in the worker", func() (bool, string) {
		err := w.Get(ctx, types.NamespacedName{Namespace: ns, Name: "mp"}, &again)
		return err == nil && again.UID != first.UID, fmt.Sprint(err)
	})
	waitPhase(ctx, t, w, ns, "mp", batch.JobRunning)
	waitPhase(ctx, t, c, ns, "mp", batch.JobRunning)
	t.Logf("resumed and Running again in the manager %.1f s after the pause", time.Since(start).Seconds())
	mk.managerHoldsOnlyTheWorkload(ctx, t, "mp")
	return ctx
}

func (mk *multiKueue) kubeflow(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
	c, w, ns := mk.manager, mk.worker, mk.ns
	var j kubeflowv1.PyTorchJob
	if err := yaml.Unmarshal([]byte(kfQueuedPyTorchJob("kf", fmt.Sprintf(simExits0After, "4s"), "")), &j); err != nil {
		t.Fatal(err)
	}
	j.Spec.RunPolicy = &kubeflowv1.RunPolicy{ManagedBy: ptr(kueue.ManagedByMultiKueue)}
	start := time.Now()
	create(ctx, t, c, ns, &j)
	var copy kubeflowv1.PyTorchJob
	eventually(t, 60*time.Second, "MultiKueue creates the PyTorchJob's copy in the worker", func() (bool, string) {
		err := w.Get(ctx, types.NamespacedName{Namespace: ns, Name: "kf"}, &copy)
		return err == nil, fmt.Sprint(err)
	})
	if p := copy.Spec.RunPolicy; p != nil && p.ManagedBy != nil {
		t.Errorf("the worker's copy has runPolicy.managedBy %q; want none, so the worker's operator runs it", *p.ManagedBy)
	}
	waitKubeflow(ctx, t, w, ns, "kf", kubeflowv1.JobRunning)
	st := waitKubeflow(ctx, t, c, ns, "kf", kubeflowv1.JobSucceeded)
	t.Logf("the manager's PyTorchJob Succeeded %.1f s after its creation (%d replica types in its copied status)", time.Since(start).Seconds(), len(st.ReplicaStatuses))
	mk.managerHoldsOnlyTheWorkload(ctx, t, "kf")
	return ctx
}

func (mk *multiKueue) tearDown(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
	if mk.worker != nil && mk.ns != "" {
		// MultiKueue's copies go with the namespace (the suite's clean-up deletes it); the manager
		// cluster is stopped when the feature ends (startSideCluster).
		_ = mk.worker.DeleteAllOf(ctx, &batch.PyTorchTrainingJob{}, client.InNamespace(mk.ns))
		_ = mk.worker.DeleteAllOf(ctx, &kubeflowv1.PyTorchJob{}, client.InNamespace(mk.ns))
	}
	return ctx
}
