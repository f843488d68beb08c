package pubsub

import (
	"fmt"

	"github.com/gomodule/redigo/redis"
)

// pushKind is what a reply on a subscribed connection is.
type pushKind int

const (
	kindOther        pushKind = iota // a reply this package ignores (pattern replies)
	kindMessage                      // a message on a subscribed channel
	kindKeys                         // a message whose payload is an array of keys, or nil
	kindSubscription                 // the answer to SUBSCRIBE or UNSUBSCRIBE, per channel
	kindPong                         // the answer to PING
)

// push is one parsed reply.
type push struct {
	kind    pushKind
	channel string
	data    []byte
	keys    []string // kindKeys: the payload's keys; nil for a nil payload
}

// parsePush reads one reply. A connection with no subscription answers
// PING with a plain PONG, a subscribed one with a "pong" array; both are
// accepted. An error reply or an unknown shape is an error.
func parsePush(v any) (push, error) {
	switch v := v.(type) {
	case string:
		if v == "PONG" {
			return push{kind: kindPong}, nil
		}
	case redis.Error:
		return push{}, v
	case []any:
		return parseArray(v)
	}
	return push{}, fmt.Errorf("%w: %T %v", ErrUnexpectedReply, v, v)
}

// parseArray reads a reply in the form [kind, channel, ...].
func parseArray(v []any) (push, error) {
	if len(v) < 2 {
		return push{}, fmt.Errorf("%w: %v", ErrUnexpectedReply, v)
	}
	kind, ok := v[0].([]byte)
	if !ok {
		return push{}, fmt.Errorf("%w: %v", ErrUnexpectedReply, v)
	}
	switch string(kind) {
	case "message":
		ch, ok1 := v[1].([]byte)
		data, ok2 := v[len(v)-1].([]byte)
		if len(v) == 3 && ok1 && ok2 {
			return push{kind: kindMessage, channel: string(ch), data: data}, nil
		}
		if len(v) == 3 && ok1 {
			return parseKeys(string(ch), v[2])
		}
	case "subscribe", "unsubscribe":
		if ch, ok := v[1].([]byte); ok && len(v) == 3 {
			return push{kind: kindSubscription, channel: string(ch)}, nil
		}
	case "pong":
		return push{kind: kindPong}, nil
	case "pmessage", "psubscribe", "punsubscribe":
		return push{kind: kindOther}, nil
	}
	return push{}, fmt.Errorf("%w: %q", ErrUnexpectedReply, v)
}

// parseKeys reads the payload of a message that is not a string: the
// invalidations of Redis client-side caching in RESP2 redirect mode carry
// an array of keys, or nil when every key was invalidated (FLUSHALL).
func parseKeys(channel string, payload any) (push, error) {
	p := push{kind: kindKeys, channel: channel}
	if payload == nil {
		return p, nil
	}
	arr, ok := payload.([]any)
	if !ok {
		return push{}, fmt.Errorf("%w: message payload %T", ErrUnexpectedReply, payload)
	}
	p.keys = make([]string, len(arr))
	for i, k := range arr {
		b, ok := k.([]byte)
		if !ok {
			return push{}, fmt.Errorf("%w: key %T in a message payload", ErrUnexpectedReply, k)
		}
		p.keys[i] = string(b)
	}
	return p, nil
}
