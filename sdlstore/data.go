package sdlstore

import (
	"context"
	"slices"

	"github.com/gomodule/redigo/redis"
)

// scanCount is the COUNT hint of each SCAN step, and removeBatch the most
// keys deleted by one command or script.
const (
	scanCount   = 1000
	removeBatch = 10000
)

// checkData validates a key/value map and returns MSET-style arguments
// (Redis key, value, ...) in key order.
func checkData(ns string, data map[string][]byte) ([]any, error) {
	if data == nil {
		return nil, invalidArg("data is nil")
	}
	if len(data) == 0 {
		return nil, invalidArg("data has no keys")
	}
	keys := make([]string, 0, len(data))
	for k, v := range data {
		if err := checkName("key", k); err != nil {
			return nil, err
		}
		if err := checkValue("value of key "+k, v); err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	args := make([]any, 0, 2*len(keys))
	for _, k := range keys {
		args = append(args, nsKey(ns, k), data[k])
	}
	return args, nil
}

// Set writes every key of data in namespace ns (one MSET). A nil value is
// rejected; use an empty slice for an empty value.
func (s *Store) Set(ctx context.Context, ns string, data map[string][]byte) error {
	if err := s.usable(); err != nil {
		return err
	}
	if err := checkNamespace(ns); err != nil {
		return err
	}
	args, err := checkData(ns, data)
	if err != nil {
		return err
	}
	_, err = s.do(ctx, s.inst(ns), ns, "set", "MSET", args...)
	return err
}

// SetIf writes newData to key iff its current value is oldData, compared
// byte for byte, and reports whether it did. A missing key never matches.
func (s *Store) SetIf(ctx context.Context, ns, key string, oldData, newData []byte) (bool, error) {
	return s.SetIfAndPublish(ctx, ns, nil, key, oldData, newData)
}

// SetIfNotExists writes data to key iff the key does not exist, and
// reports whether it did.
func (s *Store) SetIfNotExists(ctx context.Context, ns, key string, data []byte) (bool, error) {
	return s.SetIfNotExistsAndPublish(ctx, ns, nil, key, data)
}

// Get returns the values of keys in namespace ns. Keys that do not exist
// (or hold a group) are absent from the map; the map is never nil.
func (s *Store) Get(ctx context.Context, ns string, keys ...string) (map[string][]byte, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	if err := checkNamespace(ns); err != nil {
		return nil, err
	}
	if err := checkKeys(keys); err != nil {
		return nil, err
	}
	return s.mget(ctx, s.inst(ns), ns, keys)
}

// mget reads keys (already validated) into a map of the present ones.
func (s *Store) mget(ctx context.Context, in *instance, ns string, keys []string) (map[string][]byte, error) {
	out := make(map[string][]byte, len(keys))
	for start := 0; start < len(keys); start += removeBatch {
		part := keys[start:min(start+removeBatch, len(keys))]
		vals, err := redis.Values(s.do(ctx, in, ns, "get", "MGET", nsKeys(ns, part)...))
		if err != nil {
			return nil, replyErr("get", err)
		}
		for i, v := range vals {
			if b, ok := v.([]byte); ok {
				out[part[i]] = b
			}
		}
	}
	return out, nil
}

// FindKeys returns, sorted, the keys (and group names) of namespace ns that
// match pattern, a Redis glob (*, ?, [...], \ escapes) on the key part. It
// walks the instance with SCAN, so it does not block Redis however many
// keys there are; a key written or removed during the walk may or may not
// be reported.
func (s *Store) FindKeys(ctx context.Context, ns, pattern string) ([]string, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	if err := checkNamespace(ns); err != nil {
		return nil, err
	}
	seen := make(map[string]struct{})
	err := s.scan(ctx, s.inst(ns), "find keys", ns, pattern, func(keys []string) error {
		for _, k := range keys {
			seen[k] = struct{}{}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	slices.Sort(out)
	return out, nil
}

// FindAndGet returns the keys of namespace ns that match pattern (as
// FindKeys) with their values. Groups are not included.
func (s *Store) FindAndGet(ctx context.Context, ns, pattern string) (map[string][]byte, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	if err := checkNamespace(ns); err != nil {
		return nil, err
	}
	in := s.inst(ns)
	seen := make(map[string]struct{})
	var keys []string
	err := s.scan(ctx, in, "find and get", ns, pattern, func(page []string) error {
		for _, k := range page {
			if _, dup := seen[k]; !dup {
				seen[k] = struct{}{}
				keys = append(keys, k)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return s.mget(ctx, in, ns, keys)
}

// scan walks the keys of namespace ns matching pattern and calls fn with
// each page of keys, without the namespace prefix.
func (s *Store) scan(ctx context.Context, in *instance, op, ns, pattern string, fn func(keys []string) error) error {
	prefix := nsPrefix(ns)
	return s.scanMatch(ctx, in, ns, op, globEscape(prefix)+pattern, func(raw []string) error {
		keys := raw[:0]
		for _, k := range raw {
			if len(k) > len(prefix) && k[:len(prefix)] == prefix { // defensive: the match is anchored
				keys = append(keys, k[len(prefix):])
			}
		}
		if len(keys) == 0 {
			return nil
		}
		return fn(keys)
	})
}

// scanMatch walks the keys of an instance matching a glob pattern with
// SCAN and calls fn with each non-empty page of Redis keys; ns is for the
// observer, which hears of each SCAN. The cursor needs no particular
// connection, so each page is a command of its own.
func (s *Store) scanMatch(ctx context.Context, in *instance, ns, op, match string, fn func(raw []string) error) error {
	cursor := "0"
	for {
		vals, err := redis.Values(s.do(ctx, in, ns, op, "SCAN", cursor, "MATCH", match, "COUNT", scanCount))
		if err != nil {
			return replyErr(op, err)
		}
		if len(vals) != 2 {
			return backendErr(op, errUnexpectedReply)
		}
		next, err := redis.String(vals[0], nil)
		if err != nil {
			return backendErr(op, err)
		}
		raw, err := redis.Strings(vals[1], nil)
		if err != nil {
			return backendErr(op, err)
		}
		if len(raw) > 0 {
			if err := fn(raw); err != nil {
				return err
			}
		}
		if next == "0" {
			return nil
		}
		cursor = next
	}
}

// Remove deletes keys of namespace ns; missing keys are ignored.
func (s *Store) Remove(ctx context.Context, ns string, keys ...string) error {
	return s.RemoveAndPublish(ctx, ns, nil, keys...)
}

// RemoveIf deletes key iff its value is data, compared byte for byte, and
// reports whether it did.
func (s *Store) RemoveIf(ctx context.Context, ns, key string, data []byte) (bool, error) {
	return s.RemoveIfAndPublish(ctx, ns, nil, key, data)
}

// RemoveAll deletes every key and group of namespace ns. It walks the
// instance with SCAN, then deletes in batches of up to 10000 keys, so it
// copes with any number of keys without blocking Redis; it is not atomic: a
// key written during the walk may survive.
func (s *Store) RemoveAll(ctx context.Context, ns string) error {
	return s.RemoveAllAndPublish(ctx, ns, nil)
}
