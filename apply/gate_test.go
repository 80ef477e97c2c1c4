package apply

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// queued is a write waiting for the gate in a test: who sent it, and whether it was let through.
type queued struct {
	name string
	done chan error
}

// enqueue starts Acquire for name in the background and returns once it waits in the gate.
func enqueue(t *testing.T, ctx context.Context, g *WriteGate, name, owner string, p Priority) queued {
	t.Helper()
	g.mu.Lock()
	before := g.waiting
	g.mu.Unlock()
	q := queued{name: name, done: make(chan error, 1)}
	go func() { q.done <- g.Acquire(ctx, owner, p) }()
	for deadline := time.Now().Add(5 * time.Second); ; {
		g.mu.Lock()
		n := g.waiting
		g.mu.Unlock()
		if n > before {
			return q
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never waited in the gate", name)
		}
		time.Sleep(time.Millisecond)
	}
}

// grantOrder releases one slot at a time and returns the names in the order they were let through.
func grantOrder(t *testing.T, g *WriteGate, qs []queued) []string {
	t.Helper()
	var got []string
	left := append([]queued(nil), qs...)
	for len(left) > 0 {
		g.Release(PriorityNormal, http.StatusOK, time.Millisecond)
		idx := -1
		for deadline := time.Now().Add(5 * time.Second); idx < 0; {
			for i, q := range left {
				select {
				case err := <-q.done:
					if err != nil {
						t.Fatalf("%s: %v", q.name, err)
					}
					idx = i
				default:
				}
				if idx >= 0 {
					break
				}
			}
			if idx < 0 && time.Now().After(deadline) {
				t.Fatalf("no write let through after a release; waiting: %d", len(left))
			}
		}
		got = append(got, left[idx].name)
		left = append(left[:idx], left[idx+1:]...)
	}
	return got
}

