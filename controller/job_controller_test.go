package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	dto "github.com/prometheus/client_model/go"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/event"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
	kubeflowv1 "github.com/trainyard/trainyard/apis/kubeflow/v1"
	"github.com/trainyard/trainyard/apply"
	"github.com/trainyard/trainyard/render"
)

// cluster is a fake API server whose "cache" can be frozen: while stale, reads of the job and
// lists of pods return the snapshot taken when it froze, as a lagging informer would.
type cluster struct {
	t      *testing.T
	client client.Client    // what the reconciler uses: reads may be stale
	server client.WithWatch // the truth

	mu      sync.Mutex
	stale   bool
	job     *batch.PyTorchTrainingJob
	pods    []corev1.Pod
	writes  []string // "verb resource name", in order
	deletes map[string]int
	// cleanUps: the deletions sent as clean-up (apply.WithCleanUp), by name.
	cleanUps map[string]bool
	// onCreate, when set, runs after each create request (the test's hand in the cluster).
	onCreate func()
	// forced: the deletions sent with a zero grace period, by name.
	forced map[string]int
	// onStatusApply, when set, runs during each status write (a slow write moves the clock).
	onStatusApply func()
}

func newCluster(t *testing.T, job *batch.PyTorchTrainingJob) *cluster {
	c := &cluster{t: t, deletes: map[string]int{}, cleanUps: map[string]bool{}, forced: map[string]int{}}
	c.server = fake.NewClientBuilder().WithScheme(Scheme()).WithObjects(job).WithStatusSubresource(job).
		WithIndex(&corev1.Pod{}, controllerIndex, controllerUID).Build()
	c.client = interceptor.NewClient(c.server, interceptor.Funcs{
		Get: func(ctx context.Context, cl client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			c.mu.Lock()
			defer c.mu.Unlock()
			if j, ok := obj.(*batch.PyTorchTrainingJob); ok && c.stale {
				c.job.DeepCopyInto(j)
				return nil
			}
			return cl.Get(ctx, key, obj, opts...)
		},
		List: func(ctx context.Context, cl client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			c.mu.Lock()
			defer c.mu.Unlock()
			if l, ok := list.(*corev1.PodList); ok && c.stale {
				l.Items = append([]corev1.Pod(nil), c.pods...)
				return nil
			}
			return cl.List(ctx, list, opts...)
		},
		Create: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			c.record("create pods " + obj.GetName())
			err := cl.Create(ctx, obj, opts...)
			if c.onCreate != nil {
				c.onCreate()
			}
			return err
		},
		Delete: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			c.record("delete pods " + obj.GetName())
			c.mu.Lock()
			c.deletes[obj.GetName()]++
			c.cleanUps[obj.GetName()] = apply.IsCleanUp(ctx)
			do := (&client.DeleteOptions{}).ApplyOptions(opts)
			forced := do.GracePeriodSeconds != nil && *do.GracePeriodSeconds == 0
			if forced {
				c.forced[obj.GetName()]++
			}
			c.mu.Unlock()
			if p, ok := obj.(*corev1.Pod); ok && forced {
				// A zero grace period removes a pod at once (its node's kubelet is not asked):
				// the finalizer a test gives a pod to keep it terminating goes with it.
				var live corev1.Pod
				if err := cl.Get(ctx, client.ObjectKeyFromObject(p), &live); err == nil && len(live.Finalizers) > 0 {
					live.Finalizers = nil
					if err := cl.Update(ctx, &live); err != nil {
						return err
					}
					return nil
				}
			}
			return cl.Delete(ctx, obj, opts...)
		},
		Apply: func(ctx context.Context, cl client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			c.record("apply " + name(obj))
			return cl.Apply(ctx, obj, opts...)
		},
		// The fake cannot apply a CRD's status; store it as an update does.
		SubResourceApply: func(ctx context.Context, cl client.Client, sub string, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
			c.record("apply status " + name(obj))
			if c.onStatusApply != nil {
				c.onStatusApply()
			}
			data, err := json.Marshal(obj)
			if err != nil {
				return err
			}
			var body struct {
				Status batch.TrainingJobStatus `json:"status"`
			}
			if err := json.Unmarshal(data, &body); err != nil {
				return err
			}
			var j batch.PyTorchTrainingJob
			if err := cl.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "j"}, &j); err != nil {
				return err
			}
			j.Status = body.Status
			return cl.Status().Update(ctx, &j)
		},
	})
	return c
}

func name(obj runtime.ApplyConfiguration) string {
	data, _ := json.Marshal(obj)
	var m struct {
		Kind     string `json:"kind"`
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	_ = json.Unmarshal(data, &m)
	return m.Kind + " " + m.Metadata.Name
}

func (c *cluster) record(w string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writes = append(c.writes, w)
}

// freeze makes reads return what the server holds now, until thaw.
func (c *cluster) freeze() {
	c.t.Helper()
	job, pods := c.get()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stale, c.job, c.pods = true, job, pods.Items
}

func (c *cluster) thaw() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stale = false
}

func (c *cluster) get() (*batch.PyTorchTrainingJob, *corev1.PodList) {
	c.t.Helper()
	var j batch.PyTorchTrainingJob
	var pods corev1.PodList
	if err := c.server.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "j"}, &j); err != nil {
		c.t.Fatal(err)
	}
	if err := c.server.List(context.Background(), &pods, client.InNamespace("ns")); err != nil {
		c.t.Fatal(err)
	}
	return &j, &pods
}

// takeWrites returns the writes made since the last call.
func (c *cluster) takeWrites() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	w := c.writes
	c.writes = nil
	return w
}

// setPod changes a pod's status on the server, as the kubelet does.
func (c *cluster) setPod(name string, phase corev1.PodPhase, exit *int32) {
	c.t.Helper()
	var p corev1.Pod
	if err := c.server.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: name}, &p); err != nil {
		c.t.Fatal(err)
	}
	p.Status.Phase = phase
	if exit != nil {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "pytorch", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: *exit}}}}
	}
	if err := c.server.Status().Update(context.Background(), &p); err != nil {
		c.t.Fatal(err)
	}
}

func testJob(workers int32, policy batch.RestartPolicy) *batch.PyTorchTrainingJob {
	tmpl := corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "pytorch", Image: "train"}}}}
	return &batch.PyTorchTrainingJob{
		ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "ns", UID: "job-uid", Generation: 1},
		Spec: batch.PyTorchTrainingJobSpec{ReplicaSpecs: []batch.PyTorchReplicaSpec{
			{Type: "master", ReplicaTemplate: batch.ReplicaTemplate{Replicas: ptr(int32(1)), Template: tmpl}},
			{Type: "worker", ReplicaTemplate: batch.ReplicaTemplate{Replicas: ptr(workers), Template: *tmpl.DeepCopy(), RestartPolicy: policy}},
		}},
	}
}

// newTestReconciler reconciles through the cluster's (possibly stale) client; its reader, like
// the manager's API reader, sees the truth.
func newTestReconciler(cl *cluster, now *time.Time) *jobReconciler {
	c := cl.client
	s := newShared(c)
	return &jobReconciler{
		client: c, reader: cl.server, kind: pyTorchKind, applier: s.applier, exp: s.exp, recorder: events.NewFakeRecorder(100),
		metrics: s.metrics, crds: s.crds, deletions: s.deletions, createParallelism: 8, statusInterval: time.Second,
		pods: clientPods{cl.client},
		now:  func() time.Time { return *now },
		jobs: map[types.UID]*jobMemory{}, names: map[types.NamespacedName]types.UID{},
	}
}

