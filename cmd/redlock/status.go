package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redlockplus/redlock"
	"github.com/spf13/cobra"
)

// statusJSON is the --json form of `redlock status`.
type statusJSON struct {
	Name        string           `json:"name"`
	Nodes       []nodeStatusJSON `json:"nodes"`
	Quorum      int              `json:"quorum"`
	Answered    int              `json:"answered"`
	Held        bool             `json:"held"`
	Holder      string           `json:"holder,omitempty"`
	HolderTTLMs int64            `json:"holder_ttl_ms"`
}

type nodeStatusJSON struct {
	Node   int    `json:"node"`
	Addr   string `json:"addr"`
	HasKey bool   `json:"has_key"`
	Token  string `json:"token,omitempty"`
	Holder bool   `json:"holder"` // the node stores the quorum holder's token
	TTLMs  int64  `json:"ttl_ms"`
	Fence  int64  `json:"fence"` // the last fencing token committed on the node; 0 when none
	Error  string `json:"error,omitempty"`
	// OutOfVote says why the node guard keeps the node out of the vote
	// (quarantined after a restart, clock off); "" while it votes.
	OutOfVote string `json:"out_of_vote,omitempty"`
	// Key and Slot, on a Redis Cluster (--cluster) only: the lock's key on
	// the node, the name under its master's hash tag ("{7}NAME"), and that
	// key's hash slot, which the master at Addr owns.
	Key  string `json:"key,omitempty"`
	Slot *int   `json:"slot,omitempty"`
}

