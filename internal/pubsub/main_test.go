package pubsub_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a test leaves a goroutine running: every
// Subscriber must be gone once Close returned.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
