package sdlstore

import (
	"context"
	"hash/crc32"
	"io"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/redlockplus/redlock"
)

// Store is the Shared Data Layer over one or more Redis instances. Each
// namespace lives on one instance, chosen by crc32(namespace) % instances
// exactly as ricsdl and sdlgo choose it, so the three share data, groups,
// locks and notifications on the same Redis.
//
// A Store is safe for concurrent use. Close stops its subscribers and event
// listener and waits for them.
type Store struct {
	cfg   config
	insts []*instance
	owned []io.Closer // pools made by NewFromEnv, closed by Close

	ctx    context.Context // cancelled by Close; bounds every goroutine
	cancel context.CancelFunc
	closed atomic.Bool
	lifeMu sync.Mutex // orders wg.Add in spawn against Close
	wg     sync.WaitGroup
	subMu  sync.Mutex // guards instance.sub

	ev eventQueue
}

// instance is one Redis instance (a standalone server or a sentinel-managed
// master) and its shared subscriber connection. Its commands go through
// pool or, in a Store made by NewFromNodes, through node.
type instance struct {
	index int
	pool  redlock.Pool // nil when node is set
	node  redlock.Node // NewFromNodes; nil otherwise
	name  string       // host:port when NewFromEnv made the pool, else ""
	sub   *subscriber  // created by the first SubscribeChannel; guarded by Store.subMu
}

// New returns a Store over nodes, one pool per Redis instance in hashing
// order (the order of DBAAS_CLUSTER_ADDR_LIST in ricsdl and sdlgo). Any
// redlock.Pool works, *redis.Pool included; the pools stay owned by the
// caller, who closes them after Store.Close. New does not dial: use
// IsActive to check the instances.
func New(nodes []redlock.Pool, opts ...Option) (*Store, error) {
	cfg, err := applyOptions(opts)
	if err != nil {
		return nil, err
	}
	return newStore(nodes, cfg, nil)
}

func newStore(nodes []redlock.Pool, cfg config, owned []io.Closer) (*Store, error) {
	if err := checkInstances(nodes, "pool"); err != nil {
		return nil, err
	}
	insts := make([]*instance, len(nodes))
	for i, p := range nodes {
		insts[i] = &instance{index: i, pool: p}
	}
	return open(insts, cfg, owned), nil
}

// open returns a Store over insts, checked by checkInstances.
func open(insts []*instance, cfg config, owned []io.Closer) *Store {
	s := &Store{cfg: cfg, insts: insts, owned: owned}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.ev.init(cfg)
	return s
}

// checkInstances refuses an empty list, a nil entry and an entry given
// twice; kind names the entries in messages.
func checkInstances[T any](list []T, kind string) error {
	if len(list) == 0 {
		return invalidArg("no Redis instances given")
	}
	for i, e := range list {
		if isNilValue(e) {
			return invalidArg("instance %d is nil", i)
		}
		for j := 0; j < i; j++ {
			if sameValue(list[j], e) {
				return invalidArg("instance %d is the same %s as instance %d", i, kind, j)
			}
		}
	}
	return nil
}

// isNilValue reports whether v is nil or a typed nil.
func isNilValue(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Func, reflect.Chan, reflect.Interface, reflect.Slice:
		return rv.IsNil()
	}
	return false
}

// sameValue reports whether a and b are the same pool or node; never
// panics on values of a non-comparable type.
func sameValue(a, b any) bool {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	if va.Type() != vb.Type() || !va.Comparable() {
		return false
	}
	return va.Equal(vb)
}

// InstanceIndex returns the index, in the node list, of the instance that
// holds namespace ns: crc32.ChecksumIEEE(ns) % instances.
func (s *Store) InstanceIndex(ns string) int {
	return instanceIndex(ns, len(s.insts))
}

func instanceIndex(ns string, n int) int {
	return int(crc32.ChecksumIEEE([]byte(ns)) % uint32(n))
}

// NodeCount returns how many Redis nodes each instance is expected to have
// (WithNodeCount, DBAAS_NODE_COUNT; default 1).
func (s *Store) NodeCount() int { return s.cfg.nodeCount }

// Instances returns how many Redis instances the Store spreads namespaces over.
func (s *Store) Instances() int { return len(s.insts) }

// inst returns the instance of a validated namespace.
func (s *Store) inst(ns string) *instance { return s.insts[s.InstanceIndex(ns)] }

