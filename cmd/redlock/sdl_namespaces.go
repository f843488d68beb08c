package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"text/tabwriter"

	"github.com/redlockplus/redlock/sdlstore"
	"github.com/spf13/cobra"
)

func (s *sdlCmd) namespacesCmd() *cobra.Command {
	var wide, asJSON bool
	cmd := &cobra.Command{
		Use:   "namespaces",
		Short: "List the namespaces that have keys",
		Long: `Walk every instance with SCAN and list the namespaces that hold at least
one key ("{ns},..."), sorted. --wide adds the instance each was found on and
its key count there; --json prints the same as a JSON array.`,
		Args: exactArgs(0, "no arguments"),
		RunE: s.withStore(func(cmd *cobra.Command, ctx context.Context, c *sdlConn, args []string) error {
			list, err := c.store.Namespaces(ctx)
			if err != nil {
				return classify(err)
			}
			for i := range list {
				list[i].Addr = c.knownAddr(list[i].Instance, list[i].Addr)
			}
			out := cmd.OutOrStdout()
			switch {
			case asJSON:
				return writeJSON(out, list)
			case wide:
				printNamespacesWide(out, list)
			default:
				last := ""
				for _, n := range list {
					if n.Name != last { // one line per namespace, even on two instances
						fmt.Fprintln(out, n.Name)
					}
					last = n.Name
				}
			}
			return nil
		}),
	}
	cmd.Flags().BoolVar(&wide, "wide", false, "also show each namespace's instance, address and key count")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the namespaces as JSON")
	return cmd
}

func printNamespacesWide(out io.Writer, list []sdlstore.NamespaceInfo) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAMESPACE\tINSTANCE\tADDR\tKEYS")
	for _, n := range list {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", n.Name, n.Instance, dash(n.Addr), strconv.FormatInt(n.Keys, 10))
	}
	_ = tw.Flush()
}

// knownAddr names instance i: known when the store knew it, else the
// host:port of the instance's --nodes URL, else "".
func (c *sdlConn) knownAddr(i int, known string) string {
	if known != "" || i >= len(c.urls) {
		return known
	}
	addr, _ := urlAddr(c.urls[i])
	return addr
}

// urlAddr returns the host:port of a redis:// URL (port 6379 if absent).
func urlAddr(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", err
	}
	if u.Port() == "" {
		return net.JoinHostPort(u.Hostname(), "6379"), nil
	}
	return u.Host, nil
}

// writeJSON prints v as indented JSON.
func writeJSON(out io.Writer, v any) error {
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return exitCode(exitFailure, enc.Encode(v))
}
