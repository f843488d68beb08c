package redlock_test

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redlockplus/redlock"
	"github.com/redlockplus/redlock/internal/testkit/conformance"
	"github.com/redlockplus/redlock/internal/testkit/redistest"
)

// TestPubSubNode: a factory over PubSubNodes of another client is woken by
// releases over their connections, which it closes in Close and opens
// again after the server killed them.
func TestPubSubNode(t *testing.T) {
	conformance.RunWakeups(t, conformance.RedigoPubSub)
}

// TestPubSubNodeFailing: PubSubNodes whose PubSub always fails leave the
// blocked Acquire calls polling while the subscribers try again, and Close
// still returns (the leak check of TestMain finds their goroutines gone).
func TestPubSubNodeFailing(t *testing.T) {
	cl := redistest.Start(t, 3)
	ctx := ctxT(t, 30*time.Second)
	var log bytes.Buffer // written under the handler's lock, read after Close
	f, err := redlock.NewFactoryFromNodes(conformance.PubSubNodes(errors.New("no pub/sub here"))(t, cl.Addrs()),
		redlock.WithRetryDelay(50*time.Millisecond), redlock.WithLogger(slog.New(slog.NewTextHandler(&log, nil))))
	if err != nil {
		t.Fatal(err)
	}
	holder := f.NewLock("polled", redlock.WithTTL(500*time.Millisecond), redlock.WithAutoextend(false))
	if _, err := holder.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	w := f.NewLock("polled", redlock.WithRetryTimes(1<<20))
	if _, err := w.Acquire(ctx); err != nil {
		t.Fatalf("Acquire after the holder's key expired: %v", err)
	}
	if err := w.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if !strings.Contains(log.String(), "no pub/sub here") {
		t.Fatalf("no subscriber tried PubSub; log:\n%s", log.String())
	}
}
