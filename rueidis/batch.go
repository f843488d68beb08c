package redlockrueidis

import (
	"context"
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
	if len(cmds) == 1 {
		return []rueidis.RedisResult{n.c.Do(ctx, cmds[0])}
	}
	return n.c.DoMulti(ctx, cmds...)
}

// command builds c: a plain command, or a script by EVALSHA, or by EVAL
// when source is set. buf is scratch space for the arguments, returned
// for the next command.
func (n node) command(c *redlock.Command, source bool, buf []string) (rueidis.Completed, []string) {
	args := strs(buf[:0], c.Args)
	switch {
	case c.Script == nil:
		return n.c.B().Arbitrary(c.Name).Args(args...).Build(), args
	case source:
		return n.c.B().Eval().Script(c.Script.Source()).Numkeys(int64(len(c.Keys))).Key(c.Keys...).Arg(args...).Build(), args
	}
	return n.c.B().Evalsha().Sha1(c.Script.Hash()).Numkeys(int64(len(c.Keys))).Key(c.Keys...).Arg(args...).Build(), args
}

// isNoScript reports whether err is the server's NOSCRIPT reply.
func isNoScript(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT")
}
