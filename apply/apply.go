package apply

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Applier writes objects under one field manager.
type Applier struct {
	client client.Client
	// fieldManager owns every field Apply sets.
	fieldManager string
	// intentKey is the annotation that carries the hash of the applied intent.
	intentKey string

	// metadata, when set, sends deletions and status applies instead of client
	// (WriteThroughMetadata).
	metadata *metadataWriter

	mu sync.Mutex
	// applied remembers the intent last applied to objects that are not read from a cache
	// (ApplyUncached), by GroupVersionKind and name.
	applied map[objectKey]string
}

type objectKey struct {
	gvk       string
	namespace string
	name      string
}

// NewApplier returns an Applier that writes as fieldManager and records its intent in the
// annotation intentKey.
func NewApplier(c client.Client, fieldManager, intentKey string) *Applier {
	return &Applier{client: c, fieldManager: fieldManager, intentKey: intentKey, applied: map[objectKey]string{}}
}

// Apply makes live hold desired's fields, with server-side apply. live is the object as the
// cache has it, or nil when the cache has none. It writes nothing, and returns false, when live
// already carries desired's intent hash. desired must have its apiVersion and kind set.
func (a *Applier) Apply(ctx context.Context, desired client.Object, live client.Object) (bool, error) {
	body, hash, err := a.intent(desired)
	if err != nil {
		return false, err
	}
	if !isNil(live) && live.GetAnnotations()[a.intentKey] == hash {
		return false, nil
	}
	return true, a.patch(ctx, body)
}

// isNil reports whether obj is nil, or a nil pointer in the interface.
func isNil(obj client.Object) bool {
	if obj == nil {
		return true
	}
	v := reflect.ValueOf(obj)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// ApplyUncached is Apply for kinds the caller does not watch (their CRD may come and go): it
// skips the request when this Applier already applied the same intent to the object. After a
// restart each such object is applied once more, which changes nothing on the server.
func (a *Applier) ApplyUncached(ctx context.Context, desired client.Object) (bool, error) {
	body, hash, err := a.intent(desired)
	if err != nil {
		return false, err
	}
	key := keyOf(body)
	a.mu.Lock()
	same := a.applied[key] == hash
	a.mu.Unlock()
	if same {
		return false, nil
	}
	if err := a.patch(ctx, body); err != nil {
		return true, err
	}
	a.mu.Lock()
	a.applied[key] = hash
	a.mu.Unlock()
	return true, nil
}

// Forget drops what ApplyUncached remembers of an object, e.g. once it is deleted.
func (a *Applier) Forget(obj client.Object) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.applied, objectKey{obj.GetObjectKind().GroupVersionKind().String(), obj.GetNamespace(), obj.GetName()})
}

func keyOf(u *unstructured.Unstructured) objectKey {
	return objectKey{u.GroupVersionKind().String(), u.GetNamespace(), u.GetName()}
}

// intent is the apply body of desired: its fields without status or server-set metadata, with
// the hash of those fields in the intent annotation.
func (a *Applier) intent(desired client.Object) (*unstructured.Unstructured, string, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(desired)
	if err != nil {
		return nil, "", fmt.Errorf("converting %s %s: %w", kindOf(desired), desired.GetName(), err)
	}
	u := &unstructured.Unstructured{Object: m}
	if u.GetAPIVersion() == "" || u.GetKind() == "" {
		return nil, "", fmt.Errorf("apply %s: apiVersion and kind must be set", desired.GetName())
	}
	delete(u.Object, "status")
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(u.Object, "metadata", "resourceVersion")
	unstructured.RemoveNestedField(u.Object, "metadata", "managedFields")
	data, err := json.Marshal(u.Object) // map keys are sorted: the same intent, the same bytes
	if err != nil {
		return nil, "", err
	}
	sum := sha256.Sum256(data)
	hash := hex.EncodeToString(sum[:12])
	ann := u.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[a.intentKey] = hash
	u.SetAnnotations(ann)
	return u, hash, nil
}

func (a *Applier) patch(ctx context.Context, u *unstructured.Unstructured) error {
	if err := a.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(a.fieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("applying %s %s/%s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
	}
	return nil
}

// ApplyStatus writes obj's status subresource with server-side apply as fieldManager. The body
// is the object's apiVersion, kind, name, namespace and status only, so the manager owns exactly
// the status fields it sends. No resourceVersion is sent, so the write never fails with 409
// Conflict. obj must have its apiVersion and kind set. It returns the resourceVersion the write
// gave the object.
func (a *Applier) ApplyStatus(ctx context.Context, obj client.Object, status any, fieldManager string) (string, error) {
	gvk := obj.GetObjectKind().GroupVersionKind()
	if a.metadata != nil {
		rv, err := a.metadata.applyStatus(ctx, obj, status, fieldManager)
		if err != nil {
			return "", fmt.Errorf("applying the status of %s %s/%s: %w", gvk.Kind, obj.GetNamespace(), obj.GetName(), err)
		}
		return rv, nil
	}
	fields, err := statusFields(status)
	if err != nil {
		return "", err
	}
	u := &unstructured.Unstructured{Object: map[string]any{"status": fields}}
	u.SetGroupVersionKind(gvk)
	u.SetNamespace(obj.GetNamespace())
	u.SetName(obj.GetName())
	if err := a.client.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u),
		client.FieldOwner(fieldManager), client.ForceOwnership); err != nil {
		return "", fmt.Errorf("applying the status of %s %s/%s: %w", gvk.Kind, obj.GetNamespace(), obj.GetName(), err)
	}
	return u.GetResourceVersion(), nil
}

