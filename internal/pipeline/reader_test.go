package pipeline_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockplus/redlock/internal/testkit/redistest"
)

// TestSocketReadsRepliesAsRedigo sends commands whose replies cover every
// RESP2 form over both ways of reading: each reply equals what redigo's Do
// gives for the same command on a connection of its own.
func TestSocketReadsRepliesAsRedigo(t *testing.T) {
	c := redistest.Start(t, 1)
	big := strings.Repeat("b", 100_000) // longer than the reader's buffer
	setup := [][]any{{"SET", "k", "v"}, {"SET", "empty", ""}, {"SET", "big", big}, {"DEL", "list"}}
	cmds := [][]any{
		{"PING"},                              // +PONG
		{"SET", "k", "v"},                     // +OK
		{"TYPE", "k"},                         // another simple string
		{"GET", "k"},                          // bulk
		{"GET", "empty"},                      // empty bulk, not nil
		{"GET", "missing"},                    // nil bulk
		{"GET", "big"},                        // a bulk longer than the buffer
		{"LRANGE", "list", 0, -1},             // empty array
		{"INCRBY", "n", -9223372036854775807}, // a negative integer of 19 digits
		{"EVAL", "return {1, {2, 'a', {}}, false, 9007199254740993}", 0}, // nested, nil inside
		{"EVAL", "return {1, redis.error_reply('INNER fails')}", 0},      // an error inside an array
		{"EVAL", "return redis.error_reply('OUTER fails')", 0},           // an error reply
		{"TIME"},
	}
	rc := c.Nodes[0].Pool().Get()
	defer rc.Close()
	for _, cmd := range setup {
		if _, err := rc.Do(cmd[0].(string), cmd[1:]...); err != nil {
			t.Fatal(err)
		}
	}
	for mode, dial := range dialModes(c.Nodes[0]) {
		t.Run(mode, func(t *testing.T) {
			p := newConnWith(t, dial, &owner{})
			for _, cmd := range cmds {
				if cmd[0] == "INCRBY" {
					rc.Do("DEL", "n")
				}
				name := cmd[0].(string)
				want, wantErr := receive(rc, name, cmd[1:]...)
				if cmd[0] == "INCRBY" {
					rc.Do("DEL", "n")
				}
				call := newCall(name, cmd[1:]...)
				p.Send(call)
				got := call.wait(t)
				if name == "TIME" {
					if vals, ok := got.v.([]any); !ok || len(vals) != 2 || got.err != nil {
						t.Errorf("TIME replied %#v, %v", got.v, got.err)
					}
					continue
				}
				if !reflect.DeepEqual(got.v, want) || !reflect.DeepEqual(got.err, wantErr) {
					t.Errorf("%.40v replied %#.60v, %v; redigo %#.60v, %v", cmd, got.v, got.err, want, wantErr)
				}
			}
		})
	}
}

// receive sends one command through redigo and reads its reply as the
// pipeline's reader does, with Receive: an error reply is the error only.
func receive(rc redis.Conn, name string, args ...any) (any, error) {
	if err := rc.Send(name, args...); err != nil {
		return nil, err
	}
	if err := rc.Flush(); err != nil {
		return nil, err
	}
	return rc.Receive()
}
