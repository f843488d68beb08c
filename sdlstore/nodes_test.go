package sdlstore_test

import (
	"testing"

	"github.com/redlockplus/redlock/internal/testkit/conformance"
	"github.com/redlockplus/redlock/internal/testkit/sdlsuite"
)

// TestSuiteNodes runs the suite on stores made by NewFromNodes over
// redlock.PoolNode nodes, which are not redlock.PubSubNodes: every case
// that subscribes checks that SubscribeChannel refuses with
// ErrSubscribeUnsupported.
func TestSuiteNodes(t *testing.T) { sdlsuite.RunNodes(t, conformance.Redigo.Nodes) }

// TestSuitePubSubNodes runs the suite on stores made by NewFromNodes over
// PubSubNodes of another client (redigo posing as one), so that every
// case that subscribes runs over the connections of the nodes' PubSub;
// the goredis and rueidis modules run it over theirs.
func TestSuitePubSubNodes(t *testing.T) { sdlsuite.RunNodes(t, conformance.RedigoPubSub.Nodes) }
