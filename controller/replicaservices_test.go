package controller

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kubeflowv1 "github.com/trainyard/trainyard/apis/kubeflow/v1"
)

// kubeflowCluster is a fake API server holding one PyTorchJob, recording the creations.
type kubeflowCluster struct {
	server ctrl.WithWatch
	client ctrl.Client

	mu      sync.Mutex
	created []string // "Pod name" or "Service name", in order
	// refusePods: pod creations are refused, as a ResourceQuota would.
	refusePods bool
}

func newKubeflowCluster(t *testing.T, workers int32) *kubeflowCluster {
	t.Helper()
	tmpl := corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "pytorch", Image: "train"}}}}
	job := &kubeflowv1.PyTorchJob{
		ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "ns", UID: "kf-uid", Generation: 1},
		Spec: kubeflowv1.PyTorchJobSpec{PyTorchReplicaSpecs: map[kubeflowv1.ReplicaType]*kubeflowv1.ReplicaSpec{
			"Master": {Replicas: ptr(int32(1)), Template: tmpl},
			"Worker": {Replicas: ptr(workers), Template: *tmpl.DeepCopy()},
		}},
	}
	c := &kubeflowCluster{}
	c.server = fake.NewClientBuilder().WithScheme(Scheme()).WithObjects(job).WithStatusSubresource(job).Build()
	c.client = interceptor.NewClient(c.server, interceptor.Funcs{
		Create: func(ctx context.Context, cl ctrl.WithWatch, obj ctrl.Object, opts ...ctrl.CreateOption) error {
			c.mu.Lock()
			defer c.mu.Unlock()
			kind := fmt.Sprintf("%T", obj)[len("*v1."):]
			if kind == "Pod" && c.refusePods {
				return apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, obj.GetName(), fmt.Errorf("exceeded quota: gpus"))
			}
			c.created = append(c.created, kind+" "+obj.GetName())
			return cl.Create(ctx, obj, opts...)
		},
		// The fake cannot apply a CRD's status: this test looks only at the creations.
		SubResourceApply: func(context.Context, ctrl.Client, string, runtime.ApplyConfiguration, ...ctrl.SubResourceApplyOption) error {
			return nil
		},
	})
	return c
}

// takeCreated returns the kinds created since the last call, counted: "Pod" and "Service".
func (c *kubeflowCluster) takeCreated() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := map[string]int{}
	for _, w := range c.created {
		n[strings.Fields(w)[0]]++
	}
	c.created = nil
	return n
}

func (c *kubeflowCluster) reconciler(now *time.Time) *jobReconciler {
	s := newShared(c.client)
	return &jobReconciler{
		client: c.client, reader: c.server, kind: pyTorchJobKind, applier: s.applier, exp: s.exp, svcExp: s.svcExp,
		recorder: events.NewFakeRecorder(100), metrics: s.metrics, crds: s.crds, deletions: s.deletions,
		createParallelism: 8, statusInterval: time.Second,
		pods: clientPods{c.client}, services: clientServices{c.client},
		now:  func() time.Time { return *now },
		jobs: map[types.UID]*jobMemory{}, names: map[types.NamespacedName]types.UID{},
	}
}

func (c *kubeflowCluster) reconcile(t *testing.T, r *jobReconciler) (reconcile.Result, error) {
	t.Helper()
	return r.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "j"}})
}

func TestAKubeflowJobsServicesFollowItsPods(t *testing.T) {
	c := newKubeflowCluster(t, 3)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r := c.reconciler(&now)

	res, err := c.reconcile(t, r)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.takeCreated(); got["Pod"] != 4 || got["Service"] != 0 {
		t.Fatalf("first round created %v; want the 4 pods and no Service yet", got)
	}
	if res.RequeueAfter == 0 || res.RequeueAfter > time.Second {
		t.Fatalf("first round requeues after %s; want at once, for the Services", res.RequeueAfter)
	}
	if _, err := c.reconcile(t, r); err != nil {
		t.Fatal(err)
	}
	if got := c.takeCreated(); got["Pod"] != 0 || got["Service"] != 4 {
		t.Fatalf("second round created %v; want the 4 Services and no pod", got)
	}
	if _, err := c.reconcile(t, r); err != nil {
		t.Fatal(err)
	}
	if got := c.takeCreated(); len(got) != 0 {
		t.Fatalf("third round created %v; want nothing", got)
	}
}

func TestAKubeflowJobsServicesAreCreatedWhileItsPodsAreRefused(t *testing.T) {
	c := newKubeflowCluster(t, 1)
	c.refusePods = true
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r := c.reconciler(&now)

	// A refusal is no error to back off from: the round is tried again at a steady pace.
	if res, err := c.reconcile(t, r); err != nil || res.RequeueAfter != time.Second {
		t.Fatalf("first round: %v, requeue after %s; want no error and another try after 1s", err, res.RequeueAfter)
	}
	if refused := r.memory("kf-uid").createRefused.Message; refused == "" {
		t.Fatal("first round: the quota's refusal is not remembered for the status")
	}
	if got := c.takeCreated(); len(got) != 0 {
		t.Fatalf("first round created %v; want nothing (pods refused, Services after the pods)", got)
	}
	// Every round now wants to create pods; the Services no longer wait for them.
	_, _ = c.reconcile(t, r)
	if got := c.takeCreated(); got["Service"] != 2 {
		t.Fatalf("second round created %v; want the 2 Services beside the refused pods", got)
	}
}

