//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
	"github.com/trainyard/trainyard/status"
)

// TestKueueWithoutSlices: a sliced elastic T9k job (annotated kueue.x-k8s.io/elastic-job) queued
// by a real Kueue whose workload slices are off (ElasticJobsViaWorkloadSlices: false). The suite's
// Kueue has them on (kq-t9k-slices), so this Kueue runs in a side cluster of its own.
func TestKueueWithoutSlices(t *testing.T) {
	var side *sideCluster
	f := features.New("a sliced elastic job under a Kueue without workload slices changes size all the same").
		WithLabel("area", "kueue").
		Setup(func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			side = startSideCluster(ctx, t, "trainyard-noslices", 1, map[string]bool{"ElasticJobsViaWorkloadSlices": false}, "")
			createKueue(ctx, t, side.client, kueueObject("ResourceFlavor", "", kueueFlavor, map[string]any{}))
			return ctx
		}).
		Assess("quota for its running size only: grown, it keeps its pods running and says Kueue wants the whole new size beside them; scaled back, the waiting slice goes", onSide(&side, noSlicesGrowthWaits)).
		Assess("quota for both sizes: grown, it runs under the slice with its pods untouched and deletes the old Workload; shrunk, Kueue refuses the lower count in place and the job is queued anew at its new size", onSide(&side, noSlicesGrowsThenRequeues)).
		Feature()
	testenv.Test(t, f)
}

// slicedJobRunning makes a queue of gpus GPUs in the side cluster (sideQueue), creates the sliced
// job el there (slicedJob) and waits until it runs its 2 pods under an admitted Workload; it
// returns the namespace, that Workload and the pods' UIDs.
func slicedJobRunning(ctx context.Context, t *testing.T, s *sideCluster, prefix string, gpus int) (string, *unstructured.Unstructured, map[string]types.UID) {
	t.Helper()
	c, ns := sideQueue(ctx, t, s, prefix, kueueFlavor, gpus)
	create(ctx, t, c, ns, slicedJob("el"))
	first := waitWorkload(ctx, t, c, ns, "el", "admitted", admitted)
	return ns, first, exactlyRunning(ctx, t, c, ns, "el", 2)
}

// noSlicesGrowthWaits: a quota of 3 GPUs, the job at 2 grown to 3. Without slices Kueue charges
// the slice's whole 3 beside the running 2 (2 more than the 1 GPU free, where with slices it charges
// the 1 added): the slice waits, the job runs its 2 pods and its Running condition quotes Kueue.
func noSlicesGrowthWaits(ctx context.Context, t *testing.T, s *sideCluster) {
	c := s.client
	ns, first, pods := slicedJobRunning(ctx, t, s, "kq-noslice-wait", 3)

	scaleElastic(ctx, t, c, ns, "el", 3)
	eventually(t, 60*time.Second, "el says it runs 2 of the 3 replicas asked for, Kueue wanting 2 more GPUs", func() (bool, string) {
		st, err := jobStatus(ctx, c, ns, "el")
		if err != nil {
			return false, err.Error()
		}
		msg := conditionText(st, batch.ConditionRunning)
		return strings.Contains(msg, "2 of the 3 replicas asked for are running") && strings.Contains(msg, "insufficient unused quota") && strings.Contains(msg, "2 more needed"), msg
	})
	if wls := workloadsOf(ctx, t, c, ns, "el"); len(wls) != 2 {
		t.Errorf("%d Workloads while the slice for 3 waits; want the admitted one and the slice", len(wls))
	}
	podsUntouched(t, pods, exactlyRunning(ctx, t, c, ns, "el", 2))

	scaleElastic(ctx, t, c, ns, "el", 2)
	onlyWorkload(ctx, t, c, ns, "el", "the waiting slice deleted, the first Workload kept", first.GetUID())
	podsUntouched(t, pods, exactlyRunning(ctx, t, c, ns, "el", 2))
}

// noSlicesGrowsThenRequeues: a quota of 5 GPUs. Grown from 2 to 3, the slice is admitted beside
// the running Workload (5 GPUs charged for a moment); the job creates its third pod under it, its
// first two untouched, and deletes the replaced Workload, which Kueue did not finish. Shrunk to 2,
// Kueue's webhook refuses the lower count in place (only slices allow it); the job deletes the
// Workload and is queued anew: a new Workload, every pod created again.
func noSlicesGrowsThenRequeues(ctx context.Context, t *testing.T, s *sideCluster) {
	c := s.client
	ns, first, pods2 := slicedJobRunning(ctx, t, s, "kq-noslice-grow", 5)

	start := time.Now()
	scaleElastic(ctx, t, c, ns, "el", 3)
	grown := waitWorkload(ctx, t, c, ns, "el", "a slice admitted beside the first Workload", func(w *unstructured.Unstructured) bool {
		return admitted(w) && w.GetUID() != first.GetUID()
	})
	pods3 := exactlyRunning(ctx, t, c, ns, "el", 3)
	podsUntouched(t, pods2, pods3)
	onlyWorkload(ctx, t, c, ns, "el", "the replaced Workload deleted, the slice left", grown.GetUID())
	t.Logf("grown from 2 to 3 pods under slice %s in %.1f s", grown.GetName(), time.Since(start).Seconds())

	start = time.Now()
	scaleElastic(ctx, t, c, ns, "el", 2)
	requeued := waitWorkload(ctx, t, c, ns, "el", "a new Workload for 2 pods, admitted", func(w *unstructured.Unstructured) bool {
		sets, _, _ := unstructured.NestedSlice(w.Object, "spec", "podSets")
		return admitted(w) && w.GetUID() != grown.GetUID() && w.GetUID() != first.GetUID() && len(sets) == 2 && fmt.Sprint(sets[1].(map[string]any)["count"]) == "1"
	})
	pods := exactlyRunning(ctx, t, c, ns, "el", 2)
	for name, uid := range pods {
		if pods3[name] == uid {
			t.Errorf("pod %s kept its uid %s through the shrink; want every pod created again (the job was queued anew)", name, uid)
		}
	}
	onlyWorkload(ctx, t, c, ns, "el", "the lowered Workload deleted, the new one left", requeued.GetUID())
	t.Logf("shrunk to 2 pods by queueing anew (Workload %s) in %.1f s", requeued.GetName(), time.Since(start).Seconds())
	// The user learns why every pod was created again.
	if n := countEvents(ctx, t, c, ns, status.EventKueueShrinkRefused); n != 1 {
		t.Errorf("%d %s events; want 1", n, status.EventKueueShrinkRefused)
	}
	if out := trainyardCLIAt(t, s.cfg.KubeconfigFile(), "describe", "ptj/el", "-n", ns); !strings.Contains(out, "Warning  KueueShrinkRefused  Kueue refused to lower Workload "+grown.GetName()+"'s worker count to 1 in place") {
		t.Errorf("trainyard describe of the job queued anew does not say why:\n%s", out)
	}
}

// onlyWorkload waits until the job's one Workload is the one of UID uid.
func onlyWorkload(ctx context.Context, t *testing.T, c client.Client, ns, job, what string, uid types.UID) {
	t.Helper()
	eventually(t, 60*time.Second, what, func() (bool, string) {
		wls := workloadsOf(ctx, t, c, ns, job)
		var names []string
		for _, w := range wls {
			names = append(names, w.GetName()+" "+string(w.GetUID()))
		}
		return len(wls) == 1 && wls[0].GetUID() == uid, fmt.Sprint(names)
	})
}
