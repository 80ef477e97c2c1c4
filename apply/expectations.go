package apply

import (
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Expectations remember, per owner, the objects this process created or deleted that the cache
// may not show yet. A cache lags the API server; without them a controller that reads a stale
// list would create an object again (a duplicate pod, or AlreadyExists at best) or count a
// replica it has just deleted as still there and act on it twice. kube-controller-manager's Job
// and ReplicaSet controllers keep the same kind of record.
//
// Rather than refusing to act until the cache catches up, Observe corrects what the cache shows:
// objects created but not yet seen are added, objects deleted but still shown are marked as
// being deleted. Entries are dropped as soon as the cache reflects them, or after ttl in case an
// event was missed.
type Expectations struct {
	ttl time.Duration
	// trim, if set, reduces a created object before it is kept (the cache's transform).
	trim func(client.Object)

	mu    sync.Mutex
	owner map[string]*expected
}

type expected struct {
	// created are objects created and not yet seen, by name.
	created map[string]creation
	// deleted are objects deleted and still seen without a deletionTimestamp, by UID.
	deleted map[types.UID]time.Time
}

type creation struct {
	obj client.Object // nil while the request is in flight
	at  time.Time
}

// NewExpectations returns empty Expectations that forget an entry after ttl. trim, if not nil,
// is applied to each created object before it is kept.
func NewExpectations(ttl time.Duration, trim func(client.Object)) *Expectations {
	return &Expectations{ttl: ttl, trim: trim, owner: map[string]*expected{}}
}

func (e *Expectations) of(owner string) *expected {
	x := e.owner[owner]
	if x == nil {
		x = &expected{created: map[string]creation{}, deleted: map[types.UID]time.Time{}}
		e.owner[owner] = x
	}
	return x
}

// ExpectCreation records that obj is about to be created for owner.
func (e *Expectations) ExpectCreation(owner string, obj client.Object) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.of(owner).created[obj.GetName()] = creation{at: time.Now()}
}

// Created records the outcome of a creation: the object as the server returned it, or its
// removal from the expectations when the request failed or the object already existed (then
// the cache will show it, or it is gone).
func (e *Expectations) Created(owner string, res CreateResult) {
	e.mu.Lock()
	defer e.mu.Unlock()
	x := e.of(owner)
	name := res.Object.GetName()
	if !res.Created {
		delete(x.created, name)
		return
	}
	obj := res.Object.DeepCopyObject().(client.Object)
	if e.trim != nil {
		e.trim(obj)
	}
	x.created[name] = creation{obj: obj, at: x.created[name].at}
}

// ExpectDeletion records that the object uid is being deleted for owner. A creation of that
// object that was still expected is forgotten.
func (e *Expectations) ExpectDeletion(owner string, name string, uid types.UID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	x := e.of(owner)
	if c, ok := x.created[name]; ok && c.obj != nil && c.obj.GetUID() == uid {
		delete(x.created, name)
	}
	x.deleted[uid] = time.Now()
}

// Gone records that the watch saw the object uid, named name, deleted. A creation of it still
// expected is forgotten: the cache will never show an object deleted before the cache caught up
// with its creation, and keeping it would hide that it is missing until the ttl.
func (e *Expectations) Gone(owner string, name string, uid types.UID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	x := e.owner[owner]
	if x == nil {
		return
	}
	if c, ok := x.created[name]; ok && c.obj != nil && c.obj.GetUID() == uid {
		delete(x.created, name)
	}
}

// DeletionFailed forgets the deletion of uid: the object stays.
func (e *Expectations) DeletionFailed(owner string, uid types.UID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.of(owner).deleted, uid)
}

// Forget drops everything recorded for owner (it is gone).
func (e *Expectations) Forget(owner string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.owner, owner)
}

// Pending reports how many creations and deletions of owner the cache has not shown yet.
func (e *Expectations) Pending(owner string) (creations, deletions int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if x := e.owner[owner]; x != nil {
		return len(x.created), len(x.deleted)
	}
	return 0, 0
}

// Observe returns the owner's objects as they must be seen, given the cache's list of them:
// expectations the list already reflects (or that are older than the ttl) are dropped, objects
// created but missing from the list are added, and objects being deleted that the list still shows
// without a deletionTimestamp get one (now), on a copy. The cache's objects and the created ones
// are shared, not copied: the caller only reads them.
func Observe[P client.Object](e *Expectations, owner string, cached []P, now time.Time) []P {
	e.mu.Lock()
	defer e.mu.Unlock()
	x := e.owner[owner]
	if x == nil {
		return cached
	}
	byName := make(map[string]P, len(cached))
	byUID := make(map[types.UID]P, len(cached))
	for _, p := range cached {
		byName[p.GetName()] = p
		byUID[p.GetUID()] = p
	}
	out := cached
	copied := false
	for uid, at := range x.deleted {
		shown, ok := byUID[uid]
		if !ok || shown.GetDeletionTimestamp() != nil || now.Sub(at) > e.ttl {
			delete(x.deleted, uid)
			continue
		}
		if !copied {
			out, copied = append([]P(nil), cached...), true
		}
		for i, p := range out {
			if p.GetUID() == uid {
				marked := p.DeepCopyObject().(P)
				ts := metav1.NewTime(now)
				marked.SetDeletionTimestamp(&ts)
				out[i] = marked
			}
		}
	}
	for name, c := range x.created {
		if _, seen := byName[name]; seen || c.obj == nil || now.Sub(c.at) > e.ttl {
			delete(x.created, name)
			continue
		}
		p, ok := c.obj.(P)
		if !ok {
			delete(x.created, name)
			continue
		}
		if !copied {
			out, copied = append([]P(nil), cached...), true
		}
		out = append(out, p)
	}
	if len(x.created) == 0 && len(x.deleted) == 0 {
		delete(e.owner, owner)
	}
	return out
}
