package localrun

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSumSamples(t *testing.T) {
	const text = `# HELP rest_client_requests_total Number of HTTP requests.
# TYPE rest_client_requests_total counter
rest_client_requests_total{code="200",host="127.0.0.1:3",method="GET"} 10
rest_client_requests_total{code="429",host="127.0.0.1:3",method="POST"} 2
rest_client_requests_total{code="429",host="127.0.0.1:3",method="PATCH"} 1.5
rest_client_requests_total_other{code="429"} 100
go_goroutines 42
`
	cases := map[string]struct {
		name  string
		match map[string]string
		want  float64
	}{
		"429s over every method":             {"rest_client_requests_total", map[string]string{"code": "429"}, 3.5},
		"one method only":                    {"rest_client_requests_total", map[string]string{"code": "429", "method": "POST"}, 2},
		"no match is zero":                   {"rest_client_requests_total", map[string]string{"code": "409"}, 0},
		"an unlabelled sample":               {"go_goroutines", nil, 42},
		"every sample when nothing to match": {"rest_client_requests_total", nil, 13.5},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := SumSamples(strings.NewReader(text), c.name, c.match)
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}
}

func TestSumSamplesSaysWhetherTheMetricIsServed(t *testing.T) {
	const text = "trainyard_write_gate_in_flight 0\ntrainyard_write_gate_in_flight_other 3\n"
	if sum, found, err := sumSamples(strings.NewReader(text), "trainyard_write_gate_in_flight", nil); err != nil || !found || sum != 0 {
		t.Errorf("a served metric at 0: got %v, %v, %v; want 0, true, nil", sum, found, err)
	}
	if sum, found, err := sumSamples(strings.NewReader(text), "trainyard_write_gate_waiting", nil); err != nil || found || sum != 0 {
		t.Errorf("a metric not served: got %v, %v, %v; want 0, false, nil", sum, found, err)
	}
}

func TestMetricValuesReadsTheEndpointOnceForEveryName(t *testing.T) {
	reads := 0
	encoding := ""
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reads++
		encoding = r.Header.Get("Accept-Encoding")
		fmt.Fprint(w, "trainyard_write_gate_in_flight 32\ntrainyard_write_gate_waiting 7\ntrainyard_write_gate_limit 32\n")
	}))
	defer srv.Close()
	op := &Operator{MetricsAddr: srv.Listener.Addr().String()}
	got, err := op.MetricValues(context.Background(), "trainyard_write_gate_in_flight", "trainyard_write_gate_waiting", "go_goroutines")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"trainyard_write_gate_in_flight": 32, "trainyard_write_gate_waiting": 7}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("values (-want +got):\n%s", diff)
	}
	if reads != 1 {
		t.Errorf("the endpoint was read %d times, want 1", reads)
	}
	if encoding != "identity" {
		t.Errorf("Accept-Encoding %q, want identity (compressing the page costs the operator CPU)", encoding)
	}
}
