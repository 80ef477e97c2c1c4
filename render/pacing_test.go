package render

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeflowv1 "github.com/trainyard/trainyard/apis/kubeflow/v1"
)

// TestCreationIsPacedToTheScheduler: with Input.MaxUnscheduledPods a job's missing pods are
// created only while fewer than that many of its pods wait for the scheduler; pods bound to a node,
// and pods the scheduler found unschedulable, do not count; a gang is never held. The pods counted
// as waiting are reported (Decisions.WaitingForScheduler: the operator's bound for all jobs). A job
// with more pods missing than its part keeps at most the room the operator's bound leaves it
// waiting (Input.SchedulerRoom), and at least one.
func TestCreationIsPacedToTheScheduler(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	j := pytorchJob(10) // 11 pods
	j.Scheduler = nil
	all, err := Render(Input{Job: j, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	// Six pods exist: three wait for the scheduler, two are bound, one was found unschedulable.
	var pods []*corev1.Pod
	for i, p := range all.Pods[:6] {
		p = p.DeepCopy()
		p.Status.Phase = corev1.PodPending
		switch {
		case i >= 3 && i < 5:
			p.Spec.NodeName = "node-1"
		case i == 5:
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}
		}
		pods = append(pods, p)
	}
	cases := map[string]struct {
		max          int
		gang         bool
		onlyToCreate bool
		create, held int
		waiting      int // the observed pods counted as waiting for the scheduler
		rendered     int
		room         *int // Input.SchedulerRoom
		bound        bool // observe only the three pods the scheduler has had (8 missing)
	}{
		"no bound: the five missing pods are created, none counted":      {max: 0, onlyToCreate: true, create: 5, rendered: 5},
		"a bound of 4 with 3 waiting: one created, four held":            {max: 4, onlyToCreate: true, create: 1, held: 4, waiting: 3, rendered: 1},
		"a bound of 3 with 3 waiting: none created":                      {max: 3, onlyToCreate: true, held: 5, waiting: 3},
		"a bound of 100: all five":                                       {max: 100, onlyToCreate: true, create: 5, waiting: 3, rendered: 5},
		"a gang is never held, nor counted":                              {max: 3, gang: true, onlyToCreate: true, create: 5, rendered: 5},
		"rendered whole, the held pods are still desired (11 pods)":      {max: 4, create: 1, held: 4, waiting: 3, rendered: 11},
		"a big job beside others filling the operator's bound: none":     {max: 4, room: ptr(0), onlyToCreate: true, held: 5, waiting: 3},
		"the operator's bound leaves 3, all waiting already: none":       {max: 4, room: ptr(3), onlyToCreate: true, held: 5, waiting: 3},
		"the operator's bound leaves more than the job's part: its part": {max: 4, room: ptr(50), onlyToCreate: true, create: 1, held: 4, waiting: 3, rendered: 1},
		"missing pods that fit in the part ignore the room: all five":    {max: 10, room: ptr(0), onlyToCreate: true, create: 5, waiting: 3, rendered: 5},
		"no pod waiting and no room: one, whose binding brings the next": {max: 4, room: ptr(-50), bound: true, onlyToCreate: true, create: 1, held: 7, rendered: 1},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			job := j
			crds := map[string]bool{}
			if tc.gang {
				job = pytorchJob(10) // Volcano
				crds["podgroups.scheduling.volcano.sh"] = true
			}
			observed := pods
			if tc.bound {
				observed = pods[3:]
			}
			out, err := Render(Input{Job: job, Pods: observed, Now: now, InstalledCRDs: crds, MaxUnscheduledPods: tc.max, SchedulerRoom: tc.room, OnlyPodsToCreate: tc.onlyToCreate})
			if err != nil {
				t.Fatal(err)
			}
			d := out.Decisions
			if len(d.Create) != tc.create || int(d.HeldForScheduler) != tc.held || int(d.WaitingForScheduler) != tc.waiting || len(out.Pods) != tc.rendered {
				t.Errorf("create %d, held %d, waiting %d, rendered %d pods; want %d, %d, %d, %d", len(d.Create), d.HeldForScheduler, d.WaitingForScheduler, len(out.Pods), tc.create, tc.held, tc.waiting, tc.rendered)
			}
		})
	}
}

// TestAPacedKubeflowJobsServicesFollowTheBindings: while a Kubeflow job's pods are paced, the
// Service of a replica is due only once its pod is bound to a node; with nothing held, all are.
func TestAPacedKubeflowJobsServicesFollowTheBindings(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tmpl := corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "pytorch", Image: "train"}}}}
	j := FromPyTorchJob(&kubeflowv1.PyTorchJob{
		ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "ns", UID: "uid-kf"},
		Spec: kubeflowv1.PyTorchJobSpec{PyTorchReplicaSpecs: map[kubeflowv1.ReplicaType]*kubeflowv1.ReplicaSpec{
			"Master": {Replicas: ptr(int32(1)), Template: tmpl},
			"Worker": {Replicas: ptr(int32(5)), Template: *tmpl.DeepCopy()},
		}},
	}) // 6 pods
	all, err := Render(Input{Job: j, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	// Three pods exist: the first two bound to a node, the third waiting for the scheduler.
	var pods []*corev1.Pod
	for i, p := range all.Pods[:3] {
		p = p.DeepCopy()
		p.Status.Phase = corev1.PodPending
		if i < 2 {
			p.Spec.NodeName = "node-1"
		}
		pods = append(pods, p)
	}
	due := func(max int) []string {
		t.Helper()
		out, err := Render(Input{Job: j, Pods: pods, Now: now, MaxUnscheduledPods: max, OnlyPodsToCreate: true})
		if err != nil {
			t.Fatal(err)
		}
		s := out.ReplicaServices
		if s.Len() != 6 {
			t.Fatalf("%d replica Services; want 6", s.Len())
		}
		var names []string
		for i := range s.Len() {
			if s.Due(i) {
				names = append(names, s.Name(i))
			}
		}
		return names
	}
	bound := []string{all.Pods[0].Name, all.Pods[1].Name}
	if got := due(2); !slices.Equal(got, bound) {
		t.Errorf("paced (2 of 6 created now, 1 held): due %v; want the bound pods' %v", got, bound)
	}
	if got := due(0); len(got) != 6 {
		t.Errorf("not paced: due %v; want all 6", got)
	}
}
