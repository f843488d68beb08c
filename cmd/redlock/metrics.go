package main

import (
	"context"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/redlockplus/redlock"
	redlockotel "github.com/redlockplus/redlock/otel"
)

// metrics serves the locks' OpenTelemetry metrics in the Prometheus format
// on /metrics while a command runs (--metrics-addr).
type metrics struct {
	obs  *redlockotel.Observer
	mp   *sdkmetric.MeterProvider
	srv  *http.Server
	ln   net.Listener
	done chan struct{} // closed when the serving goroutine ends
}

// addMetricsFlag adds --metrics-addr to cmd.
func addMetricsFlag(cmd *cobra.Command, addr *string) {
	cmd.Flags().StringVar(addr, "metrics-addr", "", "serve Prometheus metrics on this address (e.g. :9464) at /metrics while running")
}

// startMetrics listens on addr and serves /metrics; it returns nil for an
// empty addr. The lock name is a metric attribute as it is: these
// commands hold one name (or the demo's one), so it cannot explode.
func startMetrics(addr string) (*metrics, error) {
	if addr == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, usageErr("--metrics-addr %s: %v", addr, err)
	}
	registry := prometheus.NewRegistry()
	exporter, err := otelprom.New(otelprom.WithRegisterer(registry), otelprom.WithoutScopeInfo())
	if err != nil {
		ln.Close()
		return nil, err
	}
	m := &metrics{mp: sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter)), ln: ln, done: make(chan struct{})}
	m.obs, err = redlockotel.New(redlockotel.WithMeterProvider(m.mp), redlockotel.WithLockName(func(name string) string { return name }))
	if err != nil {
		ln.Close()
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(registry, promhttp.HandlerOpts{}))
	m.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		defer close(m.done)
		_ = m.srv.Serve(ln) // ends with http.ErrServerClosed at close
	}()
	return m, nil
}

// options returns the lock options that report to the metrics (none for
// a nil m).
func (m *metrics) options() []redlock.Option {
	if m == nil {
		return nil
	}
	return []redlock.Option{redlock.WithObserver(m.obs.Redlock())}
}

// addr is the address the server listens on.
func (m *metrics) addr() string { return m.ln.Addr().String() }

// close stops the server, letting a scrape in flight finish for up to a
// second, and waits for its goroutine.
func (m *metrics) close() {
	if m == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if m.srv.Shutdown(ctx) != nil {
		m.srv.Close()
	}
	<-m.done
	_ = m.mp.Shutdown(ctx)
}