// statusFields is status as the JSON object a request carries.
func statusFields(status any) (map[string]any, error) {
	data, err := json.Marshal(status)
	if err != nil {
		return nil, err
	}
	var fields map[string]any
	return fields, json.Unmarshal(data, &fields)
}

// ReplaceStatus writes obj's status subresource as exactly status: a JSON merge patch that sets
// every field status holds, whatever the object has, and removes every other status field obj
// holds, whoever wrote it. It is for an object whose status another controller replaces whole
// with merge patches too (Kueue's MultiKueue copying a worker's status), where an apply would
// leave that controller's fields in place. Every field is sent, not only those that differ from
// obj: a typed object read back shows a status never written as zero values, so a patch of the
// differences would leave a new object's required counts (zero) out, and be refused. It returns
// the resourceVersion the write gave the object.
func (a *Applier) ReplaceStatus(ctx context.Context, obj client.Object, status any, fieldManager string) (string, error) {
	gvk := obj.GetObjectKind().GroupVersionKind()
	was, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return "", err
	}
	fields, err := statusFields(status)
	if err != nil {
		return "", err
	}
	before, _ := was["status"].(map[string]any)
	body, err := json.Marshal(map[string]any{"status": replacing(before, fields)})
	if err != nil {
		return "", err
	}
	after := &unstructured.Unstructured{}
	after.SetGroupVersionKind(gvk)
	after.SetNamespace(obj.GetNamespace())
	after.SetName(obj.GetName())
	if err := a.client.Status().Patch(ctx, after, client.RawPatch(types.MergePatchType, body), client.FieldOwner(fieldManager)); err != nil {
		return "", fmt.Errorf("replacing the status of %s %s/%s: %w", gvk.Kind, obj.GetNamespace(), obj.GetName(), err)
	}
	return after.GetResourceVersion(), nil
}

// replacing is the merge patch that turns before into after: every field of after, and null for
// each field of before that after lacks, at every depth of objects (lists are replaced whole).
func replacing(before, after map[string]any) map[string]any {
	patch := make(map[string]any, len(after)+len(before))
	for k, v := range after {
		patch[k] = v
		if was, ok := before[k].(map[string]any); ok {
			if now, ok := v.(map[string]any); ok {
				patch[k] = replacing(was, now)
			}
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			patch[k] = nil
		}
	}
	return patch
}

// Delete deletes obj if it still has uid. A zero grace period is used when force is set (for an
// object whose node is gone and would otherwise stay Terminating). Gone already, or replaced by a
// newer object of the same name, counts as done.
func (a *Applier) Delete(ctx context.Context, obj client.Object, uid types.UID, force bool) error {
	opts := []client.DeleteOption{client.Preconditions{UID: &uid}, client.PropagationPolicy(metav1.DeletePropagationBackground)}
	if force {
		opts = append(opts, client.GracePeriodSeconds(0))
	}
	switch err := a.send(ctx, obj, opts...); {
	case err == nil, apierrors.IsNotFound(err):
		return nil
	case apierrors.IsConflict(err):
		return nil // the UID precondition failed: a newer object holds the name
	default:
		return fmt.Errorf("deleting %s %s/%s: %w", kindOf(obj), obj.GetNamespace(), obj.GetName(), err)
	}
}

// DeleteUnchanged deletes obj only if it is still the version read, of uid at resourceVersion,
// and reports whether it did. Gone already, or changed since (another writer acted on it), is no
// error: the caller leaves it, or reads it again.
func (a *Applier) DeleteUnchanged(ctx context.Context, obj client.Object, uid types.UID, resourceVersion string) (bool, error) {
	err := a.send(ctx, obj, client.Preconditions{UID: &uid, ResourceVersion: &resourceVersion}, client.PropagationPolicy(metav1.DeletePropagationBackground))
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		return false, nil
	}
	return false, fmt.Errorf("deleting %s %s/%s: %w", kindOf(obj), obj.GetNamespace(), obj.GetName(), err)
}

// send sends obj's deletion.
func (a *Applier) send(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	if a.metadata != nil {
		return a.metadata.delete(ctx, obj, opts...)
	}
	return a.client.Delete(ctx, obj, opts...)
}

// kindOf names obj's kind for a message a user reads (an event quotes it): its GroupVersionKind's
// kind when set, else its Go type's name (Pod, not *v1.Pod).
func kindOf(obj client.Object) string {
	if k := obj.GetObjectKind().GroupVersionKind().Kind; k != "" {
		return k
	}
	t := reflect.TypeOf(obj)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Name()
}
