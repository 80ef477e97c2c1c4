package localrun

import (
	"strings"
	"testing"
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
