package controller

import (
	"fmt"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// The start-up log names each setting by the flag a user sets, with the flag's value: it said qps
// and burst for --kube-api-qps and --kube-api-burst, and camelCase names for the others.
func TestTheStartUpLogNamesTheFlags(t *testing.T) {
	var o Options
	fs := NewFlagSet(&o, &zap.Options{})
	if err := fs.Parse([]string{"--kube-api-qps=7", "--kube-api-burst=9", "--status-batch-interval=3s", "--leader-elect", "--leader-election-namespace=x"}); err != nil {
		t.Fatal(err)
	}
	kv := settings(o)
	if len(kv)%2 != 0 {
		t.Fatalf("odd key-value list: %v", kv)
	}
	for i := 0; i < len(kv); i += 2 {
		key, _ := kv[i].(string)
		f := fs.Lookup(key)
		if f == nil {
			t.Errorf("key %q is no flag of the operator", key)
			continue
		}
		if got := fmt.Sprint(kv[i+1]); got != f.Value.String() {
			t.Errorf("--%s: logged %s; the flag's value is %s", key, got, f.Value.String())
		}
	}
}
