package main

import "github.com/spf13/cobra"

func newBenchCmd() *cobra.Command {
	return &cobra.Command{Use: "bench", Short: "A short benchmark (todo)", RunE: func(*cobra.Command, []string) error { return nil }}
}
