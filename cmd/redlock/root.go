package main

import (
	"fmt"
	"io"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=...";
// otherwise it is the module version go install recorded, or "dev".
var version = ""

func buildVersion() string {
	if version != "" {
		return version
	}
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" && info.Main.Version != "(devel)" {
		return info.Main.Version
	}
	return "dev"
}

// newRootCmd builds the command tree. Output goes to stdout and stderr;
// the commands that run a child process use the real os.Stdin/Stdout/Stderr.
func newRootCmd(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "redlock",
		Short: "Distributed locks over independent Redis nodes (Redlock), from the shell",
		Long: `redlock runs commands under a distributed lock held on three or more
independent Redis nodes (the Redlock algorithm), shows who holds a lock,
starts embedded Redis nodes for trying it out, and reads and writes SDL data.

Nodes come from --nodes redis://a:6379,redis://b:6379,redis://c:6379 or
the REDLOCK_NODES variable. On a Redis Cluster, give seeds with --cluster
redis://a:7000 (or REDLOCK_CLUSTER) in place of --nodes: every master is a
node, keeping a lock's key in a slot it owns ("{7}NAME"). With nothing
installed, try:

  redlock demo                # a guided tour on embedded nodes
  redlock dev                 # 3 embedded nodes, prints REDLOCK_NODES=...`,
		Version:       buildVersion(),
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return &exitError{code: exitUsage, err: err, hint: fmt.Sprintf("see '%s --help'", c.CommandPath())}
	})
	root.CompletionOptions.HiddenDefaultCmd = false
	makeGroup(root)
	root.AddCommand(
		newRunCmd(),
		newElectCmd(),
		newStatusCmd(),
		newDoctorCmd(),
		newDevCmd(),
		newDemoCmd(),
		newSDLCmd(),
		newBenchCmd(),
	)
	return root
}

// makeGroup makes a command that only holds subcommands print its help when
// called bare and fail with a usage error on an unknown subcommand (cobra
// would print the help and succeed).
func makeGroup(c *cobra.Command) {
	c.SuggestionsMinimumDistance = 2
	c.Args = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return nil
		}
		hint := fmt.Sprintf("see '%s --help'", cmd.CommandPath())
		if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
			hint = fmt.Sprintf("did you mean %q?", s[0])
		}
		what := "command"
		if cmd.HasParent() {
			what = commandName(cmd) + " command"
		}
		return &exitError{code: exitUsage, err: fmt.Errorf("unknown %s %q", what, args[0]), hint: hint}
	}
	c.RunE = func(cmd *cobra.Command, args []string) error {
		return cmd.Help()
	}
}

// argsError is a wrong number of positional arguments.
func argsError(cmd *cobra.Command, format string, args ...any) error {
	return &exitError{
		code: exitUsage,
		err:  fmt.Errorf(format, args...),
		hint: fmt.Sprintf("usage: %s", strings.TrimSpace(cmd.UseLine())),
	}
}

// exactArgs requires n positional arguments, named in what.
func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return argsError(cmd, "%s takes %s, got %d", commandName(cmd), what, len(args))
		}
		return nil
	}
}

// commandName is the command's path without the program's name, which
// every error line already starts with: "sdl get", not "redlock sdl get".
func commandName(cmd *cobra.Command) string {
	return strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ")
}
