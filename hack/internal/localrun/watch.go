package localrun

import (
	"context"
	"errors"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Observer is told of every add, update and delete of one kind of object, with the object (a
// deletion's last known state when the watch missed the delete itself).
type Observer struct {
	Object client.Object
	// Selector, when set, limits the watch to objects with matching labels.
	Selector labels.Selector
	Observe  func(obj client.Object, deleted bool)
}

// Watch starts informers on the namespace's objects of each observer's kind, managed fields
// stripped, and waits up to a minute for them to sync. Cancelling ctx stops them.
func (conn Connection) Watch(ctx context.Context, namespace string, observers ...Observer) error {
	byObject := map[client.Object]cache.ByObject{}
	for _, o := range observers {
		if o.Selector != nil {
			byObject[o.Object] = cache.ByObject{Label: o.Selector}
		}
	}
	c, err := cache.New(conn.Config, cache.Options{
		Scheme:            conn.Scheme,
		DefaultNamespaces: map[string]cache.Config{namespace: {}},
		DefaultTransform:  cache.TransformStripManagedFields(),
		ByObject:          byObject,
	})
	if err != nil {
		return err
	}
	for _, o := range observers {
		inf, err := c.GetInformer(ctx, o.Object)
		if err != nil {
			return err
		}
		observe := func(obj any, deleted bool) {
			if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj, deleted = tomb.Obj, true
			}
			if co, ok := obj.(client.Object); ok {
				o.Observe(co, deleted)
			}
		}
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { observe(obj, false) },
			UpdateFunc: func(_, obj any) { observe(obj, false) },
			DeleteFunc: func(obj any) { observe(obj, true) },
		}); err != nil {
			return err
		}
	}
	go func() { _ = c.Start(ctx) }()
	syncCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if !c.WaitForCacheSync(syncCtx) {
		return errors.New("the watches did not sync within a minute")
	}
	return nil
}