func reconcileOnce(t *testing.T, r *jobReconciler) ctrl.Result {
	t.Helper()
	res, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "j"}})
	if err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	return res
}

func TestStaleCacheDoesNotDuplicatePods(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := newCluster(t, testJob(3, batch.RestartPolicyNever))
	r := newTestReconciler(c, &now)
	c.freeze() // the cache will not see the pods this reconcile creates
	reconcileOnce(t, r)
	if _, pods := c.get(); len(pods.Items) != 4 {
		t.Fatalf("%d pods after the first reconcile; want 4", len(pods.Items))
	}
	c.takeWrites()
	now = now.Add(2 * time.Second)
	reconcileOnce(t, r) // the cache still shows no pod and the old status
	for _, w := range c.takeWrites() {
		if w[:6] == "create" {
			t.Errorf("the second reconcile, on a stale cache, wrote %q", w)
		}
	}
	if _, pods := c.get(); len(pods.Items) != 4 {
		t.Fatalf("%d pods after a reconcile on a stale cache; want 4", len(pods.Items))
	}
}

func TestStaleCacheDoesNotCountARestartTwice(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := newCluster(t, testJob(1, batch.RestartPolicyExitCode))
	r := newTestReconciler(c, &now)
	reconcileOnce(t, r)
	c.setPod("j-master-0", corev1.PodRunning, nil)
	code := int32(137)
	c.setPod("j-worker-0", corev1.PodFailed, &code)
	now = now.Add(time.Second)
	c.freeze() // the cache will show neither the deletion nor the new backoffCount
	reconcileOnce(t, r)
	job, _ := c.get()
	if job.Status.BackoffCount != 1 {
		t.Fatalf("backoffCount = %d after the restart; want 1", job.Status.BackoffCount)
	}
	for range 3 {
		now = now.Add(time.Second)
		reconcileOnce(t, r)
	}
	job, pods := c.get()
	if job.Status.BackoffCount != 1 || c.deletes["j-worker-0"] != 1 {
		t.Fatalf("after 3 reconciles on a stale cache: backoffCount %d, j-worker-0 deleted %d times; want 1 and 1",
			job.Status.BackoffCount, c.deletes["j-worker-0"])
	}
	// Once the cache catches up, the replica is created again, once.
	c.thaw()
	now = now.Add(time.Second)
	reconcileOnce(t, r)
	reconcileOnce(t, r)
	job, pods = c.get()
	var names []string
	for _, p := range pods.Items {
		names = append(names, p.Name)
	}
	if len(pods.Items) != 2 || job.Status.BackoffCount != 1 {
		t.Fatalf("pods %v, backoffCount %d; want j-master-0 and a new j-worker-0, backoffCount 1", names, job.Status.BackoffCount)
	}
}

