package redlockrueidis_test

// Regression tests of defects that the engine refactor is to fix; each
// fails on the code before it (b6ede60).

import (
	"testing"

	"github.com/redlockplus/redlock/internal/conformance"
)

// TestObserverEveryPrimitive: every primitive reports to the observer the
// events a Lock reports, over this client; see
// conformance.ObserverEveryPrimitive.
func TestObserverEveryPrimitive(t *testing.T) { conformance.ObserverEveryPrimitive(t, rueidisClient) }
