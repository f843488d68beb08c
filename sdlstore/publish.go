package sdlstore

import (
	"context"

	"github.com/gomodule/redigo/redis"
)

// The *AndPublish operations write and notify in one atomic Lua script on
// the namespace's instance: subscribers never see a notification for a
// write that did not happen, and no other client sees the write without the
// notification having been sent. Each channel of ev gets one PUBLISH on
// "{ns},channel" whose message is its events joined with "___". An empty
// (or nil) ev makes them plain writes.

// SetAndPublish writes data (as Set) and publishes ev.
func (s *Store) SetAndPublish(ctx context.Context, ns string, ev ChannelEvents, data map[string][]byte) error {
	if err := s.usable(); err != nil {
		return err
	}
	if err := checkNamespace(ns); err != nil {
		return err
	}
	kv, err := checkData(ns, data)
	if err != nil {
		return err
	}
	pub, err := ev.publishArgs(ns)
	if err != nil {
		return err
	}
	in := s.inst(ns)
	if len(pub) == 0 {
		_, err = s.do(ctx, in, ns, "set", "MSET", kv...)
		return err
	}
	n := len(kv) / 2
	args := make([]any, 0, 1+len(kv)+len(pub))
	args = append(args, n)
	for i := 0; i < n; i++ {
		args = append(args, kv[2*i])
	}
	for i := 0; i < n; i++ {
		args = append(args, kv[2*i+1])
	}
	args = append(args, pub...)
	_, err = s.eval(ctx, in, ns, "set and publish", msetPubScript, args...)
	return err
}

// SetIfAndPublish writes newData to key iff its value is oldData (byte for
// byte) and then publishes ev. It reports whether it wrote; nothing is
// published when it did not.
func (s *Store) SetIfAndPublish(ctx context.Context, ns string, ev ChannelEvents, key string, oldData, newData []byte) (bool, error) {
	if err := s.checkKeyOp(ns, key); err != nil {
		return false, err
	}
	if err := checkValue("old data", oldData); err != nil {
		return false, err
	}
	if err := checkValue("new data", newData); err != nil {
		return false, err
	}
	pub, err := ev.publishArgs(ns)
	if err != nil {
		return false, err
	}
	args := append([]any{nsKey(ns, key), newData, oldData}, pub...)
	return s.evalBool(ctx, ns, "set if", setIfScript, args)
}

// SetIfNotExistsAndPublish writes data to key iff the key does not exist,
// and then publishes ev. It reports whether it wrote.
func (s *Store) SetIfNotExistsAndPublish(ctx context.Context, ns string, ev ChannelEvents, key string, data []byte) (bool, error) {
	if err := s.checkKeyOp(ns, key); err != nil {
		return false, err
	}
	if err := checkValue("data", data); err != nil {
		return false, err
	}
	pub, err := ev.publishArgs(ns)
	if err != nil {
		return false, err
	}
	if len(pub) == 0 {
		ok, err := redis.Bool(s.do(ctx, s.inst(ns), ns, "set if not exists", "SETNX", nsKey(ns, key), data))
		return ok, replyErr("set if not exists", err)
	}
	args := append([]any{nsKey(ns, key), data}, pub...)
	return s.evalBool(ctx, ns, "set if not exists and publish", setNXPubScript, args)
}

// RemoveAndPublish deletes keys and publishes ev iff at least one of them
// existed.
func (s *Store) RemoveAndPublish(ctx context.Context, ns string, ev ChannelEvents, keys ...string) error {
	if err := s.usable(); err != nil {
		return err
	}
	if err := checkNamespace(ns); err != nil {
		return err
	}
	if err := checkKeys(keys); err != nil {
		return err
	}
	pub, err := ev.publishArgs(ns)
	if err != nil {
		return err
	}
	_, err = s.removeKeys(ctx, s.inst(ns), ns, keys, pub, "remove")
	return err
}

// removeKeys deletes keys (validated, without namespace) in batches. With
// pub, the last batch runs in the delete-and-publish script, which publishes
// iff any batch removed a key; a single batch is fully atomic.
func (s *Store) removeKeys(ctx context.Context, in *instance, ns string, keys []string, pub []any, op string) (int64, error) {
	var removed int64
	for start := 0; start < len(keys); start += removeBatch {
		part := keys[start:min(start+removeBatch, len(keys))]
		last := start+removeBatch >= len(keys)
		if !last || len(pub) == 0 {
			n, err := redis.Int64(s.do(ctx, in, ns, op, "DEL", nsKeys(ns, part)...))
			if err != nil {
				return removed, replyErr(op, err)
			}
			removed += n
			continue
		}
		args := make([]any, 0, 2+len(part)+len(pub))
		args = append(args, len(part))
		args = append(args, nsKeys(ns, part)...)
		args = append(args, removed)
		args = append(args, pub...)
		n, err := redis.Int64(s.eval(ctx, in, ns, op+" and publish", delPubScript, args...))
		if err != nil {
			return removed, replyErr(op+" and publish", err)
		}
		removed += n
	}
	return removed, nil
}

// RemoveIfAndPublish deletes key iff its value is data (byte for byte) and
// then publishes ev. It reports whether it deleted.
func (s *Store) RemoveIfAndPublish(ctx context.Context, ns string, ev ChannelEvents, key string, data []byte) (bool, error) {
	if err := s.checkKeyOp(ns, key); err != nil {
		return false, err
	}
	if err := checkValue("data", data); err != nil {
		return false, err
	}
	pub, err := ev.publishArgs(ns)
	if err != nil {
		return false, err
	}
	args := append([]any{nsKey(ns, key), data}, pub...)
	return s.evalBool(ctx, ns, "remove if", delIfScript, args)
}

// RemoveAllAndPublish deletes every key and group of namespace ns (as
// RemoveAll) and publishes ev iff at least one was removed. Up to 10000
// keys are deleted and published in one atomic script; beyond that the
// earlier batches are plain deletes and the last one publishes.
func (s *Store) RemoveAllAndPublish(ctx context.Context, ns string, ev ChannelEvents) error {
	if err := s.usable(); err != nil {
		return err
	}
	if err := checkNamespace(ns); err != nil {
		return err
	}
	pub, err := ev.publishArgs(ns)
	if err != nil {
		return err
	}
	in := s.inst(ns)
	seen := make(map[string]struct{})
	var keys []string
	err = s.scan(ctx, in, "remove all", ns, "*", func(page []string) error {
		for _, k := range page {
			if _, dup := seen[k]; !dup {
				seen[k] = struct{}{}
				keys = append(keys, k)
			}
		}
		return nil
	})
	if err != nil || len(keys) == 0 {
		return err
	}
	_, err = s.removeKeys(ctx, in, ns, keys, pub, "remove all")
	return err
}

// checkKeyOp validates the namespace and key of a single-key call.
func (s *Store) checkKeyOp(ns, key string) error {
	if err := s.usable(); err != nil {
		return err
	}
	if err := checkNamespace(ns); err != nil {
		return err
	}
	return checkName("key", key)
}

// evalBool runs a single-key script that answers 1 or 0.
func (s *Store) evalBool(ctx context.Context, ns, op string, sc *script, args []any) (bool, error) {
	n, err := redis.Int64(s.eval(ctx, s.inst(ns), ns, op, sc, args...))
	if err != nil {
		return false, replyErr(op, err)
	}
	return n == 1, nil
}
