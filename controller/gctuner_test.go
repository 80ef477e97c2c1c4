package controller

import "testing"

func TestGCPercentLetsASmallHeapGrowToTheBudget(t *testing.T) {
	const mib = 1 << 20
	cases := map[string]struct {
		live uint64
		want int
	}{
		"no heap read yet: Go's default":                    {live: 0, want: gcMaxPercent},
		"a tiny heap grows no more than Go's default":       {live: 4 * mib, want: gcMaxPercent},
		"a burst's 24 MiB may double to the 48 MiB budget":  {live: 24 * mib, want: 100},
		"32 MiB may grow by half, to the budget":            {live: 32 * mib, want: 50},
		"40 MiB: to the budget would be 20%, less than 25%": {live: 40 * mib, want: gcPercent},
		"a 5,000-pod job's 45 MiB grows by 25%":             {live: 45 * mib, want: gcPercent},
		"past the budget, every 25%":                        {live: 200 * mib, want: gcPercent},
		"just under the budget still gets the least growth": {live: gcHeapBudget - 1, want: gcPercent},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := gcPercentFor(tc.live); got != tc.want {
				t.Errorf("gcPercentFor(%d MiB) = %d, want %d", tc.live/mib, got, tc.want)
			}
		})
	}
}