// TestAPacedKubeflowJobsServicesFollowItsBindings: while the job's pods are paced, a round
// creates the Services of its pods bound since beside its new pods, and a Service not yet due
// brings no round of its own; once nothing is held the rest follow the pods as usual.
func TestAPacedKubeflowJobsServicesFollowItsBindings(t *testing.T) {
	c := newKubeflowCluster(t, 5) // 6 pods
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r := c.reconciler(&now)
	r.shares = newSchedulerShares(2, 2)
	round := func(what string, pods, services int, again bool) {
		t.Helper()
		res, err := c.reconcile(t, r)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.takeCreated(); got["Pod"] != pods || got["Service"] != services {
			t.Fatalf("%s: created %v; want %d pods and %d Services", what, got, pods, services)
		}
		if soon := res.RequeueAfter > 0 && res.RequeueAfter < 100*time.Millisecond; soon != again {
			t.Fatalf("%s: requeued after %s; want a round at once: %v", what, res.RequeueAfter, again)
		}
	}
	bind := func() {
		t.Helper()
		var pods corev1.PodList
		if err := c.server.List(context.Background(), &pods); err != nil {
			t.Fatal(err)
		}
		for i := range pods.Items {
			pods.Items[i].Spec.NodeName = "node-1"
			if err := c.server.Update(context.Background(), &pods.Items[i]); err != nil {
				t.Fatal(err)
			}
		}
	}
	round("first round: 2 pods, 4 held, none bound", 2, 0, false)
	round("nothing bound yet", 0, 0, false)
	bind()
	round("2 bound: 2 more pods and the bound ones' Services beside them", 2, 2, false)
	bind()
	round("4 bound: the last 2 pods, none held, so all missing Services wait a round", 2, 0, true)
	round("then the other 4 Services", 0, 4, false)
	round("then nothing", 0, 0, false)
}

// clientServices finds a job's Services through the client, as the manager's index does.
type clientServices struct{ c ctrl.Client }

func (s clientServices) of(job types.UID) ([]*corev1.Service, error) {
	var list corev1.ServiceList
	if err := s.c.List(context.Background(), &list); err != nil {
		return nil, err
	}
	return controlledBy(list.Items, job), nil
}

// TestAnHPAWhoseMetricsWereRemovedIsDeleted: an elastic PyTorchJob's elasticPolicy.metrics made
// an HPA; the metrics (or the whole elasticPolicy) are then removed from the running job. The HPA
// the job owns is deleted, rather than left scaling the job through /scale until the job ends.
func TestAnHPAWhoseMetricsWereRemovedIsDeleted(t *testing.T) {
	for name, policy := range map[string]*kubeflowv1.ElasticPolicy{
		"metrics removed":       {MinReplicas: ptr(int32(1)), MaxReplicas: ptr(int32(4))},
		"elasticPolicy removed": nil,
	} {
		t.Run(name, func(t *testing.T) {
			c := newKubeflowCluster(t, 2)
			ctx := context.Background()
			var job kubeflowv1.PyTorchJob
			if err := c.server.Get(ctx, types.NamespacedName{Namespace: "ns", Name: "j"}, &job); err != nil {
				t.Fatal(err)
			}
			job.Spec.ElasticPolicy = policy
			if err := c.server.Update(ctx, &job); err != nil {
				t.Fatal(err)
			}
			if err := c.server.Get(ctx, types.NamespacedName{Namespace: "ns", Name: "j"}, &job); err != nil {
				t.Fatal(err)
			}
			if job.Generation < 2 {
				// The fake does not count generations: the job is edited, as the API server would say.
				job.Generation = 2
				if err := c.server.Update(ctx, &job); err != nil {
					t.Fatal(err)
				}
			}
			// The HPA an earlier generation, with metrics, made.
			hpa := &autoscalingv2.HorizontalPodAutoscaler{
				ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "ns", OwnerReferences: []metav1.OwnerReference{{
					APIVersion: kubeflowv1.GroupVersion.String(), Kind: "PyTorchJob", Name: "j", UID: job.UID, Controller: ptr(true),
				}}},
				Spec: autoscalingv2.HorizontalPodAutoscalerSpec{MaxReplicas: 4,
					ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: kubeflowv1.GroupVersion.String(), Kind: "PyTorchJob", Name: "j"}},
			}
			if err := c.server.Create(ctx, hpa); err != nil {
				t.Fatal(err)
			}
			now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			r := c.reconciler(&now)
			if _, err := c.reconcile(t, r); err != nil {
				t.Fatal(err)
			}
			err := c.server.Get(ctx, types.NamespacedName{Namespace: "ns", Name: "j"}, &autoscalingv2.HorizontalPodAutoscaler{})
			if !apierrors.IsNotFound(err) {
				t.Errorf("the job's HPA after its metrics were removed: got %v; want it deleted", err)
			}
		})
	}
}
