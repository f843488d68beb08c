package conformance

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redlockplus/redlock"
	"github.com/redlockplus/redlock/internal/testkit/redistest"
)

// MultiLockSplitVote is the split-vote check of a batching client (the
// go-redis and rueidis nodes), for Lock and for MultiLock: a failed
// attempt's delete must reach every node in the same order as the other
// rounds (13b3b61, "discard: a factory with ordered rounds sends a failed
// attempt's delete as a round"; TestBatchTransportOneOrder checks the
// order of the SETs). Deletes sent by each node's cleaner at a moment of
// its own free the nodes at different moments, so that the next attempt
// finds the key gone on some nodes and still held on others: a split
// vote.
//
// Three nodes, quorum 3, and node 2 holds another client's key under one
// of the names, so every attempt fails there and leaves what it set on
// nodes 0 and 1 to be deleted. Node 2 answers an attempt only once nodes
// 0 and 1 have (and splitVoteLag later), so that their replies are
// counted and a Lock's delete of the failed attempt goes out as a round
// only, with no cleaner behind it on either node (a cleaner's backup
// delete may overtake the round and split the nodes too). 8 goroutines
// make 60 TryAcquires each, contending on one factory. Nodes 0 and 1 then
// get the same commands in the same order, so an attempt must be granted
// on both or refused by both; one granted on one and refused by the other
// is a split. The nodes are the client's, wrapped in a Batcher that reads
// the replies of the attempts' commands (SET, or acquire.lua under the
// node guard, for Lock; the multi_set script for MultiLock) and holds
// node 2 back.
func MultiLockSplitVote(t *testing.T, c Client) {
	for _, kind := range []struct {
		name    string
		foreign string // the key node 2 holds
		locker  func(f *redlock.Factory) redlock.Locker
	}{
		{"Lock", "sv:lock", func(f *redlock.Factory) redlock.Locker { return f.NewLock("sv:lock") }},
		{"MultiLock", "sv:b", func(f *redlock.Factory) redlock.Locker { return f.NewMultiLock([]string{"sv:a", "sv:b"}) }},
	} {
		t.Run(kind.name, func(t *testing.T) {
			cl := redistest.Start(t, 3)
			cl.Nodes[2].Do("SET", kind.foreign, "another-client")
			votes := newVoteBook()
			inner := c.Nodes(t, cl.Addrs())
			nodes := make([]redlock.Node, len(inner))
			for i, n := range inner {
				b, ok := n.(redlock.Batcher)
				if !ok {
					t.Fatalf("%s: node %d is not a Batcher", c.Name, i)
				}
				nodes[i] = votingBatcher{Batcher: b, index: i, votes: votes}
			}
			f, err := redlock.NewFactoryFromNodes(nodes, redlock.WithQuorum(3), redlock.WithRetryTimes(0), redlock.WithAutoextend(false))
			if err != nil {
				t.Fatal(err)
			}
			ctx := testContext(t)
			var wg sync.WaitGroup
			for range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					l := kind.locker(f)
					for range 60 {
						if _, err := l.TryAcquire(ctx); err == nil {
							t.Errorf("%s: acquired while node 2 refuses and the quorum is 3", kind.name)
							_ = l.Release(ctx)
						}
					}
				}()
			}
			wg.Wait()
			// An attempt returns once it is decided, while a node's batch
			// may still be under way: Close waits for every sender.
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			attempts, both, splits := votes.count()
			t.Logf("%s over %s: %d attempts, %d granted on nodes 0 and 1, %d split", kind.name, c.Name, attempts, both, splits)
			if both == 0 {
				t.Fatalf("%s: no attempt was granted on nodes 0 and 1: nothing to delete, the check saw nothing", kind.name)
			}
			if splits > 0 {
				t.Errorf("%s over %s: %d of %d attempts split nodes 0 and 1 (granted on one, refused by the other): a failed attempt's delete reached them at different moments",
					kind.name, c.Name, splits, attempts)
			}
		})
	}
}

