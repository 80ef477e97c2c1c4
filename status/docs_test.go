package status

import (
	"os"
	"strings"
	"testing"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
	"github.com/trainyard/trainyard/render"
)

// waitingReasons are the Waiting condition's reasons besides the kubelet's (kubeletWaitingReasons,
// passed on as they come): waitingCause's own, and those of render's Blocked and Queued. A reason
// added to either belongs here and in the troubleshooting table.
var waitingReasons = []string{
	ReasonInvalidSpec, batch.ReasonPodGroupCRDMissing,
	batch.ReasonQueued, render.ReasonNotQueued, render.ReasonNotDispatched, render.ReasonNameConflict, ReasonNotScheduled, render.ReasonNodeNotFound, render.ReasonKueueNotInstalled, render.ReasonPriorityClassNotFound, render.ReasonKueueAdmissionConflict, render.ReasonDeactivated,
	batch.ReasonCreateFailed, batch.ReasonNodeLost, batch.ReasonRestarting, batch.ReasonGangWaiting,
	batch.ReasonPVCNotFound, batch.ReasonUnschedulable, batch.ReasonSchedulingGated, batch.ReasonPodsPaced,
}

// TestEveryWaitingReasonIsDocumented: the table of docs/user-guide/troubleshooting.md, which a
// user reads to learn what the REASON column means, names every reason the operator sets, and
// some of the kubelet's it passes on.
func TestEveryWaitingReasonIsDocumented(t *testing.T) {
	data, err := os.ReadFile("../docs/user-guide/troubleshooting.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]bool{}
	for _, line := range strings.Split(string(data), "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		for _, cell := range strings.Split(strings.SplitN(line, "|", 3)[1], ",") {
			rows[strings.Trim(cell, " `")] = true
		}
	}
	for _, r := range waitingReasons {
		if !rows[r] {
			t.Errorf("docs/user-guide/troubleshooting.md's table has no row for the Waiting reason %s", r)
		}
	}
	kubelet := 0
	for r := range kubeletWaitingReasons {
		if rows[r] {
			kubelet++
		}
	}
	if kubelet == 0 {
		t.Error("docs/user-guide/troubleshooting.md's table names none of the kubelet's reasons the operator passes on")
	}
}
