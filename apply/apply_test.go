package apply

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

var errTest = errors.New("injected failure")

const intentKey = "example.com/intent"

func pods(n int) []client.Object {
	out := make([]client.Object, n)
	for i := range out {
		out[i] = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("p-%03d", i)}}
	}
	return out
}

func TestCreateAllSendsACanaryThenBoundedBatches(t *testing.T) {
	var inFlight, peak atomic.Int32
	var mu sync.Mutex
	var order []string
	// p-001, the first after the canary, waits for a second creation to be in flight, so that
	// a parallel window shows as one even on one thread; serial creations would leave it waiting.
	second := make(chan struct{})
	var secondOnce sync.Once
	c := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			n := inFlight.Add(1)
			defer inFlight.Add(-1)
			if n >= 2 {
				secondOnce.Do(func() { close(second) })
			}
			if obj.GetName() == "p-001" {
				select {
				case <-second:
				case <-time.After(10 * time.Second): // serial: peak stays 1 and the test fails below
				}
			}
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			mu.Lock()
			order = append(order, obj.GetName())
			mu.Unlock()
			return c.Create(ctx, obj, opts...)
		},
	}).Build()
	a := NewApplier(c, "test", intentKey)
	var before, done atomic.Int32
	created, err := a.CreateAll(context.Background(), pods(100), 16, CreateHooks{
		Before: func(client.Object) { before.Add(1) },
		Done:   func(CreateResult) { done.Add(1) },
	})
	if err != nil || created != 100 {
		t.Fatalf("CreateAll = %d, %v; want 100, nil", created, err)
	}
	if peak.Load() > 16 {
		t.Errorf("%d creations were in flight at once; the bound is 16", peak.Load())
	}
	if before.Load() != 100 || done.Load() != 100 {
		t.Errorf("before called %d times, done %d times; want 100 each", before.Load(), done.Load())
	}
	// The canary goes alone: it is the first request made.
	if order[0] != "p-000" {
		t.Errorf("first request for %s; want p-000, the canary", order[0])
	}
	if peak.Load() < 2 {
		t.Errorf("at most %d creation in flight; the creations after the canary go out in parallel", peak.Load())
	}
	var list corev1.PodList
	if err := c.List(context.Background(), &list); err != nil || len(list.Items) != 100 {
		t.Fatalf("%d pods exist (%v); want 100", len(list.Items), err)
	}
}

func TestCreateAllStopsAfterAFailureAndResumesWithoutDuplicates(t *testing.T) {
	var calls, afterFailure atomic.Int32
	var failed atomic.Bool
	failing := true
	c := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			calls.Add(1)
			if failed.Load() {
				afterFailure.Add(1)
			}
			if failing && obj.GetName() == "p-005" {
				return errTest
			}
			return c.Create(ctx, obj, opts...)
		},
	}).Build()
	a := NewApplier(c, "test", intentKey)
	// The canary, then up to 4 in flight: p-005 fails. Only creations already let out of the
	// window when its failure was taken in (its Done) may still reach the server: at most the 3
	// others of the window. (Counted from the request's failure instead, more may pass under
	// load: the window goes on while the failing answer is on its way back.)
	created, err := a.CreateAll(context.Background(), pods(40), 4, CreateHooks{Done: func(r CreateResult) {
		if r.Err != nil {
			failed.Store(true)
		}
	}})
	if !errors.Is(err, errTest) {
		t.Fatalf("CreateAll error = %v; want the injected failure", err)
	}
	// The job's CreateFailed event quotes it: the kind, not the Go type (*v1.Pod).
	if want := "creating Pod ns/p-005: "; !strings.Contains(err.Error(), want) {
		t.Errorf("CreateAll error = %q; want it to say %q", err, want)
	}
	if n := calls.Load(); n < 6 || afterFailure.Load() > 3 || created != int(n)-1 {
		t.Fatalf("created %d in %d requests, %d after the failure; want p-000..p-005 tried, at most 3 after it, every other one created",
			created, n, afterFailure.Load())
	}
	// A retry, as the next reconcile makes it, gives the same list: existing objects count as done.
	failing = false
	first := created
	var existed atomic.Int32
	created, err = a.CreateAll(context.Background(), pods(40), 4, CreateHooks{Done: func(r CreateResult) {
		if !r.Created && r.Err == nil {
			existed.Add(1)
		}
	}})
	if err != nil || created != 40-first || int(existed.Load()) != first {
		t.Fatalf("retry created %d (err %v), found %d existing; want %d created, %d existing", created, err, existed.Load(), 40-first, first)
	}
	var list corev1.PodList
	if err := c.List(context.Background(), &list); err != nil || len(list.Items) != 40 {
		t.Fatalf("%d pods exist (%v); want 40", len(list.Items), err)
	}
}

