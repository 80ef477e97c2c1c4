package main

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
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
