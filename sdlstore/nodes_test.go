package sdlstore_test

import (
	"testing"

	"github.com/redlockplus/redlock/internal/conformance"
	"github.com/redlockplus/redlock/internal/sdlsuite"
)

// TestSuiteNodes runs the suite on stores made by NewFromNodes over
// redlock.PoolNode nodes; the goredis and rueidis modules run it over
// theirs.
func TestSuiteNodes(t *testing.T) { sdlsuite.RunNodes(t, conformance.Redigo.Nodes) }
