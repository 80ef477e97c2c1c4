package controller

import (
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// The API server's refusal of a creation stays the job's answer until something is created or the
// refusal changes; a passing failure in between does not make it flap away and back.
func TestARefusalOutlivesPassingFailures(t *testing.T) {
	quota := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "j-worker-0", errors.New("exceeded quota: gpus"))
	timeout := apierrors.NewServerTimeout(schema.GroupResource{Resource: "pods"}, "create", 1)
	webhook := apierrors.NewInternalError(errors.New(`admission webhook "deny.example.com" denied the request`))
	steps := []struct {
		what    string
		created []string
		err     error
		want    string // "" for no refusal remembered
	}{
		{"a quota refuses the first pod", nil, quota, "exceeded quota"},
		{"the next try times out", nil, timeout, "exceeded quota"},
		{"a round with nothing to create", nil, nil, "exceeded quota"},
		{"the connection drops", nil, errors.New("connection refused"), "exceeded quota"},
		{"a webhook refuses instead", nil, webhook, "deny.example.com"},
		{"two pods go through, then a timeout", []string{"j-worker-0", "j-worker-1"}, timeout, ""},
		{"the quota again", nil, quota, "exceeded quota"},
		{"every pod goes through", []string{"j-worker-2"}, nil, ""},
	}
	for _, fn := range []struct {
		name     string
		remember func(r *jobReconciler, uid types.UID, created []string, err error)
		read     func(m *jobMemory) string
	}{
		{"pods", (*jobReconciler).rememberCreate, func(m *jobMemory) string { return m.createRefused.Message }},
		{"gang", func(r *jobReconciler, uid types.UID, created []string, err error) {
			if len(created) > 0 && err != nil {
				err = nil // one gang object: it went through or it did not
			}
			r.rememberGang(uid, err)
		}, func(m *jobMemory) string { return m.gangRefused }},
	} {
		r := &jobReconciler{jobs: map[types.UID]*jobMemory{}}
		for _, s := range steps {
			if fn.name == "gang" && s.err == nil && len(s.created) == 0 {
				continue // no gang apply without an answer: rememberGang is told of every apply
			}
			fn.remember(r, "uid", s.created, s.err)
			got := fn.read(r.memory("uid"))
			if (s.want == "") != (got == "") || !strings.Contains(got, s.want) {
				t.Errorf("%s: %s: remembered %q, want one naming %q", fn.name, s.what, got, s.want)
			}
		}
	}
}