func TestADeletedJobSeenInAStaleCacheGetsNothingBack(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := newCluster(t, testJob(2, batch.RestartPolicyNever))
	r := newTestReconciler(c, &now)
	reconcileOnce(t, r)
	now = now.Add(2 * time.Second)
	reconcileOnce(t, r) // the status (startTime) is written
	c.freeze()          // the cache will not see the deletion
	job, pods := c.get()
	for i := range pods.Items {
		if err := c.server.Delete(context.Background(), &pods.Items[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.server.Delete(context.Background(), job); err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	c.pods = nil // the garbage collector's pod deletions are seen, the job's deletion is not
	c.mu.Unlock()
	c.takeWrites()
	now = now.Add(time.Second)
	reconcileOnce(t, r)
	if w := c.takeWrites(); len(w) != 0 {
		t.Errorf("a reconcile of a deleted job (stale cache) wrote %v; want nothing", w)
	}
}

func TestAJobDeletedWhileItsPodsAreCreatedGetsNoMore(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := newCluster(t, testJob(99, batch.RestartPolicyNever))
	r := newTestReconciler(c, &now) // the canary, then 8 at a time in flight
	var creates, whenGone atomic.Int32
	c.onCreate = func() {
		if creates.Add(1) == 5 {
			job, _ := c.get()
			if err := c.server.Delete(context.Background(), job); err != nil {
				t.Error(err)
			}
			whenGone.Store(creates.Load())
		}
	}
	reconcileOnce(t, r)
	// Creations were in flight when the job went; the next question stops them, and no status
	// is written for a job that is gone.
	var got []string
	for _, w := range c.takeWrites() {
		if !strings.HasPrefix(w, "apply ") || !strings.Contains(w, "Service") {
			got = append(got, w)
		}
	}
	// Once the job is gone, at most the 8 in flight and the 8 let out before the next question.
	if n, gone := creates.Load(), whenGone.Load(); gone == 0 || n > gone+16 {
		t.Errorf("%d pods created of 100, %d when the job was gone; want at most 16 more: %v", n, gone, got)
	}
	for _, w := range got {
		if strings.HasPrefix(w, "apply status") {
			t.Errorf("wrote %q for a job deleted meanwhile", w)
		}
	}
}

// The job's deletion, seen as an event, stops its creations under way at once, though the cache
// (frozen here) still shows the job to the question asked between windows.
func TestAJobsDeletionEventStopsItsCreations(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := newCluster(t, testJob(99, batch.RestartPolicyNever))
	r := newTestReconciler(c, &now) // the canary, then 8 at a time in flight
	c.freeze()
	var creates, whenGone atomic.Int32
	c.onCreate = func() {
		if creates.Add(1) == 5 {
			job, _ := c.get()
			if err := c.server.Delete(context.Background(), job); err != nil {
				t.Error(err)
			}
			r.jobDeleted(job, true) // as the job's Delete event does
			whenGone.Store(creates.Load())
		}
	}
	reconcileOnce(t, r)
	r.releasing.Wait() // the deleted job's pods, deleted in the background
	// Once the job is gone, at most the 8 in flight.
	if n, gone := creates.Load(), whenGone.Load(); gone == 0 || n > gone+8 {
		t.Errorf("%d pods created of 100, %d when the job was gone; want at most 8 more", n, gone)
	}
	for _, w := range c.takeWrites() {
		if strings.HasPrefix(w, "apply status") {
			t.Errorf("wrote %q for a job deleted meanwhile", w)
		}
	}
}

// A job deleted with its dependents has its pods deleted by the operator, each at the version
// the cache showed: a pod changed since (here, orphaned as kubectl delete --cascade=orphan does,
// its ownerReference removed) is left alone.
func TestADeletedJobsPodsAreDeletedUnlessChanged(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := newCluster(t, testJob(3, batch.RestartPolicyNever))
	r := newTestReconciler(c, &now)
	reconcileOnce(t, r)
	c.freeze() // the cache shows the four pods as created
	var orphan corev1.Pod
	if err := c.server.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "j-worker-1"}, &orphan); err != nil {
		t.Fatal(err)
	}
	orphan.OwnerReferences = nil
	if err := c.server.Update(context.Background(), &orphan); err != nil {
		t.Fatal(err)
	}
	job, _ := c.get()
	if err := c.server.Delete(context.Background(), job); err != nil {
		t.Fatal(err)
	}
	c.takeWrites()
	r.jobDeleted(job, true)
	r.jobDeleted(job, true) // a second event sends nothing more
	r.releasing.Wait()
	c.thaw()
	var pods corev1.PodList
	if err := c.server.List(context.Background(), &pods); err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, p := range pods.Items {
		left = append(left, p.Name)
	}
	if diff := cmp.Diff([]string{"j-worker-1"}, left); diff != "" {
		t.Errorf("pods left after the job's deletion (-want +got):\n%s", diff)
	}
	c.mu.Lock()
	deletes, cleanUp := c.deletes, c.cleanUps
	c.mu.Unlock()
	for _, n := range []string{"j-master-0", "j-worker-0", "j-worker-1", "j-worker-2"} {
		if deletes[n] != 1 || !cleanUp[n] {
			t.Errorf("pod %s: %d deletions, clean-up %t; want 1, as clean-up", n, deletes[n], cleanUp[n])
		}
	}
	var m dto.Metric
	if err := r.metrics.podsDeleted.WithLabelValues("PyTorchTrainingJob", reasonJobDeleted).Write(&m); err != nil {
		t.Fatal(err)
	}
	if got := m.GetCounter().GetValue(); got != 3 {
		t.Errorf("pods counted deleted with the job: %v; want 3", got)
	}
}

// volcanoGangJob is a one-worker job gang-scheduled by Volcano, reconciled once, with its PodGroup
// (an empty object of that kind, named like the job).
func volcanoGangJob(t *testing.T) (*cluster, *jobReconciler, *unstructured.Unstructured) {
	t.Helper()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	job := testJob(1, batch.RestartPolicyNever)
	job.Spec.Scheduler = &batch.SchedulePolicy{Volcano: &batch.VolcanoScheduler{}}
	c := newCluster(t, job)
	r := newTestReconciler(c, &now)
	r.crds.update("podgroups.scheduling.volcano.sh", true)
	reconcileOnce(t, r)
	pg := &unstructured.Unstructured{}
	pg.SetGroupVersionKind(schema.GroupVersionKind{Group: "scheduling.volcano.sh", Version: "v1beta1", Kind: "PodGroup"})
	pg.SetNamespace("ns")
	pg.SetName("j")
	return c, r, pg
}

// A deleted gang job's PodGroup goes with its pods, by the operator: queued behind them for the
// garbage collector, it could hold its queue's capacity for minutes.
func TestADeletedJobsPodGroupIsDeleted(t *testing.T) {
	c, r, pg := volcanoGangJob(t)
	key := client.ObjectKey{Namespace: "ns", Name: "j"}
	if err := c.server.Get(context.Background(), key, pg); err != nil {
		t.Fatalf("the job's PodGroup: %v", err)
	}
	live, _ := c.get()
	if err := c.server.Delete(context.Background(), live); err != nil {
		t.Fatal(err)
	}
	r.jobDeleted(live, true)
	r.releasing.Wait()
	if err := c.server.Get(context.Background(), key, pg); !apierrors.IsNotFound(err) {
		t.Errorf("the deleted job's PodGroup: %v; want it deleted", err)
	}
	var pods corev1.PodList
	if err := c.server.List(context.Background(), &pods); err != nil || len(pods.Items) != 0 {
		t.Errorf("the deleted job's pods: %d left (%v); want none", len(pods.Items), err)
	}
}

// A deleted queued job's Workloads (a sliced job's slice too) go with its pods, by the operator:
// Kueue releases their quota only once they are gone, and the garbage collector took 40 s on a
// cluster whose Workload CRD it had not watched yet. Another job's Workload stays.
func TestADeletedJobsWorkloadsAreDeleted(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := newCluster(t, testJob(1, batch.RestartPolicyNever))
	r := newTestReconciler(c, &now)
	reconcileOnce(t, r)
	live, _ := c.get()
	workload := func(name string, controller types.UID) *unstructured.Unstructured {
		w := newWorkload()
		w.SetNamespace("ns")
		w.SetName(name)
		w.SetUID(types.UID("uid-" + name))
		w.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "batch.tensorstack.dev/v1beta1", Kind: "PyTorchTrainingJob", Name: "j", UID: controller, Controller: ptr(true)}})
		return w
	}
	ws := []*unstructured.Unstructured{workload("w-first", live.UID), workload("w-slice", live.UID), workload("w-other", "another-job")}
	cached := fake.NewClientBuilder().WithScheme(Scheme()).WithIndex(newWorkload(), workloadControllerIndex, controllerUID).Build()
	for _, w := range ws {
		for _, cl := range []client.Client{c.server, cached} {
			if err := cl.Create(context.Background(), w.DeepCopy()); err != nil {
				t.Fatal(err)
			}
		}
	}
	r.kueue = &kueueSync{cache: readerCache{Reader: cached}}
	// Kueue writes a Workload as the job's pods go: the cache's version is behind.
	moved := newWorkload()
	if err := c.server.Get(context.Background(), client.ObjectKeyFromObject(ws[0]), moved); err != nil {
		t.Fatal(err)
	}
	moved.SetLabels(map[string]string{"written": "by-kueue"})
	if err := c.server.Update(context.Background(), moved); err != nil {
		t.Fatal(err)
	}
	if err := c.server.Delete(context.Background(), live); err != nil {
		t.Fatal(err)
	}
	r.jobDeleted(live, true)
	r.releasing.Wait()
	for _, w := range ws {
		err := c.server.Get(context.Background(), client.ObjectKeyFromObject(w), newWorkload())
		if gone := apierrors.IsNotFound(err); gone != (w.GetName() != "w-other") {
			t.Errorf("Workload %s after the job's deletion: %v", w.GetName(), err)
		}
	}
	// So are those Kueue's own integration made for a kubeflow.org job; none of a job whose
	// Workloads are not watched (no Kueue).
	if dels := (&kueueSync{cache: readerCache{Reader: cached}, kubeflow: true}).workloadDeletions(live); len(dels) != 2 {
		t.Errorf("%d deletions of a kubeflow.org job's Workloads; want 2", len(dels))
	}
	if dels := (&kueueSync{}).workloadDeletions(live); len(dels) != 0 {
		t.Errorf("%d deletions without Kueue's cache; want none", len(dels))
	}
}

// readerCache is a cache.Cache that reads from a client.Reader (a fake client with the cache's
// indexes); nothing else of it may be used.
type readerCache struct {
	cache.Cache
	client.Reader
}

func (c readerCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	return c.Reader.Get(ctx, key, obj, opts...)
}

func (c readerCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return c.Reader.List(ctx, list, opts...)
}

// A PodGroup deleted by hand is made again before the job's next pods: gang objects are not
// watched, and the applier's memory of having applied it must not keep the new pods without
// their gang (they would wait for it forever).
func TestAPodGroupDeletedByHandIsMadeAgainForNewPods(t *testing.T) {
	c, r, pg := volcanoGangJob(t)
	if err := c.server.Delete(context.Background(), pg); err != nil {
		t.Fatalf("deleting the job's PodGroup: %v", err)
	}
	// A pod is deleted too (by hand, say): the next round creates it again.
	if err := c.server.Delete(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "j-worker-0"}}); err != nil {
		t.Fatal(err)
	}
	r.exp.Forget("job-uid")
	reconcileOnce(t, r)
	if err := c.server.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "j"}, pg); err != nil {
		t.Errorf("the PodGroup deleted by hand, after a round that created a pod: %v; want it made again", err)
	}
}

