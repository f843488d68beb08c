package redlockgoredis

import (
	"context"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/redlockplus/redlock"
)

var _ redlock.Batcher = node{}

// DoBatch sends the batch as one go-redis pipeline (a single command as
// itself), scripts with EVALSHA; the scripts the server does not know are
// sent again with EVAL in a second pipeline.
func (n node) DoBatch(ctx context.Context, batch []redlock.Command) {
	if len(batch) == 1 {
		c := &batch[0]
		if c.Script != nil {
			c.Reply, c.Err = n.RunScript(ctx, c.Script, c.Keys, c.Args...)
		} else {
			c.Reply, c.Err = n.Do(ctx, c.Name, c.Args...)
		}
		return
	}
	cmds := n.pipeline(ctx, batch, func(p redis.Pipeliner, c *redlock.Command) *redis.Cmd {
		if c.Script != nil {
			return p.EvalSha(ctx, c.Script.Hash(), c.Keys, c.Args...)
		}
		return p.Do(ctx, append([]any{c.Name}, c.Args...)...)
	})
	var again []int
	for i, cmd := range cmds {
		v, err := cmd.Result()
		if batch[i].Script != nil && err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT") {
			again = append(again, i)
			continue
		}
		batch[i].Reply, batch[i].Err = reply(v, err)
	}
	if len(again) == 0 {
		return
	}
	retry := make([]redlock.Command, len(again))
	for j, i := range again {
		retry[j] = batch[i]
	}
	for j, cmd := range n.pipeline(ctx, retry, func(p redis.Pipeliner, c *redlock.Command) *redis.Cmd {
		return p.Eval(ctx, c.Script.Source(), c.Keys, c.Args...)
	}) {
		batch[again[j]].Reply, batch[again[j]].Err = reply(cmd.Result())
	}
}

// pipeline queues one command per element of batch, made by add, and runs
// them; each command holds its own result.
func (n node) pipeline(ctx context.Context, batch []redlock.Command, add func(redis.Pipeliner, *redlock.Command) *redis.Cmd) []*redis.Cmd {
	p := n.c.Pipeline()
	cmds := make([]*redis.Cmd, len(batch))
	for i := range batch {
		cmds[i] = add(p, &batch[i])
	}
	_, _ = p.Exec(ctx) // the errors are the commands'
	return cmds
}
