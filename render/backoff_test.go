package render

import (
	"testing"
	"time"
)

func TestRestartBackoffDoublesFromTheSecondRestartUpToItsMax(t *testing.T) {
	want := []time.Duration{0, 10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second, 160 * time.Second, 300 * time.Second, 300 * time.Second}
	for restarts, w := range want {
		if got := restartBackoff(int32(restarts)); got != w {
			t.Errorf("restartBackoff(%d) = %s; want %s", restarts, got, w)
		}
	}
	if got := restartBackoff(1 << 30); got != RestartBackoffMax {
		t.Errorf("restartBackoff(2^30) = %s; want %s", got, RestartBackoffMax)
	}
}
