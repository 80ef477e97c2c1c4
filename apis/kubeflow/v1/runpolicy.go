package v1

// EffectiveRunPolicy is the run policy the job runs under: spec.runPolicy, with each of the four
// fields of the older layout (activeDeadlineSeconds, backoffLimit, cleanPodPolicy,
// ttlSecondsAfterFinished directly under spec) filling in where runPolicy leaves it unset. The API
// refuses a job that sets a field in both places to different values, so which layout wins does
// not matter. No defaults are applied. The result shares no memory with the spec.
func (s *PyTorchJobSpec) EffectiveRunPolicy() RunPolicy {
	return mergeRunPolicy(s.RunPolicy, legacyRunPolicy{
		activeDeadlineSeconds:   s.ActiveDeadlineSeconds,
		backoffLimit:            s.BackoffLimit,
		cleanPodPolicy:          s.CleanPodPolicy,
		ttlSecondsAfterFinished: s.TTLSecondsAfterFinished,
	})
}

// EffectiveRunPolicy is the run policy the job runs under; see PyTorchJobSpec.EffectiveRunPolicy.
func (s *TFJobSpec) EffectiveRunPolicy() RunPolicy {
	return mergeRunPolicy(s.RunPolicy, legacyRunPolicy{
		activeDeadlineSeconds:   s.ActiveDeadlineSeconds,
		backoffLimit:            s.BackoffLimit,
		cleanPodPolicy:          s.CleanPodPolicy,
		ttlSecondsAfterFinished: s.TTLSecondsAfterFinished,
	})
}

// legacyRunPolicy holds the run-policy fields a spec carries directly, in the older layout.
type legacyRunPolicy struct {
	activeDeadlineSeconds   *int64
	backoffLimit            *int32
	cleanPodPolicy          *CleanPodPolicy
	ttlSecondsAfterFinished *int32
}

func mergeRunPolicy(current *RunPolicy, legacy legacyRunPolicy) RunPolicy {
	var out RunPolicy
	if current != nil {
		current.DeepCopyInto(&out)
	}
	if out.ActiveDeadlineSeconds == nil {
		out.ActiveDeadlineSeconds = clone(legacy.activeDeadlineSeconds)
	}
	if out.BackoffLimit == nil {
		out.BackoffLimit = clone(legacy.backoffLimit)
	}
	if out.CleanPodPolicy == nil {
		out.CleanPodPolicy = clone(legacy.cleanPodPolicy)
	}
	if out.TTLSecondsAfterFinished == nil {
		out.TTLSecondsAfterFinished = clone(legacy.ttlSecondsAfterFinished)
	}
	return out
}

// clone returns a pointer to a copy of *p, or nil.
func clone[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
