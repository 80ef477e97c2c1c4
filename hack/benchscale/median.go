package main

import (
	"fmt"
	"slices"
)

// With --runs, each size is played several times in a row and the report gives each figure's
// median over the runs, with their range: one run moves by ±20% on a shared 2-core machine.

// number is what a figure is read as: a duration, kB, seconds, a count.
type number interface{ ~int64 | ~float64 }

// reading is one run's value of a figure; ok false when the run did not measure it.
type reading[T number] struct {
	v  T
	ok bool
}

// overRuns is a figure over the runs of a size: the median and the range of the runs that
// measured it.
type overRuns[T number] struct {
	median, lo, hi T
	measured, runs int // runs that measured it, runs in all
}

// medianOf summarises the readings of a figure (one per run, or per job: spreadOf), leaving out
// those not measured. The median of an even count is the mean of the two middle values (rounded
// toward zero for an integer type: nanoseconds, kB).
func medianOf[T number](rs []reading[T]) overRuns[T] {
	o := overRuns[T]{runs: len(rs)}
	var vs []T
	for _, r := range rs {
		if r.ok {
			vs = append(vs, r.v)
		}
	}
	if o.measured = len(vs); o.measured == 0 {
		return o
	}
	slices.Sort(vs)
	o.lo, o.hi = vs[0], vs[len(vs)-1]
	if m := len(vs) / 2; len(vs)%2 == 1 {
		o.median = vs[m]
	} else {
		o.median = (vs[m-1] + vs[m]) / 2
	}
	return o
}

// ok: some run measured the figure.
func (o overRuns[T]) ok() bool { return o.measured > 0 }

// spell prints the median, and over several runs the range in brackets, noting the runs that
// did not measure it: "40.0 s [38.2-41.5]", "40.0 s [38.2-41.5; 2 of 3 runs]". num spells a value
// without its unit; missing is printed when no run measured the figure.
func (o overRuns[T]) spell(num func(T) string, unit, missing string) string {
	if !o.ok() {
		return missing
	}
	s := num(o.median) + unit
	if o.runs == 1 {
		return s
	}
	of := ""
	if o.measured < o.runs {
		of = fmt.Sprintf("; %d of %d runs", o.measured, o.runs)
	}
	return fmt.Sprintf("%s [%s-%s%s]", s, num(o.lo), num(o.hi), of)
}