// A pod name another job's pod holds (job a's type b-worker and job a-b's worker both make
// a-b-worker-0; here a TFJob's): the job does not count that pod as its own, and says which job
// holds the name, rather than wait with no reason.
func TestAPodNameAnotherJobHoldsIsSaid(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := newCluster(t, testJob(1, batch.RestartPolicyNever))
	r := newTestReconciler(c, &now)
	foreign := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "j-worker-0", UID: "foreign-pod",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "kubeflow.org/v1", Kind: "TFJob", Name: "j", UID: "tfjob-uid", Controller: ptr(true)}}}}
	if err := c.server.Create(context.Background(), foreign); err != nil {
		t.Fatal(err)
	}
	req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "j"}}
	for range 2 {
		_, _ = r.Reconcile(context.Background(), req) // the first fails on the name; the second says so
		now = now.Add(3 * time.Second)                // past the status interval
	}
	job, _ := c.get()
	w := meta.FindStatusCondition(job.Status.Conditions, batch.ConditionWaiting)
	if w == nil || w.Reason != render.ReasonNameConflict || !strings.Contains(w.Message, "pod j-worker-0 exists already and belongs to TFJob j") {
		t.Errorf("Waiting condition %+v; want NameConflict naming the TFJob that holds j-worker-0", w)
	}
	if job.Status.Aggregate.Creating != 1 {
		t.Errorf("aggregate %+v; want the worker still to create (the TFJob's pod is not the job's)", job.Status.Aggregate)
	}
}

// withDeletedJobsPod reconciles job j twice beside j-worker-0, a pod of a deleted job of the same
// name, terminating on node dead-node (node, when given, is that node), and returns the cluster.
func withDeletedJobsPod(t *testing.T, now *time.Time, node *corev1.Node) *cluster {
	t.Helper()
	c := newCluster(t, testJob(1, batch.RestartPolicyNever))
	r := newTestReconciler(c, now)
	old := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "j-worker-0", UID: "old-pod",
		Finalizers:      []string{"test/hold"}, // stands for the kubelet that never confirms
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch.tensorstack.dev/v1beta1", Kind: "PyTorchTrainingJob", Name: "j", UID: "deleted-job-uid", Controller: ptr(true)}}},
		Spec: corev1.PodSpec{NodeName: "dead-node"}}
	objs := []client.Object{old}
	if node != nil {
		objs = append(objs, node)
	}
	for _, obj := range objs {
		if err := c.server.Create(context.Background(), obj); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.server.Delete(context.Background(), old); err != nil {
		t.Fatal(err)
	}
	req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "j"}}
	for range 2 {
		_, _ = r.Reconcile(context.Background(), req)
		*now = now.Add(3 * time.Second)
	}
	return c
}

// A pod left by a deleted job of the same name, still terminating on a node whose kubelet does not
// confirm the deletion (a node that is not Ready), keeps its name: the resubmitted job says the
// pod is being deleted and on which node, not only that it belongs to a job of its own name (seen:
// a job resubmitted under its name waited, NameConflict, until the dead node came back).
func TestAPodNameHeldByATerminatingPodSaysItsNode(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := withDeletedJobsPod(t, &now, nil)
	job, _ := c.get()
	w := meta.FindStatusCondition(job.Status.Conditions, batch.ConditionWaiting)
	if w == nil || w.Reason != render.ReasonNameConflict || !strings.Contains(w.Message, "it is being deleted since ") ||
		!strings.Contains(w.Message, "goes once node dead-node confirms it, which a node that is not Ready never does") {
		t.Errorf("Waiting condition %+v; want NameConflict saying the pod is being deleted and on which node", w)
	}
}

// The same pod on a node lost by --node-lost-after's rule (not Ready for 2 minutes) would hold the
// name until the node came back (seen: 1 m 44 s, ended only by restoring the node): the operator
// force-deletes it, as it does its own jobs' pods on a lost node, and creates the job's pod.
func TestAPodNameHeldByADeletedJobsPodOnALostNodeIsFreed(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	run := func(notReady time.Duration) *cluster {
		return withDeletedJobsPod(t, &now, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "dead-node"}, Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
			{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, LastTransitionTime: metav1.NewTime(now.Add(-notReady))}}}})
	}

	c := run(2 * time.Minute)
	if c.forced["j-worker-0"] != 1 {
		t.Errorf("forced deletions of j-worker-0: %d; want 1 (writes: %v)", c.forced["j-worker-0"], c.writes)
	}
	var p corev1.Pod
	self, _ := c.get()
	if err := c.server.Get(context.Background(), types.NamespacedName{Namespace: "ns", Name: "j-worker-0"}, &p); err != nil || p.UID == "old-pod" ||
		metav1.GetControllerOf(&p) == nil || metav1.GetControllerOf(&p).UID != self.UID {
		t.Errorf("j-worker-0: %v, uid %s, controller %+v; want the job's own pod", err, p.UID, metav1.GetControllerOf(&p))
	}

	// Not Ready for less than the bound: left alone, the job waits and says why.
	c = run(10 * time.Second)
	if c.deletes["j-worker-0"] != 0 {
		t.Errorf("a pod on a node not Ready for 10 s was deleted %d times; want 0", c.deletes["j-worker-0"])
	}
	job, _ := c.get()
	if w := meta.FindStatusCondition(job.Status.Conditions, batch.ConditionWaiting); w == nil || w.Reason != render.ReasonNameConflict {
		t.Errorf("Waiting condition %+v; want NameConflict", w)
	}
}

// A job named like an older job of another kind in its namespace creates nothing and says which
// job holds the name; once that job is deleted, it is woken and runs.
func TestAJobNamedLikeAnOlderJobOfAnotherKindWaits(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	job := testJob(1, batch.RestartPolicyNever)
	job.CreationTimestamp = metav1.NewTime(now)
	c := newCluster(t, job)
	r := newTestReconciler(c, &now)
	r.kinds = &kindRegistry{}
	woken := make(chan event.GenericEvent, 1)
	r.kinds.add(pyTorchKind, wakeByName(pyTorchKind, woken))
	r.kinds.add(tensorFlowKind, func(types.NamespacedName) {})
	older := &batch.TensorFlowTrainingJob{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "j", UID: "tf-uid", CreationTimestamp: metav1.NewTime(now.Add(-time.Hour))}}
	if err := c.server.Create(context.Background(), older); err != nil {
		t.Fatal(err)
	}
	reconcileOnce(t, r)
	now = now.Add(3 * time.Second) // past the status interval
	reconcileOnce(t, r)
	got, pods := c.get()
	if len(pods.Items) != 0 {
		t.Errorf("%d pods created beside the older TensorFlowTrainingJob j; want none", len(pods.Items))
	}
	if init := meta.FindStatusCondition(got.Status.Conditions, batch.ConditionInitialized); init == nil || init.Reason != render.ReasonNameConflict ||
		!strings.Contains(init.Message, "TensorFlowTrainingJob j, created before this job") {
		t.Errorf("Initialized %+v; want NameConflict naming the TensorFlowTrainingJob", init)
	}

	// The TensorFlowTrainingJob goes: its controller wakes the PyTorchTrainingJob, which runs.
	if err := c.server.Delete(context.Background(), older); err != nil {
		t.Fatal(err)
	}
	tf := newTestReconciler(c, &now)
	tf.kind, tf.kinds = tensorFlowKind, r.kinds
	tf.jobDeleted(older, true)
	tf.releasing.Wait()
	select {
	case e := <-woken:
		if e.Object.GetName() != "j" || e.Object.GetNamespace() != "ns" {
			t.Errorf("woke %s/%s; want ns/j", e.Object.GetNamespace(), e.Object.GetName())
		}
	default:
		t.Fatal("the deletion of the TensorFlowTrainingJob woke no PyTorchTrainingJob of its name")
	}
	now = now.Add(3 * time.Second)
	reconcileOnce(t, r)
	if _, pods := c.get(); len(pods.Items) != 2 {
		t.Errorf("%d pods once the name was free; want 2", len(pods.Items))
	}
}

