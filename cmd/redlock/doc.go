// Command redlock runs commands under a distributed lock held on three or
// more independent Redis nodes (the Redlock algorithm of package redlock),
// shows who holds a lock, starts embedded Redis nodes for trying it out,
// and reads, writes and watches SDL data (package sdlstore).
//
// Install it with
//
//	go install github.com/redlockplus/redlock/cmd/redlock@latest
//
// or try it without installing anything:
//
//	go run ./cmd/redlock demo
//
// # Commands
//
//	redlock run [--ttl 30s] [--wait forever | --wait 1m | --no-wait] [--kill-grace 10s] [--permits N] [--metrics-addr :9464] NAME -- CMD [ARGS...]
//	redlock elect [--wait forever] [--kill-grace 10s] NAME --value V -- CMD [ARGS...]
//	redlock status [--json] NAME
//	redlock doctor [--ttl 2m] [--json]
//
// run, elect, status and doctor take the lock nodes from --nodes or
// --cluster (see Configuration).
//
//	redlock dev [--nodes 3] [--port 7380]
//	redlock demo [--workers 4] [--metrics-addr :9464]
//	redlock sdl get|set|rm|keys|watch|namespaces ...
//	redlock bench [--duration 1s] [--json]
//	redlock completion bash|zsh|fish|powershell
//
// run acquires NAME, waiting without limit by default as flock(1) does
// (--wait D and --no-wait bound the wait), runs CMD while the lock is
// extended in the background (at 3/4 of its validity), and releases it
// when CMD exits. stdin, stdout
// and stderr pass straight through and CMD's exit code is redlock's. CMD
// runs in its own process group: SIGINT, SIGTERM, SIGHUP and SIGQUIT sent
// to redlock are forwarded to the group, and when the lock is lost (heard
// within a round trip of its keys vanishing from a quorum) the group gets
// SIGTERM, then SIGKILL after --kill-grace. In the foreground of
// a terminal the group is made the terminal's foreground group, so CMD can
// read the terminal and gets Ctrl-C directly; a CMD stopped with Ctrl-Z is
// resumed at once, since its lock would keep running out. If redlock itself
// dies (SIGKILL, a crash, the OOM killer), the lock runs out unextended: a
// guardian process started beside CMD then sends the group SIGTERM at once
// and SIGKILL after --kill-grace, as for a lost lock (on Linux CMD's first
// process also gets the kernel's parent-death SIGTERM). CMD sees
// REDLOCK_NAME and REDLOCK_TOKEN,
// and with --fencing REDLOCK_FENCE, a fencing token larger than every
// earlier holder's (redlock.WithFencing).
//
// With --permits N, NAME is a semaphore: CMD runs once one of its N
// permits is free (Factory.NewSemaphore) and sees REDLOCK_PERMIT.
//
// elect campaigns in the election NAME with value V (Factory.NewElection),
// runs CMD while leading, stops it as run does when the leadership is lost
// (exit 76), and resigns when CMD exits. CMD sees REDLOCK_VALUE.
//
// status reads the lock on every node without taking it (Factory.Inspect):
// per node the key's presence, token, TTL and last fencing token, and
// whether a quorum holds one token. It exits 0 when the lock is held and 3 when it is free, as
// systemctl is-active does, so that scripts need not parse its output. A
// node the node guard keeps out of the vote is shown as quarantined. On a
// Redis Cluster each row names the master, the lock's key on it (the name
// under the master's hash tag, "{7}NAME") and the key's slot
// (NodeState.Key and Slot); --json adds them as key and slot.
//
// doctor reads every node's INFO, CONFIG and clock (Factory.Health) and
// prints one line per node with a verdict and the reason: unreachable,
// the same server as another node, restarted without durable storage less
// than --ttl ago, its clock off, or a maxmemory-policy that may evict lock
// keys. It exits 0 when every node is fit to vote for a safe lock and 4
// when one is not, naming each such node on stderr. With --json it prints
// the reports (redlock.NodeHealth) as an array, the uptime in whole
// seconds (uptime_s), the clock offset and round trip in milliseconds
// (clock_offset_ms, rtt_ms) and a node's error as a string. On a Redis
// Cluster each line also names the master's key tag and slot
// (NodeHealth.KeyTag and Slot; key_tag and slot in --json).
//
// dev starts N in-process miniredis nodes on loopback ports and prints the
// REDLOCK_NODES line for them; demo shows workers contending for a lock,
// autoextension and a node failure, then checks that no two holdings
// overlapped; bench runs a short benchmark (internal/benchkit) and labels
// numbers from embedded nodes as not representative, its own or any that
// report no Redis version, such as those of dev.
//
// run and demo with --metrics-addr serve the lock's OpenTelemetry metrics
// (package github.com/redlockplus/redlock/otel) in the Prometheus format on
// /metrics while they run; an address that cannot be listened on exits 64.
//
// # Configuration
//
// Lock nodes come from --nodes redis://a:6379,redis://b:6379,redis://c:6379
// or the REDLOCK_NODES variable (a bare host:port gets redis://), checked by
// redlock.NewFactoryFromURLs as a program's would be. demo and
// bench start embedded nodes when neither is set.
//
// On a Redis Cluster, run, elect, status and doctor take the seeds of the
// cluster instead: --cluster redis://a:7000,redis://b:7000 or the
// REDLOCK_CLUSTER variable, any members, the first one's scheme and
// credentials used for every master. The nodes are then the cluster's
// masters, at least 3 (redlock.ClusterNodes): each keeps a lock's key
// under its own hash tag, in a slot it owns. --nodes and --cluster
// together are refused, and so are REDLOCK_NODES and REDLOCK_CLUSTER both
// set when neither flag is given; a flag wins over both variables. A seed
// that is a standalone server (cluster support disabled) or a cluster of
// fewer than 3 masters exits 64, seeds that cannot be reached 69. demo
// and bench run on independent nodes only, and refuse REDLOCK_CLUSTER
// without REDLOCK_NODES. --ttl, --timeout (per
// node), --retry-delay, --quorum and --drift-factor map to the options of
// package redlock. sdl uses --nodes (one or more instances), else the
// DBAAS_* variables of the RIC platform, else REDLOCK_NODES.
//
// # Exit codes
//
//	0        success; for run, CMD exited 0; for status, the lock is held
//	1..255   run: CMD's own exit code, passed through (128+n: killed by signal n)
//	1        other commands: a failure such as sdl get of a missing key
//	3        status: the lock is free
//	4        doctor: a node is not fit to vote for a safe lock
//	64       bad command line or configuration: unknown command or flag,
//	         missing '--', bad URL or duration, fewer than 3 nodes
//	69       nodes unreachable: fewer than a quorum answered, or Redis failed
//	70       internal error in redlock
//	75       run: the lock was not acquired within --wait (or at once with --no-wait)
//	76       run: the lock was lost while CMD ran, and CMD was stopped
//	126, 127 run: CMD cannot be executed, or was not found
//
// Every error is one short line on stderr starting with "redlock: ".
package main