// splitVoteLag is how long after nodes 0 and 1 node 2 answers an attempt,
// so that their replies are delivered first; splitVoteWait bounds node
// 2's wait for theirs.
const (
	splitVoteLag  = 2 * time.Millisecond
	splitVoteWait = 500 * time.Millisecond
)

// voteBook records, per attempt (by token), what each node answered:
// 1 granted, -1 refused, 0 no reply seen.
type voteBook struct {
	mu      sync.Mutex
	changed *sync.Cond
	byToken map[string]*[3]int8
}

func newVoteBook() *voteBook {
	v := &voteBook{byToken: map[string]*[3]int8{}}
	v.changed = sync.NewCond(&v.mu)
	return v
}

func (v *voteBook) note(token string, node int, granted bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	b := v.byToken[token]
	if b == nil {
		b = new([3]int8)
		v.byToken[token] = b
	}
	b[node] = -1
	if granted {
		b[node] = 1
	}
	v.changed.Broadcast()
}

// awaitFirstTwo waits until nodes 0 and 1 answered every attempt of
// tokens, or splitVoteWait passed.
func (v *voteBook) awaitFirstTwo(tokens []string) {
	stop := time.AfterFunc(splitVoteWait, func() {
		v.mu.Lock()
		v.changed.Broadcast()
		v.mu.Unlock()
	})
	defer stop.Stop()
	deadline := time.Now().Add(splitVoteWait)
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, tok := range tokens {
		for {
			b := v.byToken[tok]
			if b != nil && b[0] != 0 && b[1] != 0 || time.Now().After(deadline) {
				break
			}
			v.changed.Wait()
		}
	}
}

// count returns the attempts seen, those granted on nodes 0 and 1, and
// those granted on one of them and refused by the other.
func (v *voteBook) count() (attempts, both, splits int) {
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, b := range v.byToken {
		attempts++
		switch {
		case b[0] == 1 && b[1] == 1:
			both++
		case b[0]*b[1] == -1:
			splits++
		}
	}
	return attempts, both, splits
}

// votingBatcher is a client's batching node that notes the replies of the
// attempts' commands; node 2 answers them after nodes 0 and 1.
type votingBatcher struct {
	redlock.Batcher
	index int
	votes *voteBook
}

// attemptToken returns the token of an attempt's command, or "".
func attemptToken(c *redlock.Command) string {
	switch {
	case c.Name == "SET" && len(c.Args) > 1:
		return fmt.Sprint(c.Args[1])
	case c.Script != nil && (c.Script.Name() == "multi_set" || c.Script.Name() == "acquire") && len(c.Args) > 0:
		return fmt.Sprint(c.Args[0])
	}
	return ""
}

// voteReply is the attempt's own reply: under the node guard a script
// vote replies {reply, the node's clock, LASTSAVE}.
func voteReply(c *redlock.Command) any {
	if vals, ok := c.Reply.([]any); ok && len(vals) == 3 && c.Script != nil {
		return vals[0]
	}
	return c.Reply
}

func (b votingBatcher) DoBatch(ctx context.Context, batch []redlock.Command) {
	if b.index == 2 {
		var tokens []string
		for i := range batch {
			if tok := attemptToken(&batch[i]); tok != "" {
				tokens = append(tokens, tok)
			}
		}
		if len(tokens) > 0 {
			b.votes.awaitFirstTwo(tokens)
			time.Sleep(splitVoteLag)
		}
	}
	b.Batcher.DoBatch(ctx, batch)
	for i := range batch {
		c := &batch[i]
		tok := attemptToken(c)
		if tok == "" || c.Err != nil {
			continue
		}
		reply := voteReply(c)
		granted := reply != nil // SET (or acquire.lua): "OK" or nil
		if c.Script != nil && c.Script.Name() == "multi_set" {
			n, _ := reply.(int64) // 1 or 0
			granted = n == 1
		}
		b.votes.note(tok, b.index, granted)
	}
}
