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
// sent again with EVAL, after the rest of the batch.
func (n node) DoBatch(ctx context.Context, batch []redlock.Command) {
	cmds := make([]*redis.Cmd, len(batch))
	for i := range batch {
		cmds[i] = command(ctx, &batch[i], false)
	}
	n.run(ctx, cmds)
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
	retry := make([]*redis.Cmd, len(again))
	for j, i := range again {
		retry[j] = command(ctx, &batch[i], true)
	}
	n.run(ctx, retry)
	for j, cmd := range retry {
		batch[again[j]].Reply, batch[again[j]].Err = reply(cmd.Result())
	}
}

// run sends cmds through the client: one command as itself, several as a
// pipeline. Each command holds its own result.
func (n node) run(ctx context.Context, cmds []*redis.Cmd) {
	if len(cmds) == 1 {
		_ = n.c.Process(ctx, cmds[0])
		return
	}
	p := n.c.Pipeline()
	for _, cmd := range cmds {
		_ = p.Process(ctx, cmd)
	}
	_, _ = p.Exec(ctx) // the errors are the commands'
}

// command is c as a go-redis command, made with one allocation for its
// arguments (go-redis's EvalSha makes several): a plain command, or a
// script by EVALSHA, or by EVAL when source is set.
func command(ctx context.Context, c *redlock.Command, source bool) *redis.Cmd {
	if c.Script == nil {
		args := make([]any, 0, 1+len(c.Args))
		return redis.NewCmd(ctx, append(append(args, c.Name), c.Args...)...)
	}
	args := make([]any, 0, 3+len(c.Keys)+len(c.Args))
	if source {
		args = append(args, "eval", c.Script.Source())
	} else {
		args = append(args, "evalsha", c.Script.Hash())
	}
	args = append(args, len(c.Keys))
	for _, k := range c.Keys {
		args = append(args, k)
	}
	cmd := redis.NewCmd(ctx, append(args, c.Args...)...)
	if len(c.Keys) > 0 {
		cmd.SetFirstKeyPos(3) // as go-redis's EvalSha, for cluster clients
	}
	return cmd
}
