package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/gomodule/redigo/redis"
	"github.com/redlockplus/redlock"
	"github.com/redlockplus/redlock/sdlstore"
	"github.com/spf13/cobra"
)

// sdlOpTimeout bounds one SDL command.
const sdlOpTimeout = 10 * time.Second

// sdlConn is an open SDL store and the pools the CLI made for it (none
// when the store was configured from DBAAS_* variables).
type sdlConn struct {
	store *sdlstore.Store
	pools []*redis.Pool
	urls  []string // of the pools, in order
}

func (c *sdlConn) close() {
	_ = c.store.Close()
	for _, p := range c.pools {
		_ = p.Close()
	}
}

type sdlCmd struct {
	nodes string
}

func newSDLCmd() *cobra.Command {
	s := &sdlCmd{}
	cmd := &cobra.Command{
		Use:   "sdl",
		Short: "Read, write and watch SDL (Shared Data Layer) data",
		Long: `Tools for the O-RAN Shared Data Layer data that ricsdl, sdlgo and the
sdlstore package share on Redis: namespaced keys ("{ns},key"), key listings
and notification channels.

Instances come from --nodes (one or more URLs, in hashing order), else from
the DBAAS_* variables of the RIC platform (DBAAS_SERVICE_HOST,
DBAAS_SERVICE_PORT, DBAAS_CLUSTER_ADDR_LIST, DBAAS_SERVICE_SENTINEL_PORT,
DBAAS_MASTER_NAME), else from REDLOCK_NODES.`,
		Example: `  redlock sdl set myns greeting hello --publish changes:greeting
  redlock sdl get myns greeting
  redlock sdl keys myns 'gr*'
  redlock sdl watch myns changes`,
	}
	makeGroup(cmd)
	cmd.PersistentFlags().StringVar(&s.nodes, "nodes", "", "comma-separated instance URLs (default DBAAS_* variables, then $"+EnvNodes+")")
	cmd.AddCommand(s.getCmd(), s.setCmd(), s.rmCmd(), s.keysCmd(), s.watchCmd(), s.namespacesCmd(),
		s.healthcheckCmd(), s.statisticsCmd())
	return cmd
}

// open connects to the configured instances, with opts for the store.
func (s *sdlCmd) open(cmd *cobra.Command, opts ...sdlstore.Option) (*sdlConn, error) {
	raw, src := s.nodes, "--nodes"
	if !cmd.Flags().Changed("nodes") {
		if os.Getenv(sdlstore.EnvServiceHost) != "" || os.Getenv(sdlstore.EnvClusterAddrList) != "" {
			st, err := sdlstore.NewFromEnv(opts...)
			if err != nil {
				return nil, classify(err)
			}
			return &sdlConn{store: st}, nil
		}
		raw, src = os.Getenv(EnvNodes), EnvNodes
	}
	if strings.TrimSpace(raw) == "" {
		return nil, usageErr("no SDL instances configured: give --nodes, or set %s (and %s) or %s",
			sdlstore.EnvServiceHost, sdlstore.EnvServicePort, sdlstore.EnvClusterAddrList)
	}
	urls, err := splitNodeList(raw)
	if err != nil {
		return nil, usageErr("%s: %v", src, err)
	}
	c := &sdlConn{urls: urls}
	pools := make([]redlock.Pool, len(urls))
	for i, u := range urls {
		p, err := redlock.NewPool(u)
		if err != nil {
			for _, q := range c.pools {
				_ = q.Close()
			}
			return nil, classify(err)
		}
		c.pools = append(c.pools, p)
		pools[i] = p
	}
	if c.store, err = sdlstore.New(pools, opts...); err != nil {
		for _, q := range c.pools {
			_ = q.Close()
		}
		return nil, classify(err)
	}
	return c, nil
}

// publishFlag collects --publish CHANNEL:EVENT flags.
type publishFlag struct{ events sdlstore.ChannelEvents }

func (p *publishFlag) String() string { return "" }
func (p *publishFlag) Type() string   { return "channel:event" }
func (p *publishFlag) Set(v string) error {
	ch, ev, ok := strings.Cut(v, ":")
	if !ok || ch == "" || ev == "" {
		return fmt.Errorf("want CHANNEL:EVENT, got %q", v)
	}
	if p.events == nil {
		p.events = sdlstore.ChannelEvents{}
	}
	p.events[ch] = append(p.events[ch], ev)
	return nil
}

func addPublishFlag(cmd *cobra.Command) *publishFlag {
	p := &publishFlag{}
	cmd.Flags().Var(p, "publish", "publish EVENT on CHANNEL of the namespace after the write (repeatable)")
	return p
}

