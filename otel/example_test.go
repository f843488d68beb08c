package redlockotel_test

import (
	"bufio"
	"context"
	"fmt"
	"log"
	"net/http/httptest"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/redlockplus/redlock"
	redlockotel "github.com/redlockplus/redlock/otel"
)

// The Prometheus exporter of OpenTelemetry serves the metrics on /metrics;
// here a test server stands in for http.ListenAndServe.
func ExampleNew_prometheus() {
	registry := prometheus.NewRegistry()
	exporter, err := otelprom.New(otelprom.WithRegisterer(registry), otelprom.WithoutScopeInfo(), otelprom.WithoutTargetInfo())
	if err != nil {
		log.Fatal(err)
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
	defer mp.Shutdown(context.Background())
	obs, err := redlockotel.New(redlockotel.WithMeterProvider(mp))
	if err != nil {
		log.Fatal(err)
	}
	f, err := redlock.NewFactoryFromURLs(nodeURLs, redlock.WithObserver(obs.Redlock()))
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()

	ctx := context.Background()
	lock := f.NewLock("reports:nightly")
	if _, err := lock.Acquire(ctx); err != nil {
		log.Fatal(err)
	}
	if err := lock.Release(ctx); err != nil {
		log.Fatal(err)
	}

	server := httptest.NewServer(promhttp.HandlerFor(registry, promhttp.HandlerOpts{}))
	defer server.Close()
	resp, err := server.Client().Get(server.URL + "/metrics")
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	lines := bufio.NewScanner(resp.Body)
	for lines.Scan() {
		if l := lines.Text(); strings.HasPrefix(l, "redlock_acquire_duration_seconds_count") || strings.HasPrefix(l, "redlock_held") || strings.HasPrefix(l, "redlock_hold_duration_seconds_count") {
			fmt.Println(l)
		}
	}
	// Output:
	// redlock_acquire_duration_seconds_count{redlock_outcome="acquired"} 1
	// redlock_held 0
	// redlock_hold_duration_seconds_count{redlock_end="released"} 1
}