// A job deleted with --cascade=orphan (marked for deletion under the orphan finalizer), or marked
// for deletion under another finalizer, keeps its pods; one deleted in the foreground has them
// deleted at once.
func TestADeletedJobsPodsGoOnlyWithTheJob(t *testing.T) {
	for _, tc := range []struct {
		finalizers []string
		want       int
	}{
		{[]string{metav1.FinalizerOrphanDependents}, 4},
		{[]string{"example.com/hold"}, 4},
		{[]string{metav1.FinalizerDeleteDependents}, 0},
	} {
		t.Run(tc.finalizers[0], func(t *testing.T) {
			now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			c := newCluster(t, testJob(3, batch.RestartPolicyNever))
			r := newTestReconciler(c, &now)
			reconcileOnce(t, r)
			job, _ := c.get()
			job.Finalizers = tc.finalizers
			job.DeletionTimestamp = &metav1.Time{Time: now}
			r.jobDeleted(job, false) // as the update marking it for deletion does
			r.releasing.Wait()
			if _, pods := c.get(); len(pods.Items) != tc.want {
				t.Errorf("%d pods left; want %d", len(pods.Items), tc.want)
			}
		})
	}
}

func TestAFinishedJobWithoutPodsReconcilesCleanly(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := newCluster(t, testJob(1, batch.RestartPolicyNever))
	r := newTestReconciler(c, &now)
	reconcileOnce(t, r)
	c.setPod("j-worker-0", corev1.PodRunning, nil)
	c.setPod("j-master-0", corev1.PodSucceeded, ptr(int32(0)))
	now = now.Add(2 * time.Second)
	reconcileOnce(t, r) // Succeeded: the running worker is cleaned up
	_, pods := c.get()
	for i := range pods.Items {
		// The clean-up runs in the background: the worker may have gone since the list.
		if err := c.server.Delete(context.Background(), &pods.Items[i]); client.IgnoreNotFound(err) != nil {
			t.Fatal(err)
		}
	}
	for range 3 { // the Service goes with the last pod; afterwards there is nothing to do
		now = now.Add(time.Second)
		if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "j"}}); err != nil {
			t.Fatalf("reconciling a finished job with no pod and no Service: %v", err)
		}
	}
}

func TestNothingChangedNothingWritten(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := newCluster(t, testJob(2, batch.RestartPolicyNever))
	r := newTestReconciler(c, &now)
	reconcileOnce(t, r)
	for _, p := range []string{"j-master-0", "j-worker-0", "j-worker-1"} {
		c.setPod(p, corev1.PodRunning, nil)
	}
	now = now.Add(5 * time.Second)
	reconcileOnce(t, r) // the job turns Running
	c.takeWrites()
	for range 5 {
		now = now.Add(10 * time.Second)
		if res := reconcileOnce(t, r); res.RequeueAfter != 0 {
			t.Errorf("a steady job asked to be requeued after %s", res.RequeueAfter)
		}
	}
	if w := c.takeWrites(); len(w) != 0 {
		t.Errorf("5 reconciles of a steady job wrote %v; want nothing", w)
	}
}

// newJobCreatedAt is a cluster holding a master and 3 workers created at *now, and its reconciler.
func newJobCreatedAt(t *testing.T, now *time.Time) (*cluster, *jobReconciler) {
	job := testJob(3, batch.RestartPolicyNever)
	job.CreationTimestamp = metav1.NewTime(*now)
	c := newCluster(t, job)
	return c, newTestReconciler(c, now)
}

func TestStatusIsBatchedButOutcomesAreWrittenAtOnce(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c, r := newJobCreatedAt(t, &now)
	res := reconcileOnce(t, r) // creates the pods; a new job's Pending waits up to two intervals
	if w := c.takeWrites(); len(w) != 5 || res.RequeueAfter != 2*time.Second {
		t.Fatalf("first reconcile wrote %v and requeues after %s; want the Service and 4 pods, and a requeue after 2s", w, res.RequeueAfter)
	}
	for _, p := range []string{"j-master-0", "j-worker-0", "j-worker-1", "j-worker-2"} {
		c.setPod(p, corev1.PodRunning, nil)
	}
	now = now.Add(400 * time.Millisecond)
	reconcileOnce(t, r) // the whole gang runs: written at once, the first and only write so far
	if w := c.takeWrites(); len(w) != 1 {
		t.Fatalf("the gang up: wrote %v; want the status once", w)
	}
	if got, _ := c.get(); got.Status.Phase != batch.JobRunning || got.Status.Aggregate.Running != 4 {
		t.Fatalf("status: %s with %d running; want Running with 4", got.Status.Phase, got.Status.Aggregate.Running)
	}
	c.setPod("j-worker-2", corev1.PodSucceeded, ptr(int32(0)))
	now = now.Add(100 * time.Millisecond)
	res = reconcileOnce(t, r) // a worker's end is a count: it waits for the interval
	if w := c.takeWrites(); len(w) != 0 || res.RequeueAfter != 900*time.Millisecond {
		t.Fatalf("a count 100ms after a write: wrote %v, requeue after %s; want nothing and 900ms", w, res.RequeueAfter)
	}
	zero := int32(0)
	c.setPod("j-master-0", corev1.PodSucceeded, &zero)
	now = now.Add(100 * time.Millisecond)
	reconcileOnce(t, r) // the outcome is written at once, within the interval
	if got, _ := c.get(); got.Status.Phase != batch.JobSucceeded {
		t.Fatalf("100ms after the master succeeded the job is %s; want Succeeded at once", got.Status.Phase)
	}
}

// A round that creates a job's pods and writes its first status counts them as pending, not as
// still to create, though the cache has not seen them yet: the next round, which finds them,
// has nothing to write.
func TestTheFirstStatusCountsThePodsItsRoundCreated(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	job := testJob(3, batch.RestartPolicyNever)
	job.CreationTimestamp = metav1.NewTime(now.Add(-3 * time.Second)) // its first status is due
	c := newCluster(t, job)
	r := newTestReconciler(c, &now)
	c.freeze() // the cache will not see the pods this round creates
	reconcileOnce(t, r)
	got, pods := c.get()
	if len(pods.Items) != 4 {
		t.Fatalf("%d pods after the first round; want 4", len(pods.Items))
	}
	if a := got.Status.Aggregate; got.Status.Phase != batch.JobPending || a.Pending != 4 || a.Creating != 0 {
		t.Fatalf("the first status: %s, %d pending, %d creating; want Pending with the 4 created pods pending", got.Status.Phase, a.Pending, a.Creating)
	}
	c.takeWrites()
	c.thaw()
	now = now.Add(2 * time.Second)
	reconcileOnce(t, r) // the cache has the pods now, as the status already says
	if w := c.takeWrites(); len(w) != 0 {
		t.Fatalf("the round after: wrote %v; want nothing", w)
	}
}

