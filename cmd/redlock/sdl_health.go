package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/redlockplus/redlock/sdlstore"
	"github.com/spf13/cobra"
)

func (s *sdlCmd) healthcheckCmd() *cobra.Command {
	var asJSON bool
	var nodeCount int
	cmd := &cobra.Command{
		Use:   "healthcheck",
		Short: "Check every instance and sentinel of the SDL",
		Long: `Ask every instance for its role, replication and DBaaS module commands,
and every sentinel (DBAAS_SERVICE_SENTINEL_PORT) for its view of the master,
as sdlcli's healthcheck does.

An instance is healthy when it answers as a master with at least
node-count - 1 replicas online. A sentinel is healthy when it answers, flags
the master "master" only, and sees node-count - 1 replicas with a working
link and node-count - 1 other sentinels. The node count is --node-count,
else DBAAS_NODE_COUNT, else 1. Whether the DBaaS module commands (SETIE,
DELIE, ...) are present is shown for information only: sdlstore does not
need them.

Exit status:
  0   every instance and sentinel is healthy
  1   all answer, but one or more is unhealthy
  64  bad command line or configuration
  69  an instance or sentinel cannot be reached`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts, err := nodeCountOpts(cmd, nodeCount)
			if err != nil {
				return err
			}
			c, err := s.open(cmd, opts...)
			if err != nil {
				return err
			}
			defer c.close()
			ctx, cancel := sdlContext(cmd)
			defer cancel()
			h, err := c.store.Health(ctx)
			if err != nil {
				return classify(err)
			}
			for i := range h.Instances {
				h.Instances[i].Addr = c.knownAddr(i, h.Instances[i].Addr)
			}
			out := cmd.OutOrStdout()
			if asJSON {
				if err := writeJSON(out, h); err != nil {
					return err
				}
			} else {
				printHealth(out, h)
			}
			return healthExit(h)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	cmd.Flags().IntVar(&nodeCount, "node-count", 0, "nodes per instance, master included (default $"+sdlstore.EnvNodeCount+", else 1)")
	return cmd
}

// nodeCountOpts turns --node-count, or DBAAS_NODE_COUNT when the instances
// come from --nodes (NewFromEnv reads it itself), into a store option.
func nodeCountOpts(cmd *cobra.Command, flag int) ([]sdlstore.Option, error) {
	if cmd.Flags().Changed("node-count") {
		if flag < 1 {
			return nil, usageErr("--node-count %d: at least 1 node is needed", flag)
		}
		return []sdlstore.Option{sdlstore.WithNodeCount(flag)}, nil
	}
	v := strings.TrimSpace(os.Getenv(sdlstore.EnvNodeCount))
	if v == "" {
		return nil, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return nil, usageErr("%s=%q is not a positive number of nodes", sdlstore.EnvNodeCount, v)
	}
	return []sdlstore.Option{sdlstore.WithNodeCount(n)}, nil
}

// healthExit is the exit status of a health report.
func healthExit(h sdlstore.Health) error {
	switch {
	case !h.Reachable():
		return exitCode(exitUnavailable, fmt.Errorf("SDL unhealthy: %s cannot be reached", strings.Join(unreachable(h), ", ")))
	case !h.Healthy():
		return exitCode(exitFailure, fmt.Errorf("SDL unhealthy: %s", strings.Join(unhealthy(h), ", ")))
	}
	return nil
}

func unreachable(h sdlstore.Health) []string {
	var out []string
	for _, in := range h.Instances {
		if !in.Reachable {
			out = append(out, "instance "+strconv.Itoa(in.Instance))
		}
	}
	for _, s := range h.Sentinels {
		if !s.Reachable {
			out = append(out, "the sentinel of instance "+strconv.Itoa(s.Instance))
		}
	}
	return out
}

func unhealthy(h sdlstore.Health) []string {
	var out []string
	for _, in := range h.Instances {
		if !in.Healthy {
			out = append(out, fmt.Sprintf("instance %d (%s)", in.Instance, strings.Join(in.Problems, "; ")))
		}
	}
	for _, s := range h.Sentinels {
		if !s.Healthy {
			out = append(out, fmt.Sprintf("the sentinel of instance %d (%s)", s.Instance, strings.Join(s.Problems, "; ")))
		}
	}
	return out
}

func printHealth(out io.Writer, h sdlstore.Health) {
	want := h.NodeCount - 1
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "INSTANCE\tADDR\tROLE\tMASTER LINK\tREPLICAS ONLINE\tDBAAS MODULE\tSTATUS")
	for _, in := range h.Instances {
		online := 0
		for _, r := range in.Replicas {
			if r.State == "online" {
				online++
			}
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", in.Instance, dash(in.Addr),
			dash(in.Role), dash(in.MasterLink), ratio(in.Reachable, online, want), moduleState(in), status(in.Reachable, in.Healthy, in.Error, in.Problems))
	}
	_ = tw.Flush()
	if len(h.Sentinels) > 0 {
		fmt.Fprintln(out)
		tw = tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "SENTINEL\tADDR\tMASTER NAME\tMASTER ADDR\tFLAGS\tREPLICAS LINKED\tOTHER SENTINELS\tSTATUS")
		for _, s := range h.Sentinels {
			linked := 0
			for _, r := range s.Replicas {
				if r.State == "slave" && r.MasterLink == "ok" {
					linked++
				}
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.Instance, s.Addr, s.MasterName, dash(s.MasterAddr), dash(s.MasterFlags),
				ratio(s.Reachable, linked, want), ratio(s.Reachable, s.OtherSentinels, want), status(s.Reachable, s.Healthy, s.Error, s.Problems))
		}
		_ = tw.Flush()
	}
	fmt.Fprintf(out, "\n%s\n", healthSummary(h))
}

