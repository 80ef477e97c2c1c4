package main

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/trainyard/trainyard/hack/internal/localrun"
)

// settleQuick is how soon an idle cluster runs a canary pod: created, scheduled and Running.
const settleQuick = time.Second

// settle waits, before a size is played, until the cluster runs a new pod promptly: a canary pod
// of the sizes' shape (one GPU) is created in ns, timed to Running and deleted, again until one
// is Running within settleQuick. It returns how long that took and how many canaries it used.
//
// Why: KWOK, the nodes' fake kubelet, works through a size's pod deletions after the API server
// has forgotten the pods, a stage per pod at its own client's rate, and runs new pods only after
// them. A size played meanwhile waits behind the previous size's clean-up: 50 x 8 played right
// after the floor's 5,000 pods had no pod Running 11 s after its first create; after a 3,000-pod
// job, KWOK was still deleting its pods 6 s into the 50 x 8; alone, its jobs were all Running in
// 6.3 s (the floor: 6.1 s). Every size, the floor's and each API's, starts on a settled cluster.
func settle(ctx context.Context, kube client.Client, ns string, timeout time.Duration) (time.Duration, int, error) {
	start := time.Now()
	deadline := start.Add(timeout)
	for i := 1; ; i++ {
		took, err := runCanary(ctx, kube, ns, fmt.Sprintf("canary-%d", i), time.Until(deadline))
		if err != nil {
			return time.Since(start), i, err
		}
		if took <= settleQuick {
			return time.Since(start), i, nil
		}
		if time.Now().After(deadline) {
			return time.Since(start), i, fmt.Errorf("the cluster did not settle in %s: the last canary took %s to run", timeout, took.Round(time.Millisecond))
		}
	}
}

// runCanary creates pod name, waits until it runs, deletes it and waits until it is gone; it
// returns the time from the create call to the pod first seen Running.
func runCanary(ctx context.Context, kube client.Client, ns, name string, timeout time.Duration) (time.Duration, error) {
	t := gpuPodTemplate(nil)
	t.Spec.RestartPolicy = corev1.RestartPolicyNever
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: t.Spec}
	created := time.Now()
	if err := kube.Create(ctx, pod); err != nil {
		return 0, fmt.Errorf("creating canary %s: %w", name, err)
	}
	var took time.Duration
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		var p corev1.Pod
		if err := kube.Get(ctx, client.ObjectKeyFromObject(pod), &p); err != nil {
			return false, err
		}
		took = time.Since(created)
		return p.Status.Phase == corev1.PodRunning, nil
	})
	if derr := kube.Delete(ctx, pod, client.GracePeriodSeconds(0)); client.IgnoreNotFound(derr) != nil {
		return took, fmt.Errorf("deleting canary %s: %w", name, derr)
	}
	if err != nil {
		return took, fmt.Errorf("canary %s not Running: %w", name, err)
	}
	return took, wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		err := kube.Get(ctx, client.ObjectKeyFromObject(pod), &corev1.Pod{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
}

// quietCores is the control plane's CPU, in cores over a quietWindow, under which it counts as
// quiet. Idle, the 20-node bench cluster's processes use about 0.2 of a core together (the
// nodes' leases and heartbeats, the controllers' resyncs).
const (
	quietCores   = 0.35
	quietWindow  = 2 * time.Second
	quietTimeout = time.Minute
)

// waitQuiet waits, after settle, until the control plane's processes (cpu: their CPU seconds so
// far, summed) use less than limit cores over a window, or until timeout has passed. It returns
// how long it waited, the last window's cores and whether it ended quiet (a size is then played
// anyway: a machine busy with something else would otherwise never be measured).
//
// Why: a canary that runs promptly says KWOK is done with the last size's pods, not that the API
// server and etcd are. The log line before each size then says how busy the control plane was
// when the size began, so that a slow size can be told from one played on a busy cluster. (When
// this was added, after a run whose first operator size created its pods at a third of the usual
// pace, the control plane was quiet 2 s after every settle, 0.18-0.27 cores, the floor's 5,000
// pods and Services just gone included: that run's slowness came from elsewhere.)
func waitQuiet(ctx context.Context, cpu func() (float64, error), window time.Duration, limit float64, timeout time.Duration) (time.Duration, float64, bool, error) {
	start := time.Now()
	before, err := cpu()
	if err != nil {
		return 0, 0, false, err
	}
	from := time.Now()
	for {
		if err := localrun.Sleep(ctx, window); err != nil {
			return time.Since(start), 0, false, err
		}
		after, err := cpu()
		if err != nil {
			return time.Since(start), 0, false, err
		}
		// Note: over the time that passed, not the window asked for: a busy machine sleeps longer.
		now := time.Now()
		cores := (after - before) / now.Sub(from).Seconds()
		if cores < limit {
			return time.Since(start), cores, true, nil
		}
		if time.Since(start) >= timeout {
			return time.Since(start), cores, false, nil
		}
		before, from = after, now
	}
}

// formatBusy names the processes of used (CPU seconds over window) that used a tenth of a core or
// more, busiest first, as "; name cores, name cores"; empty when none did.
func formatBusy(used localrun.ProcessCPU, window time.Duration) string {
	type proc struct {
		name  string
		cores float64
	}
	var busy []proc
	for name, s := range used {
		if cores := s / window.Seconds(); cores >= 0.1 {
			busy = append(busy, proc{name, cores})
		}
	}
	if len(busy) == 0 {
		return ""
	}
	slices.SortFunc(busy, func(a, b proc) int {
		if c := cmp.Compare(b.cores, a.cores); c != 0 {
			return c
		}
		return cmp.Compare(a.name, b.name)
	})
	parts := make([]string, len(busy))
	for i, p := range busy {
		parts[i] = fmt.Sprintf("%s %.2f", p.name, p.cores)
	}
	return "; " + strings.Join(parts, ", ")
}
