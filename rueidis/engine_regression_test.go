package redlockrueidis_test

// Regression tests of defects that the engine refactor is to fix; each
// fails on the code before it (b6ede60).

import (
	"testing"

	"github.com/redlockplus/redlock/internal/testkit/conformance"
)

// TestObserverEveryPrimitive: every primitive reports to the observer the
// events a Lock reports, over this client; see
// conformance.ObserverEveryPrimitive.
func TestObserverEveryPrimitive(t *testing.T) { conformance.ObserverEveryPrimitive(t, rueidisClient) }

// TestMultiLockSplitVote: over this client, a MultiLock's failed
// attempt's delete reaches every node in one order, as a Lock's does (the
// split-vote fix of 13b3b61); see conformance.MultiLockSplitVote.
func TestMultiLockSplitVote(t *testing.T) { conformance.MultiLockSplitVote(t, rueidisClient) }
