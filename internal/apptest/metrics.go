package apptest

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/askbridge/askbridge/internal/app"
)

// Samples is a's samples of the metric name on its /metrics, one line
// each as Prometheus' text format writes them ("" for none).
func Samples(t testing.TB, a *app.App, name string) string {
	t.Helper()
	res, err := http.Get(a.URL() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	var samples []string
	for line := range strings.Lines(string(body)) {
		if strings.HasPrefix(line, name+"{") || strings.HasPrefix(line, name+" ") {
			samples = append(samples, strings.TrimSpace(line))
		}
	}
	return strings.Join(samples, "\n")
}
