package sdltest

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/redlockplus/redlock/internal/testkit/sdlsuite"
	"github.com/redlockplus/redlock/sdlstore"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestSuite runs sdlstore's data, notification and lock tests on the
// embedded servers.
func TestSuite(t *testing.T) {
	sdlsuite.Run(t, func(t *testing.T, n int, opts ...sdlstore.Option) (*sdlstore.Store, []string) {
		return start(t, n, opts...)
	})
}
