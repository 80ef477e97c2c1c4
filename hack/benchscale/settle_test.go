package main

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/trainyard/trainyard/hack/internal/localrun"
)

func TestWaitQuiet(t *testing.T) {
	const window = 10 * time.Millisecond
	cases := map[string]struct {
		// readings are the control plane's CPU seconds, read in turn (the last one repeats).
		readings  []float64
		readErr   error
		timeout   time.Duration
		wantQuiet bool
		wantReads int
		wantErr   bool
	}{
		"a control plane busy for two windows is quiet on the third": {
			readings: []float64{0, 0.5, 1, 1.0001}, timeout: time.Second, wantQuiet: true, wantReads: 4},
		"an idle control plane is quiet after one window": {
			readings: []float64{5, 5.001}, timeout: time.Second, wantQuiet: true, wantReads: 2},
		"one that stays busy is given up after the timeout, not quiet": {
			readings: []float64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, timeout: 3 * window, wantQuiet: false},
		"a process that cannot be read is an error": {
			readErr: errors.New("no such process"), timeout: time.Second, wantErr: true, wantReads: 1},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			reads := 0
			cpu := func() (float64, error) {
				reads++
				if tc.readErr != nil {
					return 0, tc.readErr
				}
				return tc.readings[min(reads, len(tc.readings))-1], nil
			}
			_, cores, quiet, err := waitQuiet(context.Background(), cpu, window, quietCores, tc.timeout)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v; want an error: %v", err, tc.wantErr)
			}
			if quiet != tc.wantQuiet {
				t.Errorf("quiet %v (last window %.2f cores); want %v", quiet, cores, tc.wantQuiet)
			}
			if tc.wantReads > 0 && reads != tc.wantReads {
				t.Errorf("%d readings; want %d", reads, tc.wantReads)
			}
		})
	}
}

func TestFormatBusy(t *testing.T) {
	cases := map[string]struct {
		used localrun.ProcessCPU
		want string
	}{
		"the processes using a tenth of a core or more are named, busiest first": {
			used: localrun.ProcessCPU{"kube-apiserver": 0.3, "kwok-controller": 0.9, "etcd": 0.1, "kube-scheduler": 0.05},
			want: "; kwok-controller 0.45, kube-apiserver 0.15"},
		"equal ones are named in order": {
			used: localrun.ProcessCPU{"etcd": 0.4, "kube-apiserver": 0.4},
			want: "; etcd 0.20, kube-apiserver 0.20"},
		"an idle control plane names none": {
			used: localrun.ProcessCPU{"etcd": 0.1, "kube-apiserver": 0.15},
			want: ""},
		"no reading names none": {want: ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := formatBusy(tc.used, 2*time.Second); got != tc.want {
				t.Errorf("formatBusy = %q; want %q", got, tc.want)
			}
		})
	}
}
