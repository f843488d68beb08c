package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/redlockplus/redlock"
	"github.com/spf13/cobra"
)

// doctorJSON is one node of `redlock doctor --json`; durations are in
// milliseconds.
type doctorJSON struct {
	Node          int     `json:"node"`
	Addr          string  `json:"addr"`
	Fit           bool    `json:"fit"`
	Voting        bool    `json:"voting"`
	Why           string  `json:"why,omitempty"`
	Risk          string  `json:"risk,omitempty"`
	Version       string  `json:"version,omitempty"`
	RunID         string  `json:"run_id,omitempty"`
	UptimeS       int64   `json:"uptime_s"`
	Durable       bool    `json:"durable"`
	Persistence   string  `json:"persistence,omitempty"`
	MaxMemory     int64   `json:"maxmemory"`
	Eviction      string  `json:"maxmemory_policy,omitempty"`
	ClockOffsetMs float64 `json:"clock_offset_ms"`
	RTTMs         float64 `json:"rtt_ms"`
	Error         string  `json:"error,omitempty"`
}

func newDoctorCmd() *cobra.Command {
	var asJSON bool
	var nf *nodeFlags
	var lf *lockFlags
	cmd := &cobra.Command{
		Use:   "doctor [flags]",
		Short: "Check that every node is fit to vote for a safe lock",
		Long: `Read every node's INFO, CONFIG and clock (Factory.Health) and print one line
per node: whether the node guard lets it vote for a lock of --ttl, and why
not; or a setting that can break a lock's safety even while it votes.

A node is not fit when it is unreachable, the same server as another node,
restarted without durable storage less than the TTL ago (the restart
guard keeps it out of the vote), off this client's clock by more than the
clock guard allows, or when its maxmemory-policy may evict lock keys.

Exit codes:
  0   every node is fit to vote for a safe lock
  4   some node is not (each line says why)
  64  bad command line or configuration`,
		Example: `  redlock doctor --nodes redis://a:6379,redis://b:6379,redis://c:6379
  redlock doctor --ttl 30s
  redlock doctor --json | jq '.[] | select(.fit | not)'`,
		Args:              exactArgs(0, "no arguments"),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, _ []string) error {
			urls, _, err := nf.urls()
			if err != nil {
				return err
			}
			if urls == nil {
				return noNodesError()
			}
			c, err := openCluster(urls, lf.options()...)
			if err != nil {
				return err
			}
			defer c.close()
			ctx, cancel := context.WithTimeout(cmd.Context(), 2*pingTimeout)
			defer cancel()
			hs, err := c.factory.Health(ctx)
			if err != nil {
				return classify(err)
			}
			report := toDoctorJSON(hs)
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				if err := enc.Encode(report); err != nil {
					return exitCode(exitFailure, err)
				}
			} else {
				printDoctor(cmd.OutOrStdout(), report, newStyle(cmd.OutOrStdout()))
			}
			var unfit []string
			for _, n := range report {
				if !n.Fit {
					unfit = append(unfit, fmt.Sprintf("node %d (%s): %s", n.Node, n.Addr, n.verdict()))
				}
			}
			if len(unfit) > 0 {
				return exitCode(exitUnfit, fmt.Errorf("%d of %d nodes not fit to vote for a safe lock: %s", len(unfit), len(report), strings.Join(unfit, "; ")))
			}
			return nil
		},
	}
	nf = addNodeFlags(cmd)
	lf = addLockFlags(cmd, redlock.DefaultTTL)
	for _, name := range []string{"retry-delay"} {
		_ = cmd.Flags().MarkHidden(name) // no meaning for a check
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// toDoctorJSON turns the Health reports into doctor's form.
func toDoctorJSON(hs []redlock.NodeHealth) []doctorJSON {
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	out := make([]doctorJSON, len(hs))
	for i, h := range hs {
		out[i] = doctorJSON{Node: i, Addr: h.Addr, Voting: h.Voting, Why: h.Why, Risk: h.Risk,
			Version: h.Version, RunID: h.RunID, UptimeS: int64(h.Uptime / time.Second), Durable: h.Durable,
			Persistence: h.Persistence, MaxMemory: h.MaxMemory, Eviction: h.Eviction,
			ClockOffsetMs: ms(h.ClockOffset), RTTMs: ms(h.RTT)}
		out[i].Fit = h.Voting && h.Risk == ""
		if h.Err != nil {
			out[i].Error = cause(h.Err)
		}
	}
	return out
}

// verdict is why the node is not fit, or what it runs.
func (n doctorJSON) verdict() string {
	switch {
	case n.Why != "":
		return n.Why
	case n.Risk != "":
		return n.Risk
	}
	durable := "not durable: out of the vote for a TTL after a restart"
	if n.Durable {
		durable = "durable"
	}
	return fmt.Sprintf("votes: redis %s, up %v, %s, clock %+.1fms, rtt %.1fms",
		n.Version, time.Duration(n.UptimeS)*time.Second, durable, n.ClockOffsetMs, n.RTTMs)
}

// printDoctor prints one line per node.
func printDoctor(w io.Writer, report []doctorJSON, s style) {
	rows := [][]cell{{plain("NODE"), plain("ADDRESS"), plain("VERDICT"), plain("WHY")}}
	for _, n := range report {
		verdict := cell{"ok", s.green}
		if !n.Fit {
			verdict = cell{"not fit", s.red}
		}
		rows = append(rows, []cell{plain(fmt.Sprint(n.Node)), plain(n.Addr), verdict, plain(n.verdict())})
	}
	writeTable(w, "  ", rows)
}