// printable shows a value as text when it is printable UTF-8 on one line,
// and as a Go-quoted string otherwise.
func printable(v []byte) string {
	if utf8.Valid(v) && !slices.ContainsFunc([]rune(string(v)), func(r rune) bool { return !unicode.IsPrint(r) }) &&
		!strings.HasPrefix(string(v), `"`) {
		return string(v)
	}
	return strconv.Quote(string(v))
}

func sdlContext(cmd *cobra.Command) (context.Context, context.CancelFunc) {
	return context.WithTimeout(cmd.Context(), sdlOpTimeout)
}

// withStore makes a RunE that opens the store, bounds the operation with
// sdlOpTimeout, runs fn, and closes the store.
func (s *sdlCmd) withStore(fn func(cmd *cobra.Command, ctx context.Context, c *sdlConn, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		c, err := s.open(cmd)
		if err != nil {
			return err
		}
		defer c.close()
		ctx, cancel := sdlContext(cmd)
		defer cancel()
		return fn(cmd, ctx, c, args)
	}
}

func (s *sdlCmd) getCmd() *cobra.Command {
	var raw bool
	cmd := &cobra.Command{
		Use:   "get NAMESPACE KEY [KEY...]",
		Short: "Print the values of keys",
		Long: `Print "KEY: VALUE" for each key found; a value that is not printable text
is shown Go-quoted. With --raw and one key, write the value's bytes as they
are. Exits 1 when a key is missing.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 2 {
				return argsError(cmd, "get takes a NAMESPACE and at least one KEY")
			}
			if raw && len(args) != 2 {
				return argsError(cmd, "--raw takes exactly one KEY")
			}
			return nil
		},
		RunE: s.withStore(func(cmd *cobra.Command, ctx context.Context, c *sdlConn, args []string) error {
			ns, keys := args[0], args[1:]
			vals, err := c.store.Get(ctx, ns, keys...)
			if err != nil {
				return classify(err)
			}
			out := cmd.OutOrStdout()
			var missing []string
			for _, k := range keys {
				v, ok := vals[k]
				switch {
				case !ok:
					missing = append(missing, k)
				case raw:
					_, _ = out.Write(v)
				default:
					fmt.Fprintf(out, "%s: %s\n", k, printable(v))
				}
			}
			if len(missing) > 0 {
				return exitCode(exitFailure, fmt.Errorf("not found in namespace %q: %s", ns, strings.Join(missing, ", ")))
			}
			return nil
		}),
	}
	cmd.Flags().BoolVar(&raw, "raw", false, "write the value of one key unchanged, without a newline")
	return cmd
}

func (s *sdlCmd) setCmd() *cobra.Command {
	var pub *publishFlag
	var ifAbsent bool
	cmd := &cobra.Command{
		Use:   "set NAMESPACE KEY VALUE [KEY VALUE...]",
		Short: "Write keys",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 3 || len(args)%2 == 0 {
				return argsError(cmd, "set takes a NAMESPACE and KEY VALUE pairs")
			}
			if ifAbsent && len(args) != 3 {
				return argsError(cmd, "--if-absent takes exactly one KEY VALUE pair")
			}
			return nil
		},
		RunE: s.withStore(func(cmd *cobra.Command, ctx context.Context, c *sdlConn, args []string) error {
			var err error
			ns := args[0]
			if ifAbsent {
				var ok bool
				if len(pub.events) > 0 {
					ok, err = c.store.SetIfNotExistsAndPublish(ctx, ns, pub.events, args[1], []byte(args[2]))
				} else {
					ok, err = c.store.SetIfNotExists(ctx, ns, args[1], []byte(args[2]))
				}
				if err == nil && !ok {
					return exitCode(exitFailure, fmt.Errorf("key %q already exists in namespace %q", args[1], ns))
				}
				return classify(err)
			}
			data := map[string][]byte{}
			for i := 1; i < len(args); i += 2 {
				data[args[i]] = []byte(args[i+1])
			}
			if len(pub.events) > 0 {
				return classify(c.store.SetAndPublish(ctx, ns, pub.events, data))
			}
			return classify(c.store.Set(ctx, ns, data))
		}),
	}
	pub = addPublishFlag(cmd)
	cmd.Flags().BoolVar(&ifAbsent, "if-absent", false, "write only if the key does not exist (exit 1 if it does)")
	return cmd
}

func (s *sdlCmd) rmCmd() *cobra.Command {
	var pub *publishFlag
	var all bool
	cmd := &cobra.Command{
		Use:   "rm NAMESPACE KEY [KEY...] | rm --all NAMESPACE",
		Short: "Remove keys, or every key of a namespace",
		Args: func(cmd *cobra.Command, args []string) error {
			switch {
			case all && len(args) != 1:
				return argsError(cmd, "rm --all takes only a NAMESPACE")
			case !all && len(args) < 2:
				return argsError(cmd, "rm takes a NAMESPACE and at least one KEY (or --all)")
			}
			return nil
		},
		RunE: s.withStore(func(cmd *cobra.Command, ctx context.Context, c *sdlConn, args []string) error {
			var err error
			ns := args[0]
			switch {
			case all && len(pub.events) > 0:
				err = c.store.RemoveAllAndPublish(ctx, ns, pub.events)
			case all:
				err = c.store.RemoveAll(ctx, ns)
			case len(pub.events) > 0:
				err = c.store.RemoveAndPublish(ctx, ns, pub.events, args[1:]...)
			default:
				err = c.store.Remove(ctx, ns, args[1:]...)
			}
			return classify(err)
		}),
	}
	pub = addPublishFlag(cmd)
	cmd.Flags().BoolVar(&all, "all", false, "remove every key of the namespace")
	return cmd
}

func (s *sdlCmd) keysCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "keys NAMESPACE [PATTERN]",
		Short: "List the keys of a namespace matching a glob pattern (default *)",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 1 || len(args) > 2 {
				return argsError(cmd, "keys takes a NAMESPACE and an optional PATTERN")
			}
			return nil
		},
		RunE: s.withStore(func(cmd *cobra.Command, ctx context.Context, c *sdlConn, args []string) error {
			pattern := "*"
			if len(args) == 2 {
				pattern = args[1]
			}
			keys, err := c.store.FindKeys(ctx, args[0], pattern)
			if err != nil {
				return classify(err)
			}
			for _, k := range keys {
				fmt.Fprintln(cmd.OutOrStdout(), k)
			}
			return nil
		}),
	}
}

func (s *sdlCmd) watchCmd() *cobra.Command {
	var count int
	cmd := &cobra.Command{
		Use:   "watch NAMESPACE CHANNEL [CHANNEL...]",
		Short: "Print the events published on channels as they arrive",
		Long: `Subscribe to channels of a namespace and print "CHANNEL: EVENT" for each
event as it arrives, until interrupted or, with --count, after that many
events. "watching ..." is printed on stderr once the subscription stands.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 2 {
				return argsError(cmd, "watch takes a NAMESPACE and at least one CHANNEL")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if count < 0 {
				return usageErr("--count %d is negative", count)
			}
			c, err := s.open(cmd)
			if err != nil {
				return err
			}
			defer c.close()
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			ns := args[0]
			events := make(chan string, 256)
			enough := make(chan struct{})
			seen := 0
			cb := func(channel string, evs []string) {
				for _, ev := range evs {
					select {
					case events <- channel + ": " + ev:
					case <-enough:
					}
				}
			}
			sctx, cancel := context.WithTimeout(ctx, sdlOpTimeout)
			err = c.store.SubscribeChannel(sctx, ns, cb, args[1:]...)
			cancel()
			if err != nil {
				return classify(err)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "watching namespace %q, channels %s (Ctrl-C to stop)\n", ns, strings.Join(args[1:], ", "))
			out := cmd.OutOrStdout()
			defer close(enough)
			for {
				select {
				case <-ctx.Done():
					return nil
				case line := <-events:
					fmt.Fprintln(out, line)
					if seen++; count > 0 && seen >= count {
						return nil
					}
				}
			}
		},
	}
	cmd.Flags().IntVar(&count, "count", 0, "exit after this many events (0: run until interrupted)")
	return cmd
}

// scanPool walks the keys of p matching pattern with SCAN, calling fn with
// each batch.
func scanPool(ctx context.Context, p *redis.Pool, pattern string, fn func([]string)) error {
	conn, err := p.GetContext(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	cursor := "0"
	for {
		vals, err := redis.Values(redis.DoContext(conn, ctx, "SCAN", cursor, "MATCH", pattern, "COUNT", 1000))
		if err != nil {
			return err
		}
		if len(vals) != 2 {
			return errors.New("unexpected SCAN reply")
		}
		keys, err := redis.Strings(vals[1], nil)
		if err != nil {
			return err
		}
		if len(keys) > 0 {
			fn(keys)
		}
		if cursor, err = redis.String(vals[0], nil); err != nil {
			return err
		}
		if cursor == "0" {
			return nil
		}
	}
}
