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
	// KeyTag and Slot, on a Redis Cluster (--cluster) only: the hash tag
	// the node puts in front of every lock name ("{7}") and its slot,
	// which the master at Addr owns.
	KeyTag string `json:"key_tag,omitempty"`
	Slot   *int   `json:"slot,omitempty"`
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

With --cluster (or REDLOCK_CLUSTER), the nodes are the masters of a Redis
Cluster, and each line also names the master's key tag (the hash tag put
in front of every lock name, "{7}") and its slot.

With --json it prints an array with one object per node, in node order:
node, addr, fit (votes and has no risky setting), voting, why, risk,
version, run_id, uptime_s (whole seconds, as the node reports it), durable,
persistence, maxmemory (bytes; 0: no limit), maxmemory_policy,
clock_offset_ms and rtt_ms (milliseconds, to the microsecond), and error
(why the node could not be read). why, risk and error are left out when
empty. On a Redis Cluster each object also has key_tag and slot.

Exit codes:
  0   every node is fit to vote for a safe lock
  4   some node is not (each line says why; stderr names them)
  64  bad command line or configuration`,
		Example: `  redlock doctor --nodes redis://a:6379,redis://b:6379,redis://c:6379
  redlock doctor --cluster redis://10.0.0.1:7000,redis://10.0.0.2:7000
  redlock doctor --ttl 30s
  redlock doctor --json | jq '.[] | select(.fit | not)'`,
		Args:              exactArgs(0, "no arguments"),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, _ []string) error {
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
			return unfitError(report)
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
		if h.Slot >= 0 && h.KeyTag != "" { // a master of a Redis Cluster
			out[i].KeyTag, out[i].Slot = h.KeyTag, &h.Slot
		}
		if h.Err != nil {
			out[i].Error = cause(h.Err)
			if h.Why == "" || strings.HasPrefix(h.Why, "unreachable: ") {
				// The line names the node already: say only what failed.
				out[i].Why = "unreachable: " + out[i].Error
			}
		}
	}
	return out
}

// unfitError is doctor's error when some node is not fit (exit 4): one
// short line naming each such node and, in a word, what is wrong; the
// table or the JSON above it says why in full.
func unfitError(report []doctorJSON) error {
	var unfit []string
	for _, n := range report {
		if !n.Fit {
			unfit = append(unfit, fmt.Sprintf("%s (%s)", n.Addr, n.problem()))
		}
	}
	if len(unfit) == 0 {
		return nil
	}
	return exitCode(exitUnfit, fmt.Errorf("%d of %d nodes not fit to vote for a safe lock: %s",
		len(unfit), len(report), strings.Join(unfit, ", ")))
}

// problem names what makes an unfit node unfit, for the summary line.
func (n doctorJSON) problem() string {
	switch why := n.Why; {
	case n.Error != "":
		return "unreachable"
	case strings.HasPrefix(why, "the same Redis server"):
		return "duplicate"
	case strings.HasPrefix(why, "its clock"):
		return "clock off"
	case strings.Contains(why, "without durable storage"):
		return "quarantined after a restart"
	case why != "":
		return "not voting"
	case n.Eviction != "":
		return "evicting: maxmemory-policy " + n.Eviction
	}
	return "at risk"
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
	return fmt.Sprintf("votes: redis %s, up %s, %s, clock %+.1fms, rtt %.1fms",
		n.Version, compactDuration(time.Duration(n.UptimeS)*time.Second), durable, n.ClockOffsetMs, n.RTTMs)
}

// compactDuration is d without its zero trailing units: 3h rather than
// 3h0m0s, 2m rather than 2m0s.
func compactDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// printDoctor prints one line per node.
func printDoctor(w io.Writer, report []doctorJSON, s style) {
	onCluster := slices.ContainsFunc(report, func(n doctorJSON) bool { return n.Slot != nil })
	head := []cell{plain("NODE"), plain("ADDRESS")}
	if onCluster {
		head = []cell{plain("NODE"), plain("MASTER"), plain("KEY TAG"), plain("SLOT")}
	}
	rows := [][]cell{append(head, plain("VERDICT"), plain("WHY"))}
	for _, n := range report {
		verdict := cell{"ok", s.green}
		if !n.Fit {
			verdict = cell{"not fit", s.red}
		}
		row := []cell{plain(fmt.Sprint(n.Node)), plain(n.Addr)}
		if onCluster {
			tag, slot := plain("-"), plain("-")
			if n.Slot != nil {
				tag, slot = plain(n.KeyTag), plain(strconv.Itoa(*n.Slot))
			}
			row = append(row, tag, slot)
		}
		rows = append(rows, append(row, verdict, plain(n.verdict())))
	}
	writeTable(w, "  ", rows)
}
