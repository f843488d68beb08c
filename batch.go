package redlock

import "context"

// Batcher is a Node that can also send several commands at once on one
// connection: a go-redis pipeline, rueidis's DoMulti. The lock does not
// rely on their order: a script that the server does not know (NOSCRIPT)
// is sent again with EVAL, after the rest of the batch. A factory
// then gathers the commands that concurrent lock operations start on the
// node into one batch while the previous batch is under way, instead of
// running each command in a goroutine of its own: one write and one read
// for many commands, as the redigo path's own pipelining does.
type Batcher interface {
	Node
	// DoBatch runs every command of batch and sets its Reply and Err,
	// with the forms and errors of Node.Do. ctx bounds the whole batch.
	// The factory reuses batch and its commands' slices once DoBatch
	// returns: it must not keep them.
	DoBatch(ctx context.Context, batch []Command)
}

// Command is one command of a batch: a plain command (Name and Args) or a
// script (Script, Keys and Args), to run as Node.Do or Node.RunScript
// would, with its reply.
type Command struct {
	Name   string
	Script *Script
	Keys   []string
	Args   []any

	Reply any
	Err   error
}
