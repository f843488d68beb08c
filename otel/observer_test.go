package redlockotel_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/redlockplus/redlock"
	"github.com/redlockplus/redlock/internal/testkit/redistest"
	redlockotel "github.com/redlockplus/redlock/otel"
)

// series reads every data point of the reader into "name{k=v,...}" ->
// value: the sum of a counter, the count of a histogram.
func series(t *testing.T, r sdkmetric.Reader) map[string]float64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					out[m.Name+key(p.Attributes)] = float64(p.Value)
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					out[m.Name+key(p.Attributes)] = float64(p.Count)
				}
			}
		}
	}
	return out
}

func key(s attribute.Set) string {
	var kv []string
	for _, a := range s.ToSlice() {
		if a.Key == "server.address" {
			continue // a free port: the node index says the same
		}
		kv = append(kv, fmt.Sprintf("%s=%s", a.Key, a.Value.String()))
	}
	sort.Strings(kv)
	return "{" + strings.Join(kv, ",") + "}"
}

// TestScenario runs a scripted scenario against real nodes and checks the
// exact metrics and spans: acquisition, contention, a node killed, a lock
// lost.
func TestScenario(t *testing.T) {
	c := redistest.Start(t, 3)
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	obs, err := redlockotel.New(redlockotel.WithMeterProvider(mp), redlockotel.WithTracerProvider(tp),
		redlockotel.WithLockName(func(name string) string { prefix, _, _ := strings.Cut(name, ":"); return prefix }))
	if err != nil {
		t.Fatal(err)
	}
	f, err := redlock.NewFactoryFromURLs(c.URLs(), redlock.WithObserver(obs.Redlock()), redlock.WithAutoextend(false),
		redlock.WithRetryTimes(2), redlock.WithRetryDelay(10*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ctx, parent := tp.Tracer("test").Start(ctx, "job")

	// Acquisition, then contention: a second holder is refused after 3
	// attempts.
	a := f.NewLock("order:1")
	if _, err := a.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := f.NewLock("order:1").TryAcquire(ctx); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("contended TryAcquire: %v", err)
	}
	if _, err := a.Extend(ctx); err != nil {
		t.Fatal(err)
	}

	// A node killed: the lock stays held on two, and is released there.
	c.Nodes[2].Kill()
	for !nodeRefused(t, reader) { // a pipelined connection first sees its end
		if held, _, err := a.CheckTimes(ctx); !held || err != nil {
			t.Fatalf("CheckTimes with node 2 down = %v, %v", held, err)
		}
	}
	// From now on each command to node 2 is one refused connection: the
	// release, the next acquisition and the loss detector's first check of
	// that holding send one each. Work already under way when the kill was
	// seen (a command in flight on the broken connection, the loss
	// detector checking its holdings again once its subscriber lost node
	// 2) reports on a loaded machine after that: let it settle first.
	before := settled(t, reader)
	if err := a.Release(ctx); err != nil {
		t.Fatal(err)
	}

	// A lock lost: its validity runs out unextended.
	b := f.NewLock("report:7", redlock.WithTTL(200*time.Millisecond))
	if _, err := b.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	<-b.Done()
	// (Lost is called just after Done closes, and records the loss, the
	// held count and then the hold's duration: wait for the last.)
	for deadline := time.Now().Add(5 * time.Second); series(t, reader)["redlock.hold.duration{redlock.end=lost,redlock.lock=report}"] == 0; {
		if time.Now().After(deadline) {
			t.Fatal("no loss counted after Done closed")
		}
		time.Sleep(time.Millisecond)
	}
	parent.End()
	refused := "redlock.node.errors{error.type=refused,redlock.node=2}"
	for deadline := time.Now().Add(5 * time.Second); series(t, reader)[refused] < before[refused]+3; { // (replies after the quorum's)
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}

	got := series(t, reader)
	if n := got[refused] - before[refused]; n != 3 {
		t.Errorf("%s rose by %v after the kill was seen, want 3 (release, acquisition and the loss detector's check)", refused, n)
	}
	for k, v := range got {
		if strings.HasPrefix(k, "redlock.node.errors{") && k != refused && v != before[k] {
			t.Errorf("%s rose from %v to %v after the kill was seen, want only refusals", k, before[k], v)
		}
	}
	want := map[string]float64{
		"redlock.acquire.duration{redlock.lock=order,redlock.outcome=acquired}":  1,
		"redlock.acquire.duration{redlock.lock=order,redlock.outcome=refused}":   1,
		"redlock.acquire.duration{redlock.lock=report,redlock.outcome=acquired}": 1,
		"redlock.extend{redlock.lock=order,redlock.outcome=ok}":                  1,
		"redlock.held{redlock.lock=order}":                                       0,
		"redlock.held{redlock.lock=report}":                                      0,
		"redlock.hold.duration{redlock.end=released,redlock.lock=order}":         1,
		"redlock.hold.duration{redlock.end=lost,redlock.lock=report}":            1,
		"redlock.lost{redlock.cause=expired,redlock.lock=report}":                1,
		"redlock.waiters{redlock.lock=order}":                                    0,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	for k, v := range got {
		if _, ok := want[k]; !ok && !strings.HasPrefix(k, "redlock.node.errors{") {
			t.Errorf("unexpected series %s = %v", k, v)
		}
		if strings.HasPrefix(k, "redlock.node.errors{") && !strings.Contains(k, "redlock.node=2") {
			t.Errorf("node error of a live node: %s = %v", k, v)
		}
	}

	checkSpans(t, spans.Ended(), parent.SpanContext().SpanID())
}

// settled returns the series once node 2's error counts have not moved
// for 200 ms (5 s at most).
func settled(t *testing.T, r sdkmetric.Reader) map[string]float64 {
	t.Helper()
	errs := func(m map[string]float64) string {
		var out []string
		for k, v := range m {
			if strings.HasPrefix(k, "redlock.node.errors{") && strings.HasSuffix(k, "redlock.node=2}") {
				out = append(out, fmt.Sprint(k, v))
			}
		}
		slices.Sort(out)
		return strings.Join(out, " ")
	}
	cur := series(t, r)
	for still, deadline := time.Now(), time.Now().Add(5*time.Second); time.Since(still) < 200*time.Millisecond && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
		next := series(t, r)
		if errs(next) != errs(cur) {
			still = time.Now()
		}
		cur = next
	}
	return cur
}

// nodeRefused reports whether node 2's connection refusal was counted.
func nodeRefused(t *testing.T, r sdkmetric.Reader) bool {
	return series(t, r)["redlock.node.errors{error.type=refused,redlock.node=2}"] > 0
}

// checkSpans checks the spans of the scenario: three acquisitions (one of
// them refused after 3 attempts) and one release, children of the test's
// span, with one event per node and attempt.
func checkSpans(t *testing.T, ended []sdktrace.ReadOnlySpan, parent [8]byte) {
	t.Helper()
	var names []string
	for _, s := range ended {
		if s.Name() == "job" {
			continue
		}
		names = append(names, s.Name())
		if s.Parent().SpanID() != parent {
			t.Errorf("span %s is not a child of the caller's span", s.Name())
		}
		attrs := map[attribute.Key]attribute.Value{}
		for _, a := range s.Attributes() {
			attrs[a.Key] = a.Value
		}
		// An acquisition's span also has the replies to the PTTL a
		// waiter may ask between attempts.
		command, wantReplies := "release", 3
		if s.Name() == "redlock.acquire" {
			command, wantReplies = "set", 3*int(attrs["redlock.attempts"].AsInt64())
		}
		replies := 0
		for _, e := range s.Events() {
			for _, a := range e.Attributes {
				if a.Key == "redlock.command" && a.Value.AsString() == command {
					replies++
				}
			}
		}
		if replies != wantReplies {
			t.Errorf("span %s (%v) has %d node replies, want %d", s.Name(), attrs, replies, wantReplies)
		}
	}
	sort.Strings(names)
	if got := strings.Join(names, " "); got != "redlock.acquire redlock.acquire redlock.acquire redlock.release" {
		t.Errorf("spans %s, want 3 acquisitions and 1 release", got)
	}
}

// TestNodeGuardMetrics: a node restarted without persistence is counted
// out of the vote while the guard keeps it out and back in once it votes
// again; an evicting policy counts one risk.
func TestNodeGuardMetrics(t *testing.T) {
	c := redistest.Start(t, 3)
	c.Nodes[1].Kill()
	c.Nodes[1].Args = []string{"--maxmemory", "100mb", "--maxmemory-policy", "volatile-lru"}
	c.Nodes[1].Start()
	// Node 0 restarts last, just before the first vote: the guard refuses
	// it while its uptime, in whole seconds, reads 0, and node 1's restart
	// took most of a second on a busy machine when it came after.
	c.Nodes[0].RestartVolatile()
	reader := sdkmetric.NewManualReader()
	obs, err := redlockotel.New(redlockotel.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
	if err != nil {
		t.Fatal(err)
	}
	f, err := redlock.NewFactoryFromURLs(c.URLs(), redlock.WithObserver(obs.Redlock()), redlock.WithAutoextend(false),
		redlock.WithRestartGuard(time.Second), redlock.WithTTL(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cycle := func() {
		l := f.NewLock("guard")
		if _, err := l.Acquire(ctx); err != nil {
			t.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	cycle()
	s := series(t, reader)
	if s["redlock.node.out_of_vote{redlock.node=0}"] != 1 || s["redlock.node.vote_changes{redlock.node=0,redlock.voting=false}"] != 1 {
		t.Errorf("after a vote refused by the restart guard: %v", s)
	}
	if s["redlock.node.risks{redlock.node=1}"] != 1 {
		t.Errorf("evicting node: %v", s)
	}
	time.Sleep(2100 * time.Millisecond) // the window, and uptime's rounding
	cycle()
	s = series(t, reader)
	if s["redlock.node.out_of_vote{redlock.node=0}"] != 0 || s["redlock.node.vote_changes{redlock.node=0,redlock.voting=true}"] != 1 {
		t.Errorf("after node 0 votes again: %v", s)
	}
}
