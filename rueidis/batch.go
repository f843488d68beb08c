package redlockrueidis

import (
	"context"
	"strings"

	"github.com/redis/rueidis"

	"github.com/redlockplus/redlock"
)

var _ redlock.Batcher = node{}

// DoBatch sends the batch with one DoMulti (a single command as itself),
// scripts with EVALSHA; the scripts the server does not know are sent
// again with EVAL in a second DoMulti.
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
	cmds := make(rueidis.Commands, len(batch))
	for i, c := range batch {
		if c.Script != nil {
			cmds[i] = n.c.B().Evalsha().Sha1(c.Script.Hash()).Numkeys(int64(len(c.Keys))).Key(c.Keys...).Arg(strs(c.Args)...).Build()
		} else {
			cmds[i] = n.c.B().Arbitrary(c.Name).Args(strs(c.Args)...).Build()
		}
	}
	var again []int
	for i, res := range n.c.DoMulti(ctx, cmds...) {
		v, err := res.ToAny()
		if batch[i].Script != nil && err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT") {
			again = append(again, i)
			continue
		}
		batch[i].Reply, batch[i].Err = reply(v, err)
	}
	if len(again) == 0 {
		return
	}
	retry := make(rueidis.Commands, len(again))
	for j, i := range again {
		c := batch[i]
		retry[j] = n.c.B().Eval().Script(c.Script.Source()).Numkeys(int64(len(c.Keys))).Key(c.Keys...).Arg(strs(c.Args)...).Build()
	}
	for j, res := range n.c.DoMulti(ctx, retry...) {
		batch[again[j]].Reply, batch[again[j]].Err = reply(res.ToAny())
	}
}