func TestCreateAllStopsWhenProceedSaysSo(t *testing.T) {
	c := fake.NewClientBuilder().Build()
	a := NewApplier(c, "test", intentKey)
	errGone := errors.New("the owner is gone")
	var asked atomic.Int32
	// Asked after the canary and after every 4 more: the owner goes after the first 4.
	created, err := a.CreateAll(context.Background(), pods(40), 4, CreateHooks{Proceed: func() error {
		if asked.Add(1) > 1 {
			return errGone
		}
		return nil
	}})
	if !errors.Is(err, errGone) || created != 5 || asked.Load() != 2 {
		t.Fatalf("CreateAll = %d, %v after %d questions; want 5 (the canary and 4 more), the owner's error, 2 questions", created, err, asked.Load())
	}
	var list corev1.PodList
	if err := c.List(context.Background(), &list); err != nil || len(list.Items) != 5 {
		t.Fatalf("%d pods exist (%v); want 5", len(list.Items), err)
	}
}

// Creations sent but not answered (waiting behind a write gate, or a slow API server) are
// cancelled as soon as the caller cancels the context, rather than all let through, and
// CreateAll says why.
func TestCreateAllStopsAtOnceWhenItsContextIsCancelled(t *testing.T) {
	c := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if obj.GetName() != "p-000" { // all but the canary wait a second for their answer
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(time.Second):
				}
			}
			return c.Create(ctx, obj, opts...)
		},
	}).Build()
	a := NewApplier(c, "test", intentKey)
	errGone := errors.New("the owner is gone")
	ctx, cancel := context.WithCancelCause(context.Background())
	time.AfterFunc(150*time.Millisecond, func() { cancel(errGone) })
	start := time.Now()
	var asked atomic.Int32
	created, err := a.CreateAll(ctx, pods(200), 64, CreateHooks{Proceed: func() error { asked.Add(1); return nil }})
	took := time.Since(start)
	if !errors.Is(err, errGone) || created != 1 || took >= time.Second {
		t.Fatalf("CreateAll = %d, %v in %s; want the canary only, the cause, well within the second the other 64 waited", created, err, took)
	}
	if asked.Load() != 1 {
		t.Errorf("Proceed asked %d times; want once, after the canary (the window never freed a slot)", asked.Load())
	}
}

func service(port int32) *corev1.Service {
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "j"},
		Spec:       corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Ports: []corev1.ServicePort{{Name: "p", Port: port}}},
	}
}

// applyCounter is a fake client that counts server-side apply requests.
func applyCounter(objs ...client.Object) (client.Client, *atomic.Int32) {
	var n atomic.Int32
	c := fake.NewClientBuilder().WithObjects(objs...).WithInterceptorFuncs(interceptor.Funcs{
		Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			n.Add(1)
			return c.Apply(ctx, obj, opts...)
		},
	}).Build()
	return c, &n
}

func TestApplyWritesOnlyWhenTheIntentChanges(t *testing.T) {
	cases := map[string]struct {
		liveIntent func(a *Applier) string // the live object's annotation; "" for no live object
		desired    *corev1.Service
		wantWrite  bool
	}{
		"no live object is created": {
			liveIntent: func(*Applier) string { return "" },
			desired:    service(80),
			wantWrite:  true,
		},
		"a live object with the same intent is left alone": {
			liveIntent: func(a *Applier) string { _, h, _ := a.intent(service(80)); return h },
			desired:    service(80),
		},
		"a live object with another intent is applied": {
			liveIntent: func(a *Applier) string { _, h, _ := a.intent(service(80)); return h },
			desired:    service(81),
			wantWrite:  true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c, n := applyCounter()
			a := NewApplier(c, "test", intentKey)
			var live client.Object
			if h := tc.liveIntent(a); h != "" {
				s := service(80)
				s.Annotations = map[string]string{intentKey: h}
				live = s
			}
			wrote, err := a.Apply(context.Background(), tc.desired, live)
			if err != nil {
				t.Fatal(err)
			}
			if wrote != tc.wantWrite || (n.Load() == 1) != tc.wantWrite {
				t.Errorf("Apply wrote = %v (%d requests); want %v", wrote, n.Load(), tc.wantWrite)
			}
		})
	}
}