// healthSummary is the last line of the report: the verdict, how many
// instances and sentinels are healthy, and what the node count asks of
// each instance, e.g. "healthy: 3 of 3 instances healthy; each should
// have 1 node, a master and no replica (--node-count, DBAAS_NODE_COUNT)".
func healthSummary(h sdlstore.Health) string {
	verdict := "healthy"
	if !h.Healthy() {
		verdict = "UNHEALTHY"
	}
	ok := 0
	for _, in := range h.Instances {
		if in.Healthy {
			ok++
		}
	}
	line := fmt.Sprintf("%s: %d of %d instances healthy", verdict, ok, len(h.Instances))
	if len(h.Sentinels) > 0 {
		ok = 0
		for _, s := range h.Sentinels {
			if s.Healthy {
				ok++
			}
		}
		line += fmt.Sprintf(", %d of %d sentinels", ok, len(h.Sentinels))
	}
	nodes, replicas := "1 node", "no replica"
	if h.NodeCount != 1 {
		nodes = fmt.Sprintf("%d nodes", h.NodeCount)
	}
	switch h.NodeCount - 1 {
	case 0:
	case 1:
		replicas = "1 replica online"
	default:
		replicas = fmt.Sprintf("%d replicas online", h.NodeCount-1)
	}
	return fmt.Sprintf("%s; each should have %s, a master and %s (--node-count, %s)", line, nodes, replicas, sdlstore.EnvNodeCount)
}

// ratio shows "have/want", or "-" for a server that did not answer.
func ratio(reachable bool, have, want int) string {
	if !reachable {
		return "-"
	}
	return fmt.Sprintf("%d/%d", have, want)
}

// moduleState shows which DBaaS module commands an instance has.
func moduleState(in sdlstore.InstanceHealth) string {
	switch {
	case !in.Reachable:
		return "-"
	case len(in.ModuleCommands) == 0:
		return "absent"
	case len(in.ModuleCommands) == len(sdlstore.ModuleCommands):
		return "present"
	}
	return "partial: " + strings.Join(in.ModuleCommands, ",")
}

func status(reachable, healthy bool, errText string, problems []string) string {
	switch {
	case !reachable:
		return "unreachable: " + errText
	case !healthy:
		return "unhealthy: " + strings.Join(problems, "; ")
	}
	return "healthy"
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func (s *sdlCmd) statisticsCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "statistics",
		Short: "Show keys, memory, clients, load and uptime of every instance",
		Long: `Read INFO on every instance and show its key count (database 0), memory
in use, connected clients, commands per second and uptime.

Exit status: 0 when every instance answered, 69 when one or more could not
be reached (the others are still shown), 64 for a bad command line or
configuration.`,
		Args: exactArgs(0, "no arguments"),
		RunE: s.withStore(func(cmd *cobra.Command, ctx context.Context, c *sdlConn, args []string) error {
			stats, err := c.store.Statistics(ctx)
			if err != nil {
				return classify(err)
			}
			for i := range stats {
				stats[i].Addr = c.knownAddr(i, stats[i].Addr)
			}
			out := cmd.OutOrStdout()
			if asJSON {
				if err := writeJSON(out, stats); err != nil {
					return err
				}
			} else {
				printStatistics(out, stats)
			}
			var down []string
			for _, st := range stats {
				if st.Error != "" {
					down = append(down, "instance "+strconv.Itoa(st.Instance))
				}
			}
			if len(down) > 0 {
				return exitCode(exitUnavailable, fmt.Errorf("no statistics from %s: it cannot be reached", strings.Join(down, ", ")))
			}
			return nil
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the figures as JSON")
	return cmd
}

func printStatistics(out io.Writer, stats []sdlstore.InstanceStats) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "INSTANCE\tADDR\tKEYS\tMEMORY\tCLIENTS\tOPS/S\tUPTIME")
	for _, st := range stats {
		addr := dash(st.Addr)
		if st.Error != "" {
			fmt.Fprintf(tw, "%d\t%s\tunreachable: %s\n", st.Instance, addr, st.Error)
			continue
		}
		fmt.Fprintf(tw, "%d\t%s\t%d\t%s\t%d\t%d\t%s\n", st.Instance, addr, st.Keys, bytesIEC(st.UsedMemory),
			st.ConnectedClients, st.OpsPerSec, time.Duration(st.UptimeSeconds)*time.Second)
	}
	_ = tw.Flush()
}

// bytesIEC shows a byte count with a binary unit: 512 B, 1.5 KiB, 2.0 MiB.
func bytesIEC(n int64) string {
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	v, unit := float64(n)/1024, "KiB"
	for _, u := range []string{"MiB", "GiB", "TiB"} {
		if v < 1024 {
			break
		}
		v, unit = v/1024, u
	}
	return fmt.Sprintf("%.1f %s", v, unit)
}