// Close stops the subscribers and the event listener, waits for them to
// exit, and closes the pools NewFromEnv made. Pools given to New and nodes
// given to NewFromNodes are left open. Every later call returns ErrClosed. Close is idempotent; it must not
// be called from an event callback.
func (s *Store) Close() error {
	s.lifeMu.Lock()
	already := s.closed.Swap(true)
	s.lifeMu.Unlock()
	if already {
		return nil
	}
	s.closeSubscribers()
	s.cancel()
	s.ev.wake()
	s.wg.Wait()
	var first error
	for _, c := range s.owned {
		if err := c.Close(); err != nil && first == nil {
			first = backendErr("close", err)
		}
	}
	return first
}

// closeSubscribers stops the subscriber of every instance and waits for
// it. None starts after Close began: spawn refuses it.
func (s *Store) closeSubscribers() {
	s.subMu.Lock()
	var subs []*subscriber
	for _, in := range s.insts {
		if in.sub != nil {
			subs = append(subs, in.sub)
		}
	}
	s.subMu.Unlock()
	for _, sb := range subs {
		sb.ps.Close()
	}
}

// spawn runs fn in a goroutine that Close waits for; false after Close.
func (s *Store) spawn(fn func()) bool {
	s.lifeMu.Lock()
	defer s.lifeMu.Unlock()
	if s.closed.Load() {
		return false
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		fn()
	}()
	return true
}

// usable returns ErrClosed after Close.
func (s *Store) usable() error {
	if s.closed.Load() {
		return ErrClosed
	}
	return nil
}

// IsActive reports whether every instance answers PING (ricsdl is_active).
func (s *Store) IsActive(ctx context.Context) bool {
	if s.usable() != nil {
		return false
	}
	for _, in := range s.insts {
		if _, err := s.do(ctx, in, "", "is active", "PING"); err != nil {
			return false
		}
	}
	return true
}

// do runs one command on an instance, with ctx bounding the pool wait and
// the reply, and maps its error. A ctx that has already ended sends
// nothing: redigo's DoContext would race the reply against it, so that
// such a call sometimes succeeded. Replies have redigo's forms on either
// kind of instance (nodes.go converts a node's).
// ns is the namespace for the observer ("" when the call has none).
func (s *Store) do(ctx context.Context, in *instance, ns, op, cmd string, args ...any) (v any, err error) {
	if s.cfg.observer != nil {
		defer s.observe(ctx, in, ns, op, time.Now(), &err)
	}
	if err := ctx.Err(); err != nil {
		return nil, s.fault(in, op, err)
	}
	if in.node != nil {
		v, err = nodeDo(ctx, in.node, cmd, args)
		return v, s.fault(in, op, err)
	}
	c, err := in.pool.GetContext(ctx)
	if err != nil {
		return nil, s.fault(in, op, err)
	}
	defer c.Close()
	v, err = redis.DoContext(c, ctx, cmd, args...)
	return v, s.fault(in, op, err)
}

// eval runs a script on an instance (EVALSHA, EVAL on NOSCRIPT).
func (s *Store) eval(ctx context.Context, in *instance, ns, op string, sc *script, keysAndArgs ...any) (v any, err error) {
	if s.cfg.observer != nil {
		defer s.observe(ctx, in, ns, op, time.Now(), &err)
	}
	if err := ctx.Err(); err != nil {
		return nil, s.fault(in, op, err)
	}
	if in.node != nil {
		v, err = nodeEval(ctx, in.node, sc, keysAndArgs)
		return v, s.fault(in, op, err)
	}
	c, err := in.pool.GetContext(ctx)
	if err != nil {
		return nil, s.fault(in, op, err)
	}
	defer c.Close()
	v, err = sc.rs.DoContext(ctx, c, keysAndArgs...)
	return v, s.fault(in, op, err)
}

// fault maps err and, when it shows a broken connection or a demoted
// master, makes a sentinel pool look for the master again.
func (s *Store) fault(in *instance, op string, err error) error {
	if err == nil {
		return nil
	}
	if isConnectionFault(err) {
		if r, ok := in.pool.(rediscoverer); ok {
			r.rediscover()
		}
	}
	return backendErr(op, err)
}

// rediscoverer is implemented by pools that can find their master again.
type rediscoverer interface{ rediscover() }

// replyErr maps a reply that has the wrong type.
func replyErr(op string, err error) error {
	if err == nil {
		return nil
	}
	return backendErr(op, err)
}