func TestApplyTakesANilPointerForNoLiveObject(t *testing.T) {
	c, n := applyCounter()
	a := NewApplier(c, "test", intentKey)
	var missing *corev1.Service // as a cache lookup that found nothing returns it
	if _, err := a.Apply(context.Background(), service(80), missing); err != nil || n.Load() != 1 {
		t.Fatalf("Apply with a nil *Service as the live object: %v, %d requests; want it applied once", err, n.Load())
	}
}

func TestIntentHashIsStableAndIgnoresServerFields(t *testing.T) {
	a := NewApplier(nil, "test", intentKey)
	s1, s2 := service(80), service(80)
	s2.ResourceVersion, s2.CreationTimestamp = "42", metav1.Now()
	s2.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "10.0.0.1"}}
	_, h1, _ := a.intent(s1)
	_, h2, _ := a.intent(s2)
	if h1 != h2 {
		t.Errorf("intent hashes differ (%s, %s) for objects that differ only in server-set fields", h1, h2)
	}
	_, h3, _ := a.intent(service(81))
	if h1 == h3 {
		t.Error("intent hash did not change with the port")
	}
}

func TestApplyUncachedRemembersWhatItApplied(t *testing.T) {
	c, n := applyCounter()
	a := NewApplier(c, "test", intentKey)
	for range 3 {
		if _, err := a.ApplyUncached(context.Background(), service(80)); err != nil {
			t.Fatal(err)
		}
	}
	a.Forget(service(80))
	if _, err := a.ApplyUncached(context.Background(), service(80)); err != nil {
		t.Fatal(err)
	}
	if n.Load() != 2 {
		t.Errorf("%d apply requests; want 2 (the first, and one after Forget)", n.Load())
	}
}

func TestDeleteHonoursTheUID(t *testing.T) {
	live := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "j-worker-0", UID: "new"}}
	var sent []*types.UID
	c := fake.NewClientBuilder().WithObjects(live).WithInterceptorFuncs(interceptor.Funcs{
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			o := (&client.DeleteOptions{}).ApplyOptions(opts)
			if o.Preconditions != nil {
				sent = append(sent, o.Preconditions.UID)
			}
			if o.Preconditions == nil || o.Preconditions.UID == nil || *o.Preconditions.UID != "new" {
				return apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, obj.GetName(), errors.New("uid mismatch"))
			}
			return c.Delete(ctx, obj, opts...)
		},
	}).Build()
	a := NewApplier(c, "test", intentKey)
	target := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "j-worker-0"}}
	if err := a.Delete(context.Background(), target, "old", false); err != nil {
		t.Fatalf("a stale delete (UID mismatch) must count as done, got %v", err)
	}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(live), &corev1.Pod{}); err != nil {
		t.Fatalf("the newer pod of the same name was deleted: %v", err)
	}
	if err := a.Delete(context.Background(), target, "new", false); err != nil {
		t.Fatal(err)
	}
	if err := a.Delete(context.Background(), target, "new", false); err != nil {
		t.Fatalf("deleting a pod that is gone must count as done, got %v", err)
	}
	want := []string{"old", "new", "new"}
	var got []string
	for _, u := range sent {
		got = append(got, string(*u))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("UID preconditions sent (-want +got):\n%s", diff)
	}
}

func TestDeleteUnchangedHonoursTheVersion(t *testing.T) {
	live := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "j-worker-0", UID: "u"}}
	c := fake.NewClientBuilder().WithObjects(live).Build()
	var read corev1.Pod
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(live), &read); err != nil {
		t.Fatal(err)
	}
	a := NewApplier(c, "test", intentKey)
	target := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "j-worker-0"}}
	if done, err := a.DeleteUnchanged(context.Background(), target, "u", read.ResourceVersion+"0"); done || err != nil {
		t.Fatalf("a deletion at another version: done %t, %v; want not done, no error", done, err)
	}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(live), &corev1.Pod{}); err != nil {
		t.Fatalf("the pod changed since was deleted: %v", err)
	}
	if done, err := a.DeleteUnchanged(context.Background(), target, "u", read.ResourceVersion); !done || err != nil {
		t.Fatalf("a deletion at the version read: done %t, %v; want done", done, err)
	}
	if done, err := a.DeleteUnchanged(context.Background(), target, "u", read.ResourceVersion); done || err != nil {
		t.Fatalf("deleting a pod that is gone: done %t, %v; want not done, no error", done, err)
	}
}
