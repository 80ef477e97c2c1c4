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
	// Exists is called for an object the server says exists already: nil counts it as done (a
	// retry of an earlier creation); an error is the object's result, as a refusal (another
	// owner's object of that name).
	Exists func(client.Object) error
	// Proceed is asked after the canary and every maxParallel objects (a cheap question: the
	// owner of the objects may have gone meanwhile; a job deleted while its thousand pods are
	// created must not get the rest); an error stops CreateAll, which returns it. To stop the
	// creations already sent and still waiting (behind the WriteGate, or for an answer) at once,
	// the caller cancels ctx instead (context.WithCancelCause): CreateAll returns the cause.
	Proceed func() error
}

// CreateAll creates objs with POST, once each: one object first, as a canary, then the rest with
// up to maxParallel in flight, a new one sent as soon as one is answered (a window, not batches:
// a batch waits for its slowest answer, which behind a shared WriteGate is the last one let
// through). A job whose creates all fail (a quota, a bad template, an admission webhook) costs one
// request per attempt rather than thousands, and a job that creates fine pays one round trip for
// the canary. (kube-controller-manager's Job controller doubles its batches from 1 instead: an
// 8-pod gang then waits four round trips rather than two.)
// After an error that is not AlreadyExists nothing more is sent; objects not sent are not
// reported. hooks.Proceed is asked as the first object after the canary is sent and then as every
// maxParallel-th more is (once a slot in the window is free): when it says stop, the writes in
// flight are cancelled, nothing more is sent, and CreateAll returns its error; so it does with
// ctx's cause when the caller cancels ctx. An object that already exists counts as done, so
// calling CreateAll again after a failure part-way never duplicates anything.
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
	failed := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(errs) > 0
	}
	create := func(obj client.Object) {
		res := CreateResult{Object: obj}
		switch err := a.client.Create(ctx, obj, client.FieldOwner(a.fieldManager)); {
		case err == nil:
			res.Created = true
		case apierrors.IsAlreadyExists(err):
			if hooks.Exists != nil {
				res.Err = hooks.Exists(obj)
			}
		default:
			res.Err = fmt.Errorf("creating %s %s/%s: %w", kindOf(obj), obj.GetNamespace(), obj.GetName(), err)
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
	}
	if len(objs) == 0 {
		return 0, nil
	}
	before(objs[0])
	create(objs[0]) // the canary
	if failed() {
		return created, errors.Join(errs...)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	// stoppedBy is why no more is sent: Proceed said stop, or the caller cancelled ctx.
	stoppedBy := func() error { return context.Cause(ctx) }
	slots := make(chan struct{}, maxParallel)
	var wg sync.WaitGroup
	var stopped error
	for i, obj := range objs[1:] {
		slots <- struct{}{}
		if failed() {
			<-slots
			break
		}
		if stopped = stoppedBy(); stopped != nil {
			<-slots
			break
		}
		if i%maxParallel == 0 && hooks.Proceed != nil {
			if stopped = hooks.Proceed(); stopped != nil {
				cancel(stopped)
				<-slots
				break
			}
		}
		before(obj)
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			create(obj)
		}()
	}
	wg.Wait()
	if stopped == nil {
		stopped = stoppedBy() // cancelled while the last creations waited
	}
	if stopped != nil {
		return created, stopped
	}
	return created, errors.Join(errs...)
}
