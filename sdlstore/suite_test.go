package sdlstore_test

import (
	"testing"

	"github.com/redlockplus/redlock/internal/testkit/sdlsuite"
	"github.com/redlockplus/redlock/sdlstore"
)

// TestSuite runs the data, notification and lock tests shared with the
// sdltest module on redis-server instances.
func TestSuite(t *testing.T) {
	sdlsuite.Run(t, func(t *testing.T, n int, opts ...sdlstore.Option) (*sdlstore.Store, []string) {
		e := newEnv(t, n, opts...)
		return e.s, e.c.Addrs()
	})
}