func newStatusCmd() *cobra.Command {
	var asJSON bool
	var nf *nodeFlags
	var lf *lockFlags
	cmd := &cobra.Command{
		Use:   "status [flags] NAME",
		Short: "Show who holds a lock, node by node",
		Long: `Read the lock NAME on every node without taking it: whether the node holds
the key, its token and remaining TTL, the last fencing token committed on
it (locks taken with --fencing), and whether a quorum of nodes holds the
same token (the lock is held). A node the node guard keeps out of the vote
(restarted recently without durable storage, or its clock off) is shown as
quarantined, with the reason.

With --cluster (or REDLOCK_CLUSTER), the nodes are the masters of a Redis
Cluster: each row names a master, the lock's key on it (NAME under the
master's hash tag, "{7}NAME") and that key's slot, which the master owns;
--json gives them as key and slot.

Exit codes, so that scripts need not parse the output:
  0   the lock is held
  3   the lock is free
  64  bad command line or configuration
  69  fewer than a quorum of nodes answered (what is known is printed)`,
		Example: `  redlock status nightly-report
  redlock status --cluster redis://10.0.0.1:7000 nightly-report
  if redlock status nightly-report >/dev/null; then echo held; fi
  redlock status --json nightly-report | jq .held`,
		Args:              exactArgs(1, "one lock NAME"),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, args []string) error {
			nodes, err := nf.nodes()
			if err != nil {
				return err
			}
			if nodes.none() {
				return noNodesError()
			}
			c, err := openCluster(cmd.Context(), nodes, lf.options()...)
			if err != nil {
				return err
			}
			defer c.close()
			ctx, cancel := context.WithTimeout(cmd.Context(), 2*pingTimeout)
			defer cancel()
			in, err := c.factory.Inspect(ctx, args[0])
			if err != nil {
				return classify(err)
			}
			st := toStatusJSON(in, c.addrs)
			if hs, err := c.factory.Health(ctx); err == nil {
				for i := range st.Nodes {
					if i < len(hs) && !hs[i].Voting && hs[i].Err == nil {
						st.Nodes[i].OutOfVote = hs[i].Why
					}
				}
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				if err := enc.Encode(st); err != nil {
					return exitCode(exitFailure, err)
				}
			} else {
				printStatus(cmd.OutOrStdout(), st, newStyle(cmd.OutOrStdout()))
			}
			if st.Answered < st.Quorum {
				return exitCode(exitUnavailable, fmt.Errorf("only %d of %d nodes answered, %d needed to tell whether %q is held",
					st.Answered, len(st.Nodes), st.Quorum, st.Name))
			}
			if !st.Held {
				return silentExit{code: exitNotHeld}
			}
			return nil
		},
	}
	nf = addNodeFlags(cmd)
	lf = addLockFlags(cmd, redlock.DefaultTTL)
	for _, name := range []string{"ttl", "retry-delay", "drift-factor"} {
		_ = cmd.Flags().MarkHidden(name) // no meaning for a read-only look
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func toStatusJSON(in redlock.Inspection, addrs []string) statusJSON {
	st := statusJSON{Name: in.Name, Quorum: in.Quorum, Held: in.Held(), Holder: in.Holder, HolderTTLMs: in.HolderTTL.Milliseconds()}
	for i, n := range in.Nodes {
		addr := n.Addr
		if (addr == "" || addr == "unknown address") && i < len(addrs) {
			addr = addrs[i]
		}
		ns := nodeStatusJSON{Node: n.Node, Addr: addr, HasKey: n.Token != "", Token: n.Token, TTLMs: n.TTL.Milliseconds(), Fence: n.Fence}
		if n.Slot >= 0 && strings.HasPrefix(n.Key, "{") { // a master of a Redis Cluster
			ns.Key, ns.Slot = n.Key, &n.Slot
		}
		ns.Holder = in.Held() && n.Token == in.Holder
		if n.Err != nil {
			ns.Error = cause(n.Err)
		} else {
			st.Answered++
		}
		st.Nodes = append(st.Nodes, ns)
	}
	return st
}

func printStatus(w io.Writer, st statusJSON, s style) {
	ms := func(v int64) string { return (time.Duration(v) * time.Millisecond).String() }
	switch {
	case st.Answered < st.Quorum:
		fmt.Fprintf(w, "lock %q is %s (%d of %d nodes answered, %d needed)\n", st.Name, s.yellow("UNKNOWN"), st.Answered, len(st.Nodes), st.Quorum)
	case st.Held:
		fmt.Fprintf(w, "lock %q is %s by token %s for %s (quorum %d of %d)\n",
			st.Name, s.green("HELD"), shortToken(st.Holder), ms(st.HolderTTLMs), st.Quorum, len(st.Nodes))
	default:
		fmt.Fprintf(w, "lock %q is %s (no token on a quorum of %d of %d nodes)\n", st.Name, s.bold("FREE"), st.Quorum, len(st.Nodes))
	}
	onCluster := slices.ContainsFunc(st.Nodes, func(n nodeStatusJSON) bool { return n.Slot != nil })
	head := []cell{plain("NODE"), plain("ADDRESS")}
	if onCluster {
		// Where each master keeps the lock: its key, the name under the
		// master's hash tag, and that key's slot.
		head = []cell{plain("NODE"), plain("MASTER"), plain("SLOT"), plain("KEY NAME")}
	}
	rows := [][]cell{append(head, plain("KEY"), plain("TOKEN"), plain("TTL"), plain("FENCE"))}
	for _, n := range st.Nodes {
		key, token, ttl := plain("absent"), plain("-"), plain("-")
		switch {
		case n.Error != "":
			key, token = cell{"error", s.red}, plain(n.Error)
		case n.HasKey && n.Holder:
			key, token, ttl = cell{"holder", s.green}, plain(shortToken(n.Token)), plain(ms(n.TTLMs))
		case n.HasKey:
			key, token, ttl = cell{"other", s.yellow}, plain(shortToken(n.Token)), plain(ms(n.TTLMs))
		}
		fence := plain("-")
		if n.Fence != 0 {
			fence = plain(strconv.FormatInt(n.Fence, 10))
		}
		row := []cell{plain(fmt.Sprint(n.Node)), plain(n.Addr)}
		if onCluster {
			slot, name := plain("-"), plain("-")
			if n.Slot != nil {
				slot, name = plain(strconv.Itoa(*n.Slot)), plain(n.Key)
			}
			row = append(row, slot, name)
		}
		rows = append(rows, append(row, key, token, ttl, fence))
	}
	writeTable(w, "  ", rows)
	for _, n := range st.Nodes {
		if n.OutOfVote != "" {
			fmt.Fprintf(w, "  node %d (%s) is %s: %s\n", n.Node, n.Addr, s.yellow("quarantined"), n.OutOfVote)
		}
	}
}

// shortToken abbreviates a token for tables.
func shortToken(t string) string {
	if len(t) > 8 {
		return t[:8]
	}
	return t
}
