package apply

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/metadata"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// metadataDeleter sends deletions through client-go's metadata client, which reads the API
// server's answer only for its status code.
//
// Why: controller-runtime's client decodes a deletion's answer (the deleted object), encodes it
// as JSON and decodes that into an unstructured object it hands back, which Delete never reads:
// in a burst of 200 Kubeflow jobs of 8 pods, whose clean-up deletes 1,400 pods and 1,400
// Services, that was 0.4 of the 0.63 CPU-seconds the deletions cost in a 60 s profile.
type metadataDeleter struct {
	client metadata.Interface
	mapper meta.RESTMapper
	scheme *runtime.Scheme
}

// DeleteThroughMetadata makes a's deletions go through md: obj's resource is found by its kind,
// from obj or else scheme, through mapper. md's requests take the same path (rest.Config, and so
// the write gate) as the client's.
func (a *Applier) DeleteThroughMetadata(md metadata.Interface, mapper meta.RESTMapper, scheme *runtime.Scheme) {
	a.deleter = &metadataDeleter{client: md, mapper: mapper, scheme: scheme}
}

func (d *metadataDeleter) delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	gvk, err := apiutil.GVKForObject(obj, d.scheme)
	if err != nil {
		return err
	}
	mapping, err := d.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return fmt.Errorf("finding the resource of %s: %w", gvk, err)
	}
	o := (&client.DeleteOptions{}).ApplyOptions(opts).AsDeleteOptions()
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		return d.client.Resource(mapping.Resource).Namespace(obj.GetNamespace()).Delete(ctx, obj.GetName(), *o)
	}
	return d.client.Resource(mapping.Resource).Delete(ctx, obj.GetName(), *o)
}
