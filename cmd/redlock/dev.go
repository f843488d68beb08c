package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

func newDevCmd() *cobra.Command {
	var n, port int
	cmd := &cobra.Command{
		Use:   "dev [--nodes 3] [--port 7380]",
		Short: "Start embedded Redis nodes for trying redlock out",
		Long: `Start N embedded in-process Redis nodes (miniredis) on loopback ports
PORT, PORT+1, ... (--port 0 picks free ports), print the REDLOCK_NODES line
to use them, and run until interrupted. Data lives in memory and is lost on
exit. They are for trying things out, not for production or benchmarks.`,
		Example: `  redlock dev
  export REDLOCK_NODES=redis://127.0.0.1:7380,redis://127.0.0.1:7381,redis://127.0.0.1:7382
  redlock run hello -- sleep 5 &
  redlock status hello`,
		Args:              exactArgs(0, "no arguments"),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, args []string) error {
			sigs := make(chan os.Signal, 1)
			signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
			defer signal.Stop(sigs)
			e, err := startEmbedded(n, port)
			if err != nil {
				return err
			}
			defer e.close()
			out, errw := cmd.OutOrStdout(), cmd.ErrOrStderr()
			s := newStyle(errw)
			fmt.Fprintf(errw, "%s %d embedded Redis nodes (miniredis, in memory, for trying things out)\n", s.bold("redlock dev:"), n)
			for i, u := range e.urls() {
				fmt.Fprintf(errw, "  node %d  %s\n", i, u)
			}
			fmt.Fprintln(out, e.envLine())
			fmt.Fprintf(errw, "\nIn another shell:\n  export %s\n  redlock run hello -- sleep 10 &\n  redlock status hello\n\n%s\n",
				e.envLine(), s.dim("Press Ctrl-C to stop."))
			sig := <-sigs
			fmt.Fprintf(errw, "redlock dev: %v, stopping\n", sig)
			return nil
		},
	}
	cmd.Flags().IntVar(&n, "nodes", 3, "number of nodes")
	cmd.Flags().IntVar(&port, "port", 7380, "port of the first node; 0 picks free ports")
	return cmd
}