func TestAFinishedJobsCleanUpIsWrittenWhenItEnds(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c, r := newJobCreatedAt(t, &now)
	reconcileOnce(t, r)
	workers := []string{"j-worker-0", "j-worker-1", "j-worker-2"}
	for _, p := range append([]string{"j-master-0"}, workers...) {
		c.setPod(p, corev1.PodRunning, nil)
	}
	now = now.Add(time.Second)
	reconcileOnce(t, r) // Running
	// The workers' deletions leave them terminating, as a kubelet does until their containers stop.
	setFinalizers := func(fin []string, workers ...string) {
		for _, name := range workers {
			var p corev1.Pod
			if err := c.server.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: name}, &p); err != nil {
				t.Fatal(err)
			}
			p.Finalizers = fin
			if err := c.server.Update(context.Background(), &p); err != nil {
				t.Fatal(err)
			}
		}
	}
	setFinalizers([]string{"test/kubelet"}, workers...)
	c.setPod("j-master-0", corev1.PodSucceeded, ptr(int32(0)))
	now = now.Add(2 * time.Second)
	reconcileOnce(t, r) // Succeeded at once; the running workers are deleted in the background
	if got, _ := c.get(); got.Status.Phase != batch.JobSucceeded {
		t.Fatalf("the master succeeded: job %s; want Succeeded", got.Status.Phase)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, pods := c.get()
		terminating := 0
		for _, p := range pods.Items {
			if p.DeletionTimestamp != nil {
				terminating++
			}
		}
		if terminating == len(workers) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d workers terminating 10s after the job succeeded", terminating, len(workers))
		}
		time.Sleep(10 * time.Millisecond)
	}
	c.mu.Lock()
	for _, w := range workers {
		if !c.cleanUps[w] {
			t.Errorf("%s was deleted as a normal write; want clean-up (last in the write gate)", w)
		}
	}
	c.mu.Unlock()
	c.takeWrites()
	setFinalizers(nil, workers[0]) // the first worker is gone
	now = now.Add(2 * time.Second)
	res := reconcileOnce(t, r) // the status waits for the clean-up to end
	if w := c.takeWrites(); len(w) != 0 || res.RequeueAfter != 8*time.Second {
		t.Fatalf("clean-up under way 2s after the outcome: wrote %v, requeue after %s; want nothing and 8s", w, res.RequeueAfter)
	}
	setFinalizers(nil, workers[1:]...) // the others are gone
	now = now.Add(100 * time.Millisecond)
	reconcileOnce(t, r)
	got, _ := c.get()
	if w := c.takeWrites(); len(w) != 1 || got.Status.Aggregate.Deleted != 3 || got.Status.Aggregate.Succeeded != 1 {
		t.Fatalf("clean-up over: wrote %v, aggregate %+v; want one status write with 3 deleted and 1 succeeded", w, got.Status.Aggregate)
	}
	for _, task := range got.Status.Tasks {
		if task.Type == "worker" && len(task.ReplicaStatus) != 0 {
			t.Errorf("the workers are gone but the status lists %v", task.ReplicaStatus)
		}
	}
}

func TestTheServiceIsAppliedAgainOnlyWhenItOrTheJobChanged(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c, r := newJobCreatedAt(t, &now)
	serviceApplies := func() int {
		n := 0
		for _, w := range c.takeWrites() {
			if w == "apply Service j" {
				n++
			}
		}
		return n
	}
	reconcileOnce(t, r)
	if n := serviceApplies(); n != 1 {
		t.Fatalf("first round applied the Service %d times; want once", n)
	}
	for range 2 {
		now = now.Add(time.Second)
		reconcileOnce(t, r)
	}
	if n := serviceApplies(); n != 0 {
		t.Fatalf("the Service was applied %d times more with nothing changed; want none", n)
	}
	// Someone edits the Service: the operator's intent is applied again.
	var svc corev1.Service
	if err := c.server.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "j"}, &svc); err != nil {
		t.Fatal(err)
	}
	svc.Annotations = nil
	svc.Spec.PublishNotReadyAddresses = false
	if err := c.server.Update(context.Background(), &svc); err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Second)
	reconcileOnce(t, r)
	if n := serviceApplies(); n != 1 {
		t.Fatalf("after an edit of the Service it was applied %d times; want once", n)
	}
	// The job's spec changes (a new port): so does the Service.
	job, _ := c.get()
	job.Spec.ReplicaSpecs[0].Template.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "metrics", ContainerPort: 9090}}
	job.Generation++
	if err := c.server.Update(context.Background(), job); err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Second)
	reconcileOnce(t, r)
	if n := serviceApplies(); n != 1 {
		t.Fatalf("after a change of the job's spec the Service was applied %d times; want once", n)
	}
}

func TestCountsOfABigJobAreWrittenLessOften(t *testing.T) {
	cases := map[string]struct {
		desired int32
		took    time.Duration
		want    time.Duration
	}{
		"up to 1,000 pods: one interval":                   {1000, 0, time.Second},
		"2,001 pods: three":                                {2001, 0, 3 * time.Second},
		"5,000 pods: five":                                 {5000, 0, 5 * time.Second},
		"a small job's prompt write: the interval decides": {8, 10 * time.Millisecond, time.Second},
		"a write of a second: twenty seconds":              {5000, time.Second, 20 * time.Second},
		"a slow write of a small job is spaced too":        {8, 200 * time.Millisecond, 4 * time.Second},
	}
	for name, c := range cases {
		if got := countsWait(time.Second, int(c.desired), c.took); got != c.want {
			t.Errorf("%s: %s, want %s", name, got, c.want)
		}
	}
}

func TestCountsWaitForWhatTheLastWriteTook(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c, r := newJobCreatedAt(t, &now)
	reconcileOnce(t, r)
	c.takeWrites()
	for _, p := range []string{"j-master-0", "j-worker-0", "j-worker-1", "j-worker-2"} {
		c.setPod(p, corev1.PodRunning, nil)
	}
	now = now.Add(400 * time.Millisecond)
	c.onStatusApply = func() { now = now.Add(300 * time.Millisecond) } // the server takes 300ms
	reconcileOnce(t, r)                                                // the gang up: written at once, in 300ms
	if w := c.takeWrites(); len(w) != 1 {
		t.Fatalf("the gang up: wrote %v; want the status once", w)
	}
	c.onStatusApply = nil
	c.setPod("j-worker-2", corev1.PodSucceeded, ptr(int32(0)))
	now = now.Add(100 * time.Millisecond)
	// A count: 20 x 300ms after the write began, not the interval (1s).
	if res := reconcileOnce(t, r); len(c.takeWrites()) != 0 || res.RequeueAfter != 5600*time.Millisecond {
		t.Fatalf("a count 400ms after a write of 300ms: requeue after %s; want no write and 5.6s", res.RequeueAfter)
	}
	now = now.Add(5600 * time.Millisecond)
	reconcileOnce(t, r)
	if got, _ := c.get(); len(c.takeWrites()) != 1 || got.Status.Aggregate.Running != 3 {
		t.Fatalf("6s after the write: %d running; want one write with 3", got.Status.Aggregate.Running)
	}
}

func TestTheLastPodsRunningAreWrittenAtOnce(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c, r := newJobCreatedAt(t, &now)
	reconcileOnce(t, r)
	for _, p := range []string{"j-master-0", "j-worker-0", "j-worker-1"} {
		c.setPod(p, corev1.PodRunning, nil)
	}
	c.takeWrites() // the pods' creations
	now = now.Add(400 * time.Millisecond)
	reconcileOnce(t, r) // 3 of 4 running: Running, at once
	if got, _ := c.get(); len(c.takeWrites()) != 1 || got.Status.Phase != batch.JobRunning || got.Status.Aggregate.Running != 3 {
		t.Fatalf("3 of 4 pods running: %s with %d running; want one write, Running with 3", got.Status.Phase, got.Status.Aggregate.Running)
	}
	c.setPod("j-worker-2", corev1.PodRunning, nil)
	now = now.Add(100 * time.Millisecond)
	reconcileOnce(t, r) // a count, but the one that brings every pod running: not held
	if got, _ := c.get(); len(c.takeWrites()) != 1 || got.Status.Aggregate.Running != 4 {
		t.Fatalf("the last pod running 100ms after a write: %d running; want one write with 4", got.Status.Aggregate.Running)
	}
	c.setPod("j-worker-2", corev1.PodSucceeded, ptr(int32(0)))
	now = now.Add(100 * time.Millisecond)
	if res := reconcileOnce(t, r); len(c.takeWrites()) != 0 || res.RequeueAfter != 900*time.Millisecond {
		t.Fatalf("a worker's end 100ms after a write: requeue after %s; want no write and 900ms", res.RequeueAfter)
	}
}

