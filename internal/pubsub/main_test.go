package pubsub_test

import (
	"testing"

	"github.com/redlockplus/redlock/internal/testkit/leakcheck"
)

// TestMain fails the package when a test leaves a goroutine running: every
// Subscriber must be gone once Close returned.
func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m, nil) }
