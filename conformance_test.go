package redlock_test

import (
	"testing"

	"github.com/redlockplus/redlock/internal/testkit/conformance"
)

// TestConformance holds the redigo pools to the suite that the go-redis and
// rueidis modules run too.
func TestConformance(t *testing.T) { conformance.Run(t, conformance.Redigo) }