func TestRunningPodsOfBothShapes(t *testing.T) {
	t9k := batch.TrainingJobStatus{Tasks: []batch.TaskStatus{{Type: "worker", ReplicaStatus: []batch.ReplicaStatus{
		{Phase: corev1.PodRunning}, {Phase: corev1.PodPending}, {Phase: corev1.PodRunning}, {Phase: corev1.PodSucceeded}}}}}
	kf := render.FromKubeflowStatus(&kubeflowv1.JobStatus{ReplicaStatuses: map[kubeflowv1.ReplicaType]*kubeflowv1.ReplicaStatus{
		kubeflowv1.ReplicaTypeMaster: {Active: 1},
		kubeflowv1.ReplicaTypeWorker: {Active: 4, Succeeded: 2}}})
	if got := runningPods(&t9k); got != 2 {
		t.Errorf("a T9k status listing 2 running pods of 4: %d", got)
	}
	if got := runningPods(&kf); got != 5 {
		t.Errorf("a Kubeflow status with 1 + 4 active: %d", got)
	}
}

func TestRunningIsWrittenWhenTheFirstPodRuns(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c, r := newJobCreatedAt(t, &now)
	reconcileOnce(t, r)
	now = now.Add(2 * time.Second)
	reconcileOnce(t, r) // Pending, written
	c.setPod("j-master-0", corev1.PodRunning, nil)
	now = now.Add(100 * time.Millisecond)
	c.takeWrites()
	reconcileOnce(t, r) // 1 of 4 running, 100ms after the Pending write: the phase turns, written at once
	if got, _ := c.get(); len(c.takeWrites()) != 1 || got.Status.Phase != batch.JobRunning || got.Status.Aggregate.Running != 1 {
		t.Fatalf("first pod running: status %s with %d running; want one write, Running with 1", got.Status.Phase, got.Status.Aggregate.Running)
	}
	c.setPod("j-worker-0", corev1.PodRunning, nil)
	now = now.Add(1500 * time.Millisecond)
	if res := reconcileOnce(t, r); len(c.takeWrites()) != 0 || res.RequeueAfter != 1500*time.Millisecond {
		t.Fatalf("2 of 4 running, 1.5s after the write: requeue after %s; want no write and 1.5s (three intervals in all)", res.RequeueAfter)
	}
	for _, p := range []string{"j-worker-1", "j-worker-2"} {
		c.setPod(p, corev1.PodRunning, nil)
	}
	now = now.Add(100 * time.Millisecond)
	reconcileOnce(t, r) // the gang is up: its last pods running are written at once too
	if got, _ := c.get(); got.Status.Phase != batch.JobRunning || got.Status.Aggregate.Running != 4 || len(c.takeWrites()) != 1 {
		t.Fatalf("gang up: status %s with %d running; want one write, Running with 4", got.Status.Phase, got.Status.Aggregate.Running)
	}
}

func ptr[T any](v T) *T { return &v }

func TestNamespaceTerminating(t *testing.T) {
	terminating := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "j-worker-0", errors.New("unable to create new content in namespace ns because it is being terminated"))
	terminating.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause}}
	cases := map[string]struct {
		err  error
		want bool
	}{
		"a create refused in a namespace being deleted, wrapped and joined": {
			err: errors.Join(fmt.Errorf("creating Pod ns/j-worker-0: %w", terminating)), want: true},
		"another refusal": {err: apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "p", errors.New("quota exceeded"))},
		"no error at all": {},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := namespaceTerminating(tc.err); got != tc.want {
				t.Errorf("namespaceTerminating = %v; want %v", got, tc.want)
			}
		})
	}
}

// TestAGangRestartIsWrittenBeforeItsDeletions: the new gangRestarts is recorded first, so that a
// stop half-way through the deletions leaves render a gang to finish deleting, not survivors it
// would take for the current gang; the new gang is created only once the old pods are gone.
func TestAGangRestartIsWrittenBeforeItsDeletions(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := newCluster(t, testJob(2, batch.RestartPolicyOnFailure))
	r := newTestReconciler(c, &now)
	reconcileOnce(t, r)
	for _, p := range []string{"j-master-0", "j-worker-0", "j-worker-1"} {
		c.setPod(p, corev1.PodRunning, nil)
	}
	now = now.Add(3 * time.Second)
	reconcileOnce(t, r)
	c.takeWrites()
	code := int32(1)
	c.setPod("j-worker-1", corev1.PodFailed, &code)
	now = now.Add(time.Second)
	c.freeze() // the deletions do not show yet
	reconcileOnce(t, r)
	writes := c.takeWrites()
	if len(writes) != 4 || writes[0] != "apply status PyTorchTrainingJob j" {
		t.Fatalf("writes %v; want the status first, then the three deletions", writes)
	}
	c.mu.Lock()
	if len(c.cleanUps) != 3 {
		t.Errorf("deletions seen: %v; want the old gang's three", c.cleanUps)
	}
	for name, cleanUp := range c.cleanUps {
		if cleanUp {
			t.Errorf("the restart deleted %s as clean-up; the restart waits on it, so it must not wait behind other jobs' clean-ups", name)
		}
	}
	c.mu.Unlock()
	job, pods := c.get()
	if job.Status.GangRestarts != 1 || job.Status.BackoffCount != 1 || len(pods.Items) != 0 {
		t.Fatalf("gangRestarts %d, backoffCount %d, %d pods left; want 1, 1, 0", job.Status.GangRestarts, job.Status.BackoffCount, len(pods.Items))
	}
	// On the stale cache the old gang still shows: nothing is created, nothing counted again.
	now = now.Add(time.Second)
	reconcileOnce(t, r)
	if w := c.takeWrites(); len(w) != 0 {
		t.Fatalf("writes on a stale cache during a gang restart: %v; want none", w)
	}
	c.thaw()
	now = now.Add(time.Second)
	reconcileOnce(t, r)
	job, pods = c.get()
	if len(pods.Items) != 3 || job.Status.GangRestarts != 1 || job.Status.BackoffCount != 1 {
		t.Fatalf("%d pods, gangRestarts %d, backoffCount %d; want the new gang of 3, 1, 1", len(pods.Items), job.Status.GangRestarts, job.Status.BackoffCount)
	}
	for _, p := range pods.Items {
		if p.Annotations[batch.AnnotationGangRestarts] != "1" {
			t.Errorf("%s was created without %s: 1 (annotations %v)", p.Name, batch.AnnotationGangRestarts, p.Annotations)
		}
	}
}

