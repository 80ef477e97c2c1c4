package controller

import (
	"context"
	"reflect"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
)

// goneKinds is the caches' watch error handler. A watch whose kind the API server no longer
// serves (its CRD deleted while the operator runs: Kueue's, a kubeflow.org kind's) fails at every
// retry of its reflector, and client-go's handler logged each failure as an error, for as long as
// the operator ran (Kueue's CRDs deleted: 7 errors in the first 2 minutes, then one a minute or
// so). A kind gone is said once per process, as information; every other error is client-go's
// handler's. The reflector retries as before, so a kind installed again is watched again.
type goneKinds struct {
	mu   sync.Mutex
	said map[string]bool // by the reflector's type description
	// next handles every other error (client-go's default handler).
	next func(context.Context, *toolscache.Reflector, error)
	// info logs the news (ctrl.Log's "cache" logger).
	info func(msg string, keysAndValues ...any)
}

// watchErrors handles the watch errors of the operator's caches (cacheOptions, Kueue's cache).
var watchErrors = newGoneKinds()

func newGoneKinds() *goneKinds {
	return &goneKinds{said: map[string]bool{}, next: toolscache.DefaultWatchErrorHandler, info: ctrl.Log.WithName("cache").Info}
}

func (g *goneKinds) handle(ctx context.Context, r *toolscache.Reflector, err error) {
	if !apierrors.IsNotFound(err) && !meta.IsNoMatchError(err) {
		g.next(ctx, r, err)
		return
	}
	g.mu.Lock()
	said := g.said[r.TypeDescription()]
	g.said[r.TypeDescription()] = true
	g.mu.Unlock()
	if !said {
		g.info("the API server no longer serves a kind the operator watches (its CRD was deleted?): watched again once it is back",
			"kind", watchedKind(r.TypeDescription()), "error", err.Error())
	}
}

// watchedKind names the kind of a reflector's type description: client-go describes a typed
// object by its Go type (*v1beta1.PyTorchTrainingJob), which the log said as it was; it is
// PyTorchTrainingJob.batch.tensorstack.dev. An unstructured object's description is its group,
// version and kind already, and is kept.
func watchedKind(description string) string {
	for gvk, t := range Scheme().AllKnownTypes() {
		if reflect.PointerTo(t).String() == description {
			return gvk.GroupKind().String()
		}
	}
	return description
}