func TestWriteGateOrder(t *testing.T) {
	type write struct {
		name, owner string
		p           Priority
	}
	cases := map[string]struct {
		writes []write
		want   []string
	}{
		"status writes go before creations, creations before deletions": {
			writes: []write{
				{"delete-a", "a", PriorityCleanUp},
				{"create-b", "b", PriorityNormal},
				{"status-c", "c", PriorityStatus},
				{"create-a", "a", PriorityNormal},
			},
			want: []string{"status-c", "create-b", "create-a", "delete-a"},
		},
		"owners take turns: a big job's writes do not starve a small job's": {
			writes: []write{
				{"big-1", "big", PriorityNormal},
				{"big-2", "big", PriorityNormal},
				{"big-3", "big", PriorityNormal},
				{"small-1", "small", PriorityNormal},
				{"other-1", "other", PriorityNormal},
				{"small-2", "small", PriorityNormal},
			},
			want: []string{"big-1", "small-1", "other-1", "big-2", "small-2", "big-3"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWriteGate(GateOptions{Max: 1, Min: 1})
			if err := g.Acquire(context.Background(), "holder", PriorityNormal); err != nil {
				t.Fatal(err)
			}
			var qs []queued
			for _, w := range tc.writes {
				qs = append(qs, enqueue(t, context.Background(), g, w.name, w.owner, w.p))
			}
			if diff := cmp.Diff(tc.want, grantOrder(t, g, qs)); diff != "" {
				t.Errorf("order let through (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWriteGateLimit(t *testing.T) {
	type answer struct {
		code  int
		took  time.Duration
		after time.Duration // the fake clock moves this much before the answer
	}
	cases := map[string]struct {
		opts      GateOptions
		answers   []answer
		wantLimit int
		wantStats GateStats
	}{
		"a 429 halves the limit": {
			opts:      GateOptions{Max: 64, Min: 4, Cooldown: time.Second},
			answers:   []answer{{code: 429}},
			wantLimit: 32,
			wantStats: GateStats{Throttled: 1, Cuts: 1},
		},
		"many 429s of one overload halve it once": {
			opts:      GateOptions{Max: 64, Min: 4, Cooldown: time.Second},
			answers:   []answer{{code: 429}, {code: 429, after: 100 * time.Millisecond}, {code: 429, after: 100 * time.Millisecond}},
			wantLimit: 32,
			wantStats: GateStats{Throttled: 3, Cuts: 1},
		},
		"429s a cooldown apart halve it again, down to Min": {
			opts:      GateOptions{Max: 16, Min: 4, Cooldown: time.Second},
			answers:   []answer{{code: 429}, {code: 429, after: time.Second}, {code: 429, after: time.Second}},
			wantLimit: 4,
			wantStats: GateStats{Throttled: 3, Cuts: 3},
		},
		"a slow write counts as congestion": {
			opts:      GateOptions{Max: 64, Min: 4, Slow: 2 * time.Second, Cooldown: time.Second},
			answers:   []answer{{code: 201, took: 3 * time.Second}},
			wantLimit: 32,
			wantStats: GateStats{Slow: 1, Cuts: 1},
		},
		"prompt answers grow a cut limit by one per limit's worth": {
			opts: GateOptions{Max: 64, Min: 4, Cooldown: time.Second},
			answers: append([]answer{{code: 429}},
				repeat(answer{code: 201, took: 50 * time.Millisecond}, 32+33)...),
			wantLimit: 33, // 32 + 32/32 + 33/33 - a rounding: just under 34
			wantStats: GateStats{Throttled: 1, Cuts: 1},
		},
		"prompt answers never grow it past Max": {
			opts:      GateOptions{Max: 8, Min: 2, Cooldown: time.Second},
			answers:   repeat(answer{code: 200}, 100),
			wantLimit: 8,
		},
		"server errors and lost connections neither cut nor grow it": {
			opts:      GateOptions{Max: 8, Min: 2, Cooldown: time.Second},
			answers:   []answer{{code: 429}, {code: 500}, {code: 0}},
			wantLimit: 4,
			wantStats: GateStats{Throttled: 1, Cuts: 1},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWriteGate(tc.opts)
			clock := time.Unix(1000, 0)
			g.now = func() time.Time { return clock }
			for _, a := range tc.answers {
				clock = clock.Add(a.after)
				if err := g.Acquire(context.Background(), "job", PriorityNormal); err != nil {
					t.Fatal(err)
				}
				g.Release(PriorityNormal, a.code, a.took)
			}
			limit, inFlight, waiting, stats := g.State()
			stats.Granted = 0
			if limit != tc.wantLimit || inFlight != 0 || waiting != 0 {
				t.Errorf("limit, in flight, waiting = %d, %d, %d; want %d, 0, 0", limit, inFlight, waiting, tc.wantLimit)
			}
			if diff := cmp.Diff(tc.wantStats, stats); diff != "" {
				t.Errorf("stats (-want +got):\n%s", diff)
			}
		})
	}
}

// acquire takes n slots of g for owner at priority p, each granted at once.
func acquire(t *testing.T, ctx context.Context, g *WriteGate, n int, owner string, p Priority) {
	t.Helper()
	for range n {
		if err := g.Acquire(ctx, owner, p); err != nil {
			t.Fatal(err)
		}
	}
}

func repeat[T any](x T, n int) []T {
	out := make([]T, n)
	for i := range out {
		out[i] = x
	}
	return out
}

func TestWriteGateHoldsNoMoreThanItsLimit(t *testing.T) {
	g := NewWriteGate(GateOptions{Max: 3, Min: 1})
	ctx := context.Background()
	acquire(t, ctx, g, 3, "a", PriorityNormal)
	q := enqueue(t, ctx, g, "fourth", "b", PriorityStatus)
	select {
	case <-q.done:
		t.Fatal("a fourth write went through a gate of 3")
	case <-time.After(20 * time.Millisecond):
	}
	g.Release(PriorityNormal, 200, time.Millisecond)
	if err := <-q.done; err != nil {
		t.Fatal(err)
	}
	if limit, inFlight, waiting, _ := g.State(); limit != 3 || inFlight != 3 || waiting != 0 {
		t.Errorf("limit, in flight, waiting = %d, %d, %d; want 3, 3, 0", limit, inFlight, waiting)
	}
}

func TestWriteGateForgetsAWriteWhoseContextEnds(t *testing.T) {
	g := NewWriteGate(GateOptions{Max: 1, Min: 1})
	if err := g.Acquire(context.Background(), "holder", PriorityNormal); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	gone := enqueue(t, ctx, g, "cancelled", "a", PriorityNormal)
	next := enqueue(t, context.Background(), g, "next", "b", PriorityNormal)
	cancel()
	if err := <-gone.done; !errors.Is(err, context.Canceled) {
		t.Fatalf("the cancelled write: %v, want context.Canceled", err)
	}
	if diff := cmp.Diff([]string{"next"}, grantOrder(t, g, []queued{next})); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if _, inFlight, waiting, _ := g.State(); inFlight != 1 || waiting != 0 {
		t.Errorf("in flight, waiting = %d, %d; want 1, 0", inFlight, waiting)
	}
}

func TestWriteGateTransport(t *testing.T) {
	cases := map[string]struct {
		method, path string
		owner        string // "" for none
		cleanUp      bool   // the context is marked WithCleanUp
		wantGated    bool
		wantPriority Priority
	}{
		"a pod creation for a job is gated":             {method: "POST", path: "/api/v1/namespaces/ns/pods", owner: "job", wantGated: true, wantPriority: PriorityNormal},
		"a job's status write goes first":               {method: "PATCH", path: "/apis/batch.tensorstack.dev/v1beta1/namespaces/ns/pytorchtrainingjobs/j/status", owner: "job", wantGated: true, wantPriority: PriorityStatus},
		"a clean-up deletion goes last":                 {method: "DELETE", path: "/api/v1/namespaces/ns/pods/p", owner: "job", cleanUp: true, wantGated: true, wantPriority: PriorityCleanUp},
		"a restart's deletion is a normal write":        {method: "DELETE", path: "/api/v1/namespaces/ns/pods/p", owner: "job", wantGated: true, wantPriority: PriorityNormal},
		"a clean-up mark does not demote a creation":    {method: "POST", path: "/api/v1/namespaces/ns/pods", owner: "job", cleanUp: true, wantGated: true, wantPriority: PriorityNormal},
		"a read is never held":                          {method: "GET", path: "/api/v1/namespaces/ns/pods/p", owner: "job"},
		"a write for no job (leader election) passes":   {method: "PUT", path: "/apis/coordination.k8s.io/v1/namespaces/ns/leases/l"},
		"an apply patch of a Service is a normal write": {method: "PATCH", path: "/api/v1/namespaces/ns/services/s", owner: "job", wantGated: true, wantPriority: PriorityNormal},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var mu sync.Mutex
			var sawInFlight int
			g := NewWriteGate(GateOptions{Max: 4, Min: 1})
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, inFlight, _, _ := g.State()
				mu.Lock()
				sawInFlight = inFlight
				mu.Unlock()
				w.WriteHeader(http.StatusOK)
			}))
			defer srv.Close()
			ctx := context.Background()
			if tc.owner != "" {
				ctx = WithOwner(ctx, tc.owner)
			}
			if tc.cleanUp {
				ctx = WithCleanUp(ctx)
			}
			req, err := http.NewRequestWithContext(ctx, tc.method, srv.URL+tc.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := g.Wrap(http.DefaultTransport).RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			wantInFlight := 0
			if tc.wantGated {
				wantInFlight = 1
			}
			if sawInFlight != wantInFlight {
				t.Errorf("writes in flight at the server: %d, want %d", sawInFlight, wantInFlight)
			}
			if tc.wantGated {
				if got := priorityOf(req); got != tc.wantPriority {
					t.Errorf("priority %d, want %d", got, tc.wantPriority)
				}
			}
			if _, inFlight, _, _ := g.State(); inFlight != 0 {
				t.Errorf("in flight after the answer: %d, want 0", inFlight)
			}
		})
	}
}

func TestWriteGateKeepsAllButAnEighthOfItsBoundFromDeletions(t *testing.T) {
	g := NewWriteGate(GateOptions{Max: 16, Min: 1})
	ctx := context.Background()
	acquire(t, ctx, g, 2, "finished", PriorityCleanUp)
	third := enqueue(t, ctx, g, "third deletion", "finished", PriorityCleanUp)
	// Fourteen slots are free, but not for a third deletion: a status write takes one at once.
	if err := g.Acquire(ctx, "running", PriorityStatus); err != nil {
		t.Fatal(err)
	}
	select {
	case <-third.done:
		t.Fatal("a third deletion went through with an eighth of the bound (2 of 16) already deleting")
	case <-time.After(20 * time.Millisecond):
	}
	g.Release(PriorityCleanUp, http.StatusOK, time.Millisecond)
	if err := <-third.done; err != nil {
		t.Fatal(err)
	}
	if _, inFlight, waiting, _ := g.State(); inFlight != 3 || waiting != 0 {
		t.Errorf("in flight, waiting = %d, %d; want 3, 0", inFlight, waiting)
	}
}
