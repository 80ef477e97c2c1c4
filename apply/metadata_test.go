package apply

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// A deletion through the metadata client: the request the API server gets, and how its answers
// are read (gone already and a newer object of the name count as done; others are errors).
func TestDeleteThroughMetadata(t *testing.T) {
	type request struct {
		Method, Path string
		UID          string
		Propagation  metav1.DeletionPropagation
		Grace        *int64
	}
	var got []request
	answers := []int{http.StatusOK, http.StatusNotFound, http.StatusConflict, http.StatusInternalServerError, http.StatusOK}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var o metav1.DeleteOptions
		if err := json.Unmarshal(body, &o); err != nil {
			t.Errorf("the body is no DeleteOptions: %v: %s", err, body)
		}
		req := request{Method: r.Method, Path: r.URL.Path, Propagation: *o.PropagationPolicy, Grace: o.GracePeriodSeconds}
		if o.Preconditions != nil && o.Preconditions.UID != nil {
			req.UID = string(*o.Preconditions.UID)
		}
		code := answers[len(got)]
		got = append(got, req)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		status := metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess, Code: int32(code)}
		switch code {
		case http.StatusNotFound:
			status.Status, status.Reason = metav1.StatusFailure, metav1.StatusReasonNotFound
		case http.StatusConflict:
			status.Status, status.Reason = metav1.StatusFailure, metav1.StatusReasonConflict
		case http.StatusInternalServerError:
			status.Status, status.Reason = metav1.StatusFailure, metav1.StatusReasonInternalError
		}
		_ = json.NewEncoder(w).Encode(status)
	}))
	defer srv.Close()

	a := metadataApplier(t, srv.URL)

	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "j-worker-0"}}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	for i, tc := range []struct {
		obj     *corev1.Pod
		node    bool
		force   bool
		wantErr bool
	}{
		{obj: pod},                // deleted
		{obj: pod},                // gone already: done
		{obj: pod},                // the UID precondition failed: done
		{obj: pod, wantErr: true}, // the server failed
		{node: true, force: true}, // a cluster-scoped kind, forced
	} {
		var err error
		if tc.node {
			err = a.Delete(context.Background(), node, "u", tc.force)
		} else {
			err = a.Delete(context.Background(), tc.obj, "u", tc.force)
		}
		if (err != nil) != tc.wantErr {
			t.Errorf("deletion %d (answered %d): error %v; want an error: %v", i, answers[i], err, tc.wantErr)
		}
	}
	zero := int64(0)
	podReq := request{Method: http.MethodDelete, Path: "/api/v1/namespaces/ns/pods/j-worker-0", UID: "u", Propagation: metav1.DeletePropagationBackground}
	want := []request{podReq, podReq, podReq, podReq,
		{Method: http.MethodDelete, Path: "/api/v1/nodes/n1", UID: "u", Propagation: metav1.DeletePropagationBackground, Grace: &zero}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}

// A status apply through the metadata client: a server-side apply of the status subresource,
// ownership forced, whose body is the object's identity and status only; the answer is asked
// for as metadata only, and its resourceVersion returned.
func TestApplyStatusThroughMetadata(t *testing.T) {
	type request struct {
		Method, Path, ContentType, FieldManager, Force string
		AsMetadata                                     bool
		Body                                           map[string]any
	}
	var got []request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		req := request{Method: r.Method, Path: r.URL.Path, ContentType: r.Header.Get("Content-Type"),
			FieldManager: r.URL.Query().Get("fieldManager"), Force: r.URL.Query().Get("force"),
			AsMetadata: strings.Contains(r.Header.Get("Accept"), "as=PartialObjectMetadata")}
		if err := json.Unmarshal(raw, &req.Body); err != nil {
			t.Errorf("the body is no JSON: %v: %s", err, raw)
		}
		got = append(got, req)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(metav1.PartialObjectMetadata{
			TypeMeta:   metav1.TypeMeta{Kind: "PartialObjectMetadata", APIVersion: "meta.k8s.io/v1"},
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "j", ResourceVersion: "42"}})
	}))
	defer srv.Close()

	a := metadataApplier(t, srv.URL)

	// A pod stands in for a job: what matters is a namespaced kind with a status.
	obj := &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "j"}}
	rv, err := a.ApplyStatus(context.Background(), obj, map[string]any{"phase": "Running"}, "status-owner")
	if err != nil {
		t.Fatal(err)
	}
	if rv != "42" {
		t.Errorf("resourceVersion %q; want the answer's 42", rv)
	}
	want := []request{{Method: http.MethodPatch, Path: "/api/v1/namespaces/ns/pods/j/status",
		ContentType: "application/apply-patch+yaml", FieldManager: "status-owner", Force: "true", AsMetadata: true,
		Body: map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "j", "namespace": "ns"},
			"status": map[string]any{"phase": "Running"}}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}

// metadataApplier is an Applier whose deletions and status applies go to the server at url,
// which knows Pods (namespaced) and Nodes (cluster-scoped).
func metadataApplier(t *testing.T, url string) *Applier {
	t.Helper()
	md, err := metadata.NewForConfig(&rest.Config{Host: url})
	if err != nil {
		t.Fatal(err)
	}
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(corev1.SchemeGroupVersion.WithKind("Pod"), meta.RESTScopeNamespace)
	mapper.Add(corev1.SchemeGroupVersion.WithKind("Node"), meta.RESTScopeRoot)
	a := NewApplier(fake.NewClientBuilder().Build(), "test", intentKey)
	a.WriteThroughMetadata(md, mapper, scheme.Scheme)
	return a
}