// TestSurvivorsOfAnEarlierGangAreDeletedFirst: a status that says a gang restart happened, over
// pods created before it (the operator stopped between the status write and the deletions): the
// pods go, and the new gang comes once they are gone.
func TestSurvivorsOfAnEarlierGangAreDeletedFirst(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := newCluster(t, testJob(1, batch.RestartPolicyOnFailure))
	r := newTestReconciler(c, &now)
	reconcileOnce(t, r)
	job, _ := c.get()
	job.Status.GangRestarts = 1
	job.Status.BackoffCount = 1
	if err := c.server.Status().Update(context.Background(), job); err != nil {
		t.Fatal(err)
	}
	r = newTestReconciler(c, &now) // a new operator process: it knows only what the cluster holds
	c.freeze()
	now = now.Add(time.Second)
	reconcileOnce(t, r)
	if got := c.deletes; got["j-master-0"] != 1 || got["j-worker-0"] != 1 {
		t.Fatalf("deletions %v; want both pods of the earlier gang deleted once", got)
	}
	c.thaw()
	now = now.Add(time.Second)
	reconcileOnce(t, r)
	job, pods := c.get()
	if len(pods.Items) != 2 || job.Status.BackoffCount != 1 || job.Status.GangRestarts != 1 {
		t.Fatalf("%d pods, backoffCount %d, gangRestarts %d; want the new gang of 2 and nothing counted again", len(pods.Items), job.Status.BackoffCount, job.Status.GangRestarts)
	}
}

// clientPods finds a job's pods through the (possibly stale) client, as the manager's pod
// informer index does through the cache.
type clientPods struct{ c client.Client }

func (p clientPods) of(job types.UID) ([]*corev1.Pod, error) {
	var list corev1.PodList
	if err := p.c.List(context.Background(), &list); err != nil {
		return nil, err
	}
	return controlledBy(list.Items, job), nil
}

// controlledBy are the items whose controller is job, as the index by controller UID finds them.
func controlledBy[T any, P interface {
	*T
	client.Object
}](items []T, job types.UID) []*T {
	var out []*T
	for i := range items {
		if uids := controllerUID(P(&items[i])); len(uids) == 1 && uids[0] == string(job) {
			out = append(out, &items[i])
		}
	}
	return out
}

// A job paced to the scheduler holds pods back, and its pods' bindings wake it (holdsPods) only
// while it does.
func TestAJobHoldsPodsBackUntilItsPodsAreBound(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c, r := newJobCreatedAt(t, &now) // 1 master + 3 workers
	r.shares = newSchedulerShares(2, 2)
	reconcileOnce(t, r)
	_, pods := c.get()
	if len(pods.Items) != 2 || !r.holdsPods("job-uid") {
		t.Fatalf("first round: %d pods, holding pods back %v; want 2 and true", len(pods.Items), r.holdsPods("job-uid"))
	}
	for _, p := range pods.Items {
		p.Spec.NodeName = "node-1" // bound by the scheduler
		if err := c.server.Update(context.Background(), &p); err != nil {
			t.Fatal(err)
		}
	}
	now = now.Add(time.Second)
	reconcileOnce(t, r)
	_, pods = c.get()
	if len(pods.Items) != 4 || r.holdsPods("job-uid") {
		t.Fatalf("after the bindings: %d pods, holding pods back %v; want 4 and false", len(pods.Items), r.holdsPods("job-uid"))
	}
}

// Without pacing (--max-unscheduled-pods-per-job=0) a job holds nothing back, so no binding wakes it.
func TestWithoutPacingNoJobHoldsPodsBack(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c, r := newJobCreatedAt(t, &now)
	reconcileOnce(t, r)
	if _, pods := c.get(); len(pods.Items) != 4 || r.holdsPods("job-uid") {
		t.Fatalf("%d pods, holding pods back %v; want 4 and false", len(pods.Items), r.holdsPods("job-uid"))
	}
}

// TestARemovedTensorBoardIsDeleted: a job whose tensorboardSpec is removed has its TensorBoard
// Deployment and Service deleted, rather than left running, unreported, until the job goes.
func TestARemovedTensorBoardIsDeleted(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	job := testJob(1, batch.RestartPolicyNever)
	job.Spec.TensorboardSpec = &batch.TensorBoardSpec{Image: "tensorboard",
		LogDir: &batch.LogDir{PVC: []batch.PVCLogDir{{Name: "logs"}}}}
	c := newCluster(t, job)
	r := newTestReconciler(c, &now)
	reconcileOnce(t, r)
	ctx, key := context.Background(), client.ObjectKey{Namespace: "ns", Name: render.TensorBoardName("j")}
	if err := c.server.Get(ctx, key, &appsv1.Deployment{}); err != nil {
		t.Fatalf("the TensorBoard Deployment was not made: %v", err)
	}
	if err := c.server.Get(ctx, key, &corev1.Service{}); err != nil {
		t.Fatalf("the TensorBoard Service was not made: %v", err)
	}

	live, _ := c.get()
	live.Spec.TensorboardSpec = nil
	live.Generation++
	if err := c.server.Update(ctx, live); err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Second)
	reconcileOnce(t, r)
	if err := c.server.Get(ctx, key, &appsv1.Deployment{}); !apierrors.IsNotFound(err) {
		t.Errorf("the TensorBoard Deployment of a removed tensorboardSpec: got %v, want it deleted", err)
	}
	if err := c.server.Get(ctx, key, &corev1.Service{}); !apierrors.IsNotFound(err) {
		t.Errorf("the TensorBoard Service of a removed tensorboardSpec: got %v, want it deleted", err)
	}
}

// TestATensorBoardNameAnotherObjectHoldsIsSaidNotTakenOver: a Deployment the job does not own
// holds the name of the job's TensorBoard. It is left as it is (not adopted, not rewritten), the
// job's status.tensorboard says who holds the name, and the job itself does not wait on it.
func TestATensorBoardNameAnotherObjectHoldsIsSaidNotTakenOver(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	job := testJob(1, batch.RestartPolicyNever)
	job.Spec.TensorboardSpec = &batch.TensorBoardSpec{Image: "tensorboard",
		LogDir: &batch.LogDir{PVC: []batch.PVCLogDir{{Name: "logs"}}}}
	c := newCluster(t, job)
	ctx, key := context.Background(), client.ObjectKey{Namespace: "ns", Name: render.TensorBoardName("j")}
	labels := map[string]string{"app": "mine"}
	foreign := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: key.Name},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}}},
		}},
	}
	if err := c.server.Create(ctx, foreign); err != nil {
		t.Fatal(err)
	}
	r := newTestReconciler(c, &now)
	for range 2 { // the first round finds the name taken, the next one's status says so
		_, _ = r.Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "j"}})
		now = now.Add(time.Second)
	}
	var live appsv1.Deployment
	if err := c.server.Get(ctx, key, &live); err != nil {
		t.Fatal(err)
	}
	if len(live.OwnerReferences) > 0 || live.Spec.Template.Spec.Containers[0].Image != "nginx" {
		t.Errorf("the Deployment the job does not own was taken over: owners %v, image %s", live.OwnerReferences, live.Spec.Template.Spec.Containers[0].Image)
	}
	got, _ := c.get()
	tb := got.Status.Tensorboard
	if tb == nil || tb.Reason != render.ReasonNameConflict || !strings.Contains(tb.Note, "Deployment j-tensorboard exists already") {
		t.Errorf("status.tensorboard = %+v; want NameConflict naming the Deployment", tb)
	}
	if c := meta.FindStatusCondition(got.Status.Conditions, batch.ConditionWaiting); c != nil && c.Reason == render.ReasonNameConflict {
		t.Errorf("the job waits with %s: %s; the TensorBoard is not what the job waits for", c.Reason, c.Message)
	}
}
