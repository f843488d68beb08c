package redlockrueidis

import (
	"context"
	"strconv"
	"strings"

	"github.com/redis/rueidis"

	"github.com/redlockplus/redlock"
)

var _ redlock.Batcher = node{}

// DoBatch sends the batch with one DoMulti (a single command with Do),
// scripts with EVALSHA; the scripts the server does not know are sent
// again with EVAL, after the rest of the batch.
func (n node) DoBatch(ctx context.Context, batch []redlock.Command) {
	var buf []string // the arguments of one command, which the builder copies
	cmds := make(rueidis.Commands, len(batch))
	for i := range batch {
		cmds[i], buf = n.command(&batch[i], false, buf)
	}
	var again []int
	for i, res := range n.run(ctx, cmds) {
		if batch[i].Script != nil && isNoScript(res.Error()) {
			again = append(again, i)
			continue
		}
		batch[i].Reply, batch[i].Err = result(res)
	}
	if len(again) == 0 {
		return
	}
	retry := make(rueidis.Commands, len(again))
	for j, i := range again {
		retry[j], buf = n.command(&batch[i], true, buf)
	}
	for j, res := range n.run(ctx, retry) {
		batch[again[j]].Reply, batch[again[j]].Err = result(res)
	}
}

// run sends cmds: one command with Do, several with DoMulti.
func (n node) run(ctx context.Context, cmds rueidis.Commands) []rueidis.RedisResult {
	ctx = pipelined{ctx}
	if len(cmds) == 1 {
		return []rueidis.RedisResult{n.c.Do(ctx, cmds[0])}
	}
	return n.c.DoMulti(ctx, cmds...)
}

// command builds c: a plain command, or a script by EVALSHA, or by EVAL
// when source is set. buf is scratch space for the arguments, returned
// for the next command.
//
// The keys go in as plain arguments, so that the command carries no slot:
// rueidis sends a command with a slot on one of its connections to the
// server at random (PipelineMultiplex), and one without on the first, so
// every command of the node travels on one connection and the server runs
// them in the order they were sent. A batch whose context ended is still
// on its way; on another connection the next batch could overtake it, and
// a failed attempt's delete then run before its SET, whose key would hold
// the lock for its TTL, and two attempts' batches reach this node in an
// order other nodes do not share (see the factory's batch transport).
func (n node) command(c *redlock.Command, source bool, buf []string) (rueidis.Completed, []string) {
	if c.Script == nil {
		args := strs(buf[:0], c.Args)
		return n.c.B().Arbitrary(c.Name).Args(args...).Build(), args
	}
	name, body := "EVALSHA", c.Script.Hash()
	if source {
		name, body = "EVAL", c.Script.Source()
	}
	args := append(append(buf[:0], body, strconv.Itoa(len(c.Keys))), c.Keys...)
	args = strs(args, c.Args)
	return n.c.B().Arbitrary(name).Args(args...).Build(), args
}

// isNoScript reports whether err is the server's NOSCRIPT reply.
func isNoScript(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT")
}
