package apply

import (
	"context"
	"errors"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// CreateResult is what became of one object CreateAll was given.
type CreateResult struct {
	Object client.Object
	// Created is true when this call created the object; false with a nil Err means it existed.
	Created bool
	Err     error
}

// CreateHooks are what CreateAll calls as it goes; each may be nil.
type CreateHooks struct {
	// Before is called for each object just before its request goes out (to record the
	// expectation of its creation).
	Before func(client.Object)
	// Done is called for each attempted object with its result.
	Done func(CreateResult)
	// Proceed is asked before each batch after the canary; an error stops CreateAll, which
	// returns it: the owner of the objects may have gone meanwhile (a job deleted while its
	// thousand pods are created must not get the rest).
	Proceed func() error
}

// CreateAll creates objs with POST, once each: one object first, as a canary, then batches of up
// to maxParallel at a time. A job whose creates all fail (a quota, a bad template, an admission
// webhook) costs one request per attempt rather than thousands, and a job that creates fine pays
// one round trip for the canary. (kube-controller-manager's Job controller doubles its batches
// from 1 instead: an 8-pod gang then waits four round trips rather than two.)
// It stops after the first batch with an error that is not AlreadyExists, or when hooks.Proceed
// says so; objects of later batches are not attempted and not reported. An object that already
// exists counts as done, so calling CreateAll again after a failure part-way never duplicates
// anything.
func (a *Applier) CreateAll(ctx context.Context, objs []client.Object, maxParallel int, hooks CreateHooks) (created int, err error) {
	if maxParallel < 1 {
		maxParallel = 1
	}
	before, done := hooks.Before, hooks.Done
	if before == nil {
		before = func(client.Object) {}
	}
	if done == nil {
		done = func(CreateResult) {}
	}
	var mu sync.Mutex
	var errs []error
	for start, size := 0, 1; start < len(objs); start, size = start+size, maxParallel {
		if start > 0 && hooks.Proceed != nil {
			if err := hooks.Proceed(); err != nil {
				return created, err
			}
		}
		batch := objs[start:min(start+size, len(objs))]
		var wg sync.WaitGroup
		for _, obj := range batch {
			before(obj)
			wg.Add(1)
			go func() {
				defer wg.Done()
				res := CreateResult{Object: obj}
				switch err := a.client.Create(ctx, obj, client.FieldOwner(a.fieldManager)); {
				case err == nil:
					res.Created = true
				case apierrors.IsAlreadyExists(err):
				default:
					res.Err = fmt.Errorf("creating %T %s/%s: %w", obj, obj.GetNamespace(), obj.GetName(), err)
				}
				mu.Lock()
				if res.Created {
					created++
				}
				if res.Err != nil {
					errs = append(errs, res.Err)
				}
				mu.Unlock()
				done(res)
			}()
		}
		wg.Wait()
		if len(errs) > 0 {
			return created, errors.Join(errs...)
		}
	}
	return created, nil
}
