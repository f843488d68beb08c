package pubsub

import (
	"errors"
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
		if !errors.Is(err, tc.err) || got.kind != tc.want.kind || got.channel != tc.want.channel || string(got.data) != string(tc.want.data) {
			t.Errorf("%s: parsePush = %+v, %v; want %+v, %v", tc.name, got, err, tc.want, tc.err)
		}
	}
}
