package controller

import (
	"net/http/httptest"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/cache/informertest"
)

// TestTheOperatorRefusesAnArgument: an argument that is no flag (a verb after an operator flag,
// trainyard --leader-elect get) is refused before anything starts, not ignored by an operator
// that then runs beside the cluster's own.
func TestTheOperatorRefusesAnArgument(t *testing.T) {
	err := Main([]string{"--metrics-bind-address=0", "--health-probe-bind-address=0", "get"})
	if err == nil || !strings.Contains(err.Error(), `unexpected argument "get"`) {
		t.Fatalf("Main with an argument: %v; want unexpected argument \"get\"", err)
	}
}

// TestReadyOnlyOnceTheCachesSynced: /readyz fails while a cache has not synced (a watch refused),
// rather than answering 200 while no controller can start.
func TestReadyOnlyOnceTheCachesSynced(t *testing.T) {
	for _, synced := range []bool{false, true} {
		check := cachesSynced(&informertest.FakeInformers{Synced: &synced})
		err := check(httptest.NewRequest("GET", "/readyz", nil))
		if (err == nil) != synced {
			t.Errorf("caches synced %v: readyz error %v", synced, err)
		}
	}
}
