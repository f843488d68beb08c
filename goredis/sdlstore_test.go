package redlockgoredis_test

import (
	"testing"

	"github.com/redlockplus/redlock/internal/testkit/sdlsuite"
)

// TestSDLStore runs sdlstore's suite on a Store made by
// sdlstore.NewFromNodes over go-redis nodes.
func TestSDLStore(t *testing.T) { sdlsuite.RunNodes(t, goRedis.Nodes) }
