package v1

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func ptr[T any](v T) *T { return &v }

// legacyFields are the four run-policy fields written directly under spec.
type legacyFields struct {
	activeDeadlineSeconds   *int64
	backoffLimit            *int32
	cleanPodPolicy          *CleanPodPolicy
	ttlSecondsAfterFinished *int32
}

func (l legacyFields) pytorch(rp *RunPolicy) *PyTorchJobSpec {
	return &PyTorchJobSpec{
		RunPolicy:               rp,
		ActiveDeadlineSeconds:   l.activeDeadlineSeconds,
		BackoffLimit:            l.backoffLimit,
		CleanPodPolicy:          l.cleanPodPolicy,
		TTLSecondsAfterFinished: l.ttlSecondsAfterFinished,
	}
}

func (l legacyFields) tensorflow(rp *RunPolicy) *TFJobSpec {
	return &TFJobSpec{
		RunPolicy:               rp,
		ActiveDeadlineSeconds:   l.activeDeadlineSeconds,
		BackoffLimit:            l.backoffLimit,
		CleanPodPolicy:          l.cleanPodPolicy,
		TTLSecondsAfterFinished: l.ttlSecondsAfterFinished,
	}
}

func TestEffectiveRunPolicy(t *testing.T) {
	cases := map[string]struct {
		runPolicy *RunPolicy
		legacy    legacyFields
		want      RunPolicy
	}{
		"a job with no run policy at all gets an empty one, without defaults": {
			want: RunPolicy{},
		},
		"the older layout alone is used as it is": {
			legacy: legacyFields{
				activeDeadlineSeconds:   ptr(int64(3600)),
				backoffLimit:            ptr(int32(5)),
				cleanPodPolicy:          ptr(CleanPodPolicyAll),
				ttlSecondsAfterFinished: ptr(int32(600)),
			},
			want: RunPolicy{
				ActiveDeadlineSeconds:   ptr(int64(3600)),
				BackoffLimit:            ptr(int32(5)),
				CleanPodPolicy:          ptr(CleanPodPolicyAll),
				TTLSecondsAfterFinished: ptr(int32(600)),
			},
		},
		"runPolicy alone is used as it is, with its newer fields": {
			runPolicy: &RunPolicy{
				ActiveDeadlineSeconds: ptr(int64(60)),
				BackoffLimit:          ptr(int32(0)),
				CleanPodPolicy:        ptr(CleanPodPolicyNone),
				Suspend:               ptr(true),
				ManagedBy:             ptr(ManagedByTrainingOperator),
				SchedulingPolicy: &SchedulingPolicy{
					MinAvailable: ptr(int32(3)),
					Queue:        "research",
					MinResources: &corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("12")},
				},
			},
			want: RunPolicy{
				ActiveDeadlineSeconds: ptr(int64(60)),
				BackoffLimit:          ptr(int32(0)),
				CleanPodPolicy:        ptr(CleanPodPolicyNone),
				Suspend:               ptr(true),
				ManagedBy:             ptr(ManagedByTrainingOperator),
				SchedulingPolicy: &SchedulingPolicy{
					MinAvailable: ptr(int32(3)),
					Queue:        "research",
					MinResources: &corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("12")},
				},
			},
		},
		"legacy fields fill in what runPolicy leaves unset": {
			runPolicy: &RunPolicy{BackoffLimit: ptr(int32(2)), Suspend: ptr(false)},
			legacy: legacyFields{
				activeDeadlineSeconds:   ptr(int64(900)),
				cleanPodPolicy:          ptr(CleanPodPolicyRunning),
				ttlSecondsAfterFinished: ptr(int32(0)),
			},
			want: RunPolicy{
				ActiveDeadlineSeconds:   ptr(int64(900)),
				BackoffLimit:            ptr(int32(2)),
				CleanPodPolicy:          ptr(CleanPodPolicyRunning),
				TTLSecondsAfterFinished: ptr(int32(0)),
				Suspend:                 ptr(false),
			},
		},
		"a field set equal in both layouts appears once": {
			runPolicy: &RunPolicy{BackoffLimit: ptr(int32(4)), CleanPodPolicy: ptr(CleanPodPolicyAll)},
			legacy:    legacyFields{backoffLimit: ptr(int32(4)), cleanPodPolicy: ptr(CleanPodPolicyAll)},
			want:      RunPolicy{BackoffLimit: ptr(int32(4)), CleanPodPolicy: ptr(CleanPodPolicyAll)},
		},
		"an empty runPolicy takes every legacy field": {
			runPolicy: &RunPolicy{},
			legacy:    legacyFields{backoffLimit: ptr(int32(1)), ttlSecondsAfterFinished: ptr(int32(30))},
			want:      RunPolicy{BackoffLimit: ptr(int32(1)), TTLSecondsAfterFinished: ptr(int32(30))},
		},
	}
	for name, tc := range cases {
		t.Run(name+" (PyTorchJob)", func(t *testing.T) {
			got := tc.legacy.pytorch(tc.runPolicy).EffectiveRunPolicy()
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("EffectiveRunPolicy (-want +got):\n%s", diff)
			}
		})
		t.Run(name+" (TFJob)", func(t *testing.T) {
			got := tc.legacy.tensorflow(tc.runPolicy).EffectiveRunPolicy()
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("EffectiveRunPolicy (-want +got):\n%s", diff)
			}
		})
	}
}

// The result is the caller's to change: render may fill in defaults without touching the job.
func TestEffectiveRunPolicySharesNoMemoryWithTheSpec(t *testing.T) {
	spec := legacyFields{backoffLimit: ptr(int32(3))}.pytorch(&RunPolicy{
		CleanPodPolicy:   ptr(CleanPodPolicyAll),
		SchedulingPolicy: &SchedulingPolicy{MinAvailable: ptr(int32(2))},
	})
	before := spec.DeepCopy()

	got := spec.EffectiveRunPolicy()
	*got.BackoffLimit = 99
	*got.CleanPodPolicy = CleanPodPolicyNone
	*got.SchedulingPolicy.MinAvailable = 99

	if diff := cmp.Diff(before, spec); diff != "" {
		t.Errorf("changing the effective run policy changed the spec (-before +after):\n%s", diff)
	}
}
