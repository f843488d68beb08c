package redlockotel_test

import (
	"context"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/redlockplus/redlock"
	"github.com/redlockplus/redlock/internal/testkit/redistest"
	redlockotel "github.com/redlockplus/redlock/otel"
	"github.com/redlockplus/redlock/sdlstore"
)

// TestSDLMetrics checks the sdlstore operation histogram and error counter.
func TestSDLMetrics(t *testing.T) {
	c := redistest.Start(t, 1)
	reader := sdkmetric.NewManualReader()
	obs, err := redlockotel.New(redlockotel.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
	if err != nil {
		t.Fatal(err)
	}
	s, err := sdlstore.New([]redlock.Pool{c.Nodes[0].Pool()}, sdlstore.WithObserver(obs.SDL()))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for range 2 {
		if err := s.Set(ctx, "app", map[string][]byte{"k": []byte("v")}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.AddMember(ctx, "app", "g", []byte("m")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetIf(ctx, "app", "g", []byte("a"), []byte("b")); err == nil {
		t.Fatal("SetIf on a set succeeded")
	}
	got := series(t, reader)
	want := map[string]float64{
		"sdl.operation.duration{sdl.instance=0,sdl.namespace=app,sdl.operation=set}":                                   2,
		"sdl.operation.duration{sdl.instance=0,sdl.namespace=app,sdl.operation=add member}":                            1,
		"sdl.operation.duration{error.type=rejected_by_backend,sdl.instance=0,sdl.namespace=app,sdl.operation=set if}": 1,
		"sdl.operation.errors{error.type=rejected_by_backend,sdl.instance=0,sdl.namespace=app,sdl.operation=set if}":   1,
	}
	if len(got) != len(want) {
		t.Errorf("series %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
}
