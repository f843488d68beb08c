package pubsub

import (
	"errors"
	"slices"
	"testing"

	"github.com/gomodule/redigo/redis"
)

// The shapes redigo returns for RESP2 pub/sub replies, as the server sends
// them (see the tests against redis-server for the server's side).
func TestParsePush(t *testing.T) {
	b := func(s string) []byte { return []byte(s) }
	for _, tc := range []struct {
		name string
		in   any
		want push
		err  error
	}{
		{"message", []any{b("message"), b("ch"), b("data")}, push{kind: kindMessage, channel: "ch", data: b("data")}, nil},
		{"invalidation", []any{b("message"), b("__redis__:invalidate"), []any{b("k1"), b("k2")}}, push{kind: kindKeys, channel: "__redis__:invalidate", keys: []string{"k1", "k2"}}, nil},
		{"flush invalidation", []any{b("message"), b("__redis__:invalidate"), nil}, push{kind: kindKeys, channel: "__redis__:invalidate"}, nil},
		{"key not bulk", []any{b("message"), b("ch"), []any{int64(1)}}, push{}, ErrUnexpectedReply},
		{"payload of another type", []any{b("message"), b("ch"), int64(1)}, push{}, ErrUnexpectedReply},
		{"subscribe", []any{b("subscribe"), b("ch"), int64(1)}, push{kind: kindSubscription, channel: "ch"}, nil},
		{"unsubscribe", []any{b("unsubscribe"), b("ch"), int64(0)}, push{kind: kindSubscription, channel: "ch"}, nil},
		{"pong in subscribed mode", []any{b("pong"), b("")}, push{kind: kindPong}, nil},
		{"plain pong", "PONG", push{kind: kindPong}, nil},
		{"pattern message", []any{b("pmessage"), b("p*"), b("pa"), b("d")}, push{kind: kindOther}, nil},
		{"error reply", redis.Error("ERR no"), push{}, redis.Error("ERR no")},
		{"OK", "OK", push{}, ErrUnexpectedReply},
		{"short array", []any{b("message")}, push{}, ErrUnexpectedReply},
		{"message without data", []any{b("message"), b("ch")}, push{}, ErrUnexpectedReply},
		{"unknown kind", []any{b("smessage"), b("ch"), b("d")}, push{}, ErrUnexpectedReply},
		{"kind not bulk", []any{int64(1), b("ch")}, push{}, ErrUnexpectedReply},
		{"integer", int64(3), push{}, ErrUnexpectedReply},
	} {
		got, err := parsePush(tc.in)
		if !errors.Is(err, tc.err) || got.kind != tc.want.kind || got.channel != tc.want.channel || string(got.data) != string(tc.want.data) || !slices.Equal(got.keys, tc.want.keys) || (got.keys == nil) != (tc.want.keys == nil) {
			t.Errorf("%s: parsePush = %+v, %v; want %+v, %v", tc.name, got, err, tc.want, tc.err)
		}
	}
}
