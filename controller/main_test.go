package controller

import (
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
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

// TestTheOperatorWithoutAKubeconfigSaysWhatToSet: run with no kubeconfig anywhere and outside a
// cluster, the operator names its flag and the places it looks, not client-go's hint at a
// KUBERNETES_MASTER variable nothing here reads.
func TestTheOperatorWithoutAKubeconfigSaysWhatToSet(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	t.Setenv("HOME", t.TempDir()) // no ~/.kube/config
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("KUBERNETES_SERVICE_PORT", "")
	err := Run(t.Context(), Options{MetricsAddr: "0", HealthAddr: "0", PprofAddr: "0"})
	if err == nil {
		t.Fatal("Run with no kubeconfig: no error")
	}
	for _, want := range []string{"--kubeconfig", "$KUBECONFIG", "~/.kube/config"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Run with no kubeconfig: %q; want it to name %s", err, want)
		}
	}
	if strings.Contains(err.Error(), "KUBERNETES_MASTER") {
		t.Errorf("Run with no kubeconfig: %q names KUBERNETES_MASTER, which the operator never reads", err)
	}
}

// TestATakenPortIsNamedByItsFlag: a metrics or health address another process holds (a second
// operator on the machine, anything on 8080) fails the operator before it starts, naming the flag
// and how to turn the endpoint off; controller-runtime found the metrics port taken only after
// the caches had started, in words that name no flag.
func TestATakenPortIsNamedByItsFlag(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	// An API server nobody answers at: the operator must fail on the port before it asks one.
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	for _, tc := range []struct {
		flag string
		o    Options
	}{
		{"--metrics-bind-address", Options{MetricsAddr: taken.Addr().String(), HealthAddr: "0", PprofAddr: "0"}},
		{"--health-probe-bind-address", Options{MetricsAddr: "0", HealthAddr: taken.Addr().String(), PprofAddr: "0"}},
	} {
		tc.o.Kubeconfig = kubeconfig
		err := Run(t.Context(), tc.o)
		if err == nil || !strings.Contains(err.Error(), tc.flag+"="+taken.Addr().String()) || !strings.Contains(err.Error(), "0 to turn it off") {
			t.Errorf("%s taken: %v; want an error naming the flag, its address and how to turn it off", tc.flag, err)
		}
	}
}
