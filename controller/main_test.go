package controller

import (
	"strings"
	"testing"
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
