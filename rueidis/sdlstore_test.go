package redlockrueidis_test

import (
	"testing"

	"github.com/redlockplus/redlock/internal/testkit/sdlsuite"
)

// TestSDLStore runs sdlstore's suite on a Store made by
// sdlstore.NewFromNodes over rueidis nodes.
func TestSDLStore(t *testing.T) { sdlsuite.RunNodes(t, rueidisClient.Nodes) }
