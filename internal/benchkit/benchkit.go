package benchkit

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redlockplus/redlock"
)

// ErrNotSupported is returned by Run when a target cannot run a workload,
// such as a Keep workload on a target that is not a KeepTarget.
var ErrNotSupported = errors.New("benchkit: workload not supported by target")

// errNoQuorum is returned by the floor when fewer than a quorum of nodes
// took or released the key.
var errNoQuorum = errors.New("benchkit: no quorum")

// Locker is one lock handle of a Target: one key, used by one goroutine at
// a time, locked and unlocked over and over.
type Locker interface {
	// Lock takes the lock, waiting as the implementation waits by default,
	// and returns an error when it gave up or ctx ended.
	Lock(ctx context.Context) error
	// Unlock releases the lock taken by the last successful Lock.
	Unlock(ctx context.Context) error
}

// Keeper is a Locker whose lock, once taken, is kept alive by extending it
// until Unlock (workload W6).
type Keeper interface {
	Locker
	// Lost returns nil while the lock is held, and why it was lost once
	// the implementation has detected a loss.
	Lost() error
}

// Watcher is a Locker that signals the loss of its lock (workload W9).
type Watcher interface {
	Locker
	// Done returns a channel that is closed once the implementation has
	// noticed that the lock taken by the last successful Lock is no longer
	// held, or Unlock ended it. Call it after Lock.
	Done() <-chan struct{}
}

// NodeKey is one key on one node: Node indexes the nodes given to the
// target (and Workload.Nodes, which lists the same nodes in the same
// order).
type NodeKey struct {
	Node int
	Key  string
}

// Target is one implementation under test.
type Target interface {
	// Name labels the target in results, for example "redlock" or "floor".
	Name() string
	// NewLocker returns a handle for key.
	NewLocker(key string) (Locker, error)
	// Close releases what the target holds and waits for its background
	// work.
	Close() error
}

// KeepTarget is a Target that can keep locks alive while they are held.
type KeepTarget interface {
	Target
	// NewKeeper returns a handle for key whose lock lives ttl on the nodes
	// and is extended while held.
	NewKeeper(key string, ttl time.Duration) (Keeper, error)
}

// WatchTarget is a Target whose locks signal their loss.
type WatchTarget interface {
	Target
	// NewWatcher returns a handle for key whose lock lives ttl on the nodes
	// and is extended while held.
	NewWatcher(key string, ttl time.Duration) (Watcher, error)
	// LossKeys returns the keys that make up the lock of key on a quorum
	// of its nodes (or on a majority of its keys): deleting or overwriting
	// them all loses the lock.
	LossKeys(key string) []NodeKey
}

// Kind says what a workload measures.
type Kind int

const (
	// Cycle runs lock, hold, unlock, think in a loop on several goroutines
	// for a duration (W1..W4).
	Cycle Kind = iota
	// Allocs runs uncontended cycles on one goroutine and counts the heap
	// allocations per cycle (W5).
	Allocs
	// Keep takes many locks, keeps them alive for a duration and counts the
	// ones lost, the CPU time, the heap and the Redis commands spent (W6,
	// W7).
	Keep
	// Detect takes a lock, deletes or overwrites its keys on a quorum of
	// the nodes behind its holder's back and measures how long the holder
	// takes to notice, one lock at a time (W9).
	Detect
)

// Workload describes one measurement. Standard returns the workloads of
// issue 5; a caller may adjust durations and counts.
type Workload struct {
	ID    string // "W1-3", "W2", ...; the goal's id is the part before '-'
	Title string // one line for tables
	Kind  Kind

	// NodeCount is how many nodes the caller should give the target.
	NodeCount int
	// SlowNode asks the caller to put one node behind a proxy that adds
	// about 50 ms per round trip (W4).
	SlowNode bool
	// FloorAtQuorum asks the caller to build the floor target so that it
	// returns at quorum instead of waiting for every node (W4).
	FloorAtQuorum bool

	// Goroutines run the cycle loop concurrently (Cycle).
	Goroutines int
	// SharedKey makes every goroutine use one key; else each has its own.
	SharedKey bool
	// Hold is how long the lock is held in each cycle; Think is the pause
	// after Unlock before asking again.
	Hold, Think time.Duration
	// Duration is how long a Cycle workload runs, or how long a Keep
	// workload keeps its locks.
	Duration time.Duration
	// CheckOverlap counts the times two goroutines held the shared key at
	// once (there must be none).
	CheckOverlap bool

	// Ops is the number of measured cycles of an Allocs workload, after
	// Warmup cycles that are not measured, or the number of locks a Detect
	// workload takes and breaks (its samples).
	Ops, Warmup int

	// Locks is how many locks a Keep workload takes, each with TTL TTL. A
	// Detect workload's locks have TTL TTL too, and each is held Hold
	// before its keys are broken.
	Locks int
	TTL   time.Duration
	// MaxWait bounds how long a Detect workload waits for the holder to
	// notice a loss; a longer wait is counted as a miss.
	MaxWait time.Duration
	// Nodes are raw pools of the workload's nodes, apart from the
	// targets' own: Cycle and Keep workloads read INFO (cpu; Keep also
	// commandstats and stats) through them before and after the run
	// (optional), a Detect workload deletes or overwrites the lock's keys
	// through them (required).
	Nodes []redlock.Pool

	// KeyPrefix starts every key of the run. Run adds a random part, so
	// that no key is shared between runs. Default "benchkit:".
	KeyPrefix string
}

// Goal returns the id of the goal the workload belongs to: "W1" for
// "W1-3".
func (w Workload) Goal() string {
	for i := 0; i < len(w.ID); i++ {
		if w.ID[i] == '-' {
			return w.ID[:i]
		}
	}
	return w.ID
}

// Standard returns the workloads W1..W6 of issue 5 and W7..W9 of issue 15.
// Quick shortens them to a smoke test of a few seconds each; the ratios are
// then only indicative.
func Standard(quick bool) []Workload {
	d := func(full, short time.Duration) time.Duration {
		if quick {
			return short
		}
		return full
	}
	n := func(full, short int) int {
		if quick {
			return short
		}
		return full
	}
	return []Workload{
		{ID: "W1-3", Title: "1 goroutine, uncontended lock+unlock, 3 nodes", Kind: Cycle,
			NodeCount: 3, Goroutines: 1, Duration: d(4*time.Second, 300*time.Millisecond)},
		{ID: "W1-5", Title: "1 goroutine, uncontended lock+unlock, 5 nodes", Kind: Cycle,
			NodeCount: 5, Goroutines: 1, Duration: d(4*time.Second, 300*time.Millisecond)},
		{ID: "W2", Title: "64 goroutines, distinct keys, 3 nodes", Kind: Cycle,
			NodeCount: 3, Goroutines: 64, Duration: d(4*time.Second, 300*time.Millisecond)},
		{ID: "W3", Title: "16 goroutines, one key, hold 1 ms, think 5 ms", Kind: Cycle,
			NodeCount: 3, Goroutines: 16, SharedKey: true, Hold: time.Millisecond,
			Think: 5 * time.Millisecond, CheckOverlap: true, Duration: d(10*time.Second, time.Second)},
		{ID: "W4", Title: "5 nodes, one behind ~50 ms per round trip", Kind: Cycle,
			NodeCount: 5, SlowNode: true, FloorAtQuorum: true, Goroutines: 1,
			Duration: d(4*time.Second, 400*time.Millisecond)},
		{ID: "W5", Title: "W1 (3 nodes), allocations per cycle", Kind: Allocs,
			NodeCount: 3, Ops: n(3000, 200), Warmup: n(300, 20)},
		{ID: "W6", Title: "locks kept alive with autoextend, TTL 2 s", Kind: Keep,
			NodeCount: 3, Locks: n(10000, 300), TTL: 2 * time.Second, Duration: d(20*time.Second, 3*time.Second)},
		{ID: "W7", Title: fmt.Sprintf("%d locks kept alive with autoextend, TTL %v, for %v", n(100000, 2000),
			d(30*time.Second, 2*time.Second), d(time.Minute, 3*time.Second)), Kind: Keep,
			NodeCount: 3, Locks: n(100000, 2000), TTL: d(30*time.Second, 2*time.Second), Duration: d(time.Minute, 3*time.Second)},
		{ID: "W8", Title: "W1 on 3, 5 and 7 nodes", Kind: Cycle,
			NodeCount: 7, Goroutines: 1, Duration: d(4*time.Second, 300*time.Millisecond)},
		{ID: "W9", Title: "loss detection, TTL 120 s", Kind: Detect,
			NodeCount: 3, Ops: n(200, 6), TTL: 2 * time.Minute, Hold: 20 * time.Millisecond,
			MaxWait: d(time.Second, 200*time.Millisecond)},
	}
}

// Result is what Run measured for one target on one workload.
type Result struct {
	Workload string `json:"workload"`
	Target   string `json:"target"`

	// Ops counts completed cycles (lock, hold, unlock).
	Ops int64 `json:"ops"`
	// Errors counts Lock and Unlock calls that failed before the end of the
	// run; FirstError is the first of them.
	Errors     int64  `json:"errors"`
	FirstError string `json:"first_error,omitempty"`
	// Elapsed is the measured time; OpsPerSec is Ops/Elapsed.
	Elapsed   time.Duration `json:"elapsed_ns"`
	OpsPerSec float64       `json:"ops_per_sec"`

	// Cycle is the latency of the successful Lock call plus hold plus Unlock.
	Cycle Latency `json:"cycle"`
	// Acquire is the time from asking for the lock to holding it, failed
	// Lock calls retried in between included.
	Acquire Latency `json:"acquire"`

	// Overlaps counts entries into the shared key's critical section while
	// another goroutine was inside (CheckOverlap).
	Overlaps int64 `json:"overlaps"`

	// ClientCPUSeconds is the CPU time of the process (getrusage) during a
	// Cycle run, and ServerCPUSeconds that of the workload's nodes (INFO
	// cpu, summed; 0 when the workload does not name them). On a machine
	// whose client and servers share the cores, their sum per operation is
	// what bounds throughput.
	ClientCPUSeconds float64 `json:"client_cpu_s,omitempty"`
	ServerCPUSeconds float64 `json:"server_cpu_s,omitempty"`
	// ClientSyscalls counts the read and write system calls of the process
	// during a Cycle run (/proc/self/io; 0 elsewhere), and ServerEvents the
	// reads and writes of the nodes' event loops (INFO stats
	// total_reads_processed + total_writes_processed, summed): with CPU
	// per cycle, where it goes.
	ClientSyscalls int64 `json:"client_syscalls,omitempty"`
	ServerEvents   int64 `json:"server_events,omitempty"`

	// AllocsPerOp and BytesPerOp are the heap allocations of one cycle
	// (Allocs workloads).
	AllocsPerOp float64 `json:"allocs_per_op,omitempty"`
	BytesPerOp  float64 `json:"bytes_per_op,omitempty"`

	// Keep is set for Keep workloads.
	Keep *KeepResult `json:"keep,omitempty"`
	// Detect is set for Detect workloads.
	Detect *DetectResult `json:"detect,omitempty"`

	// CycleSamples and AcquireSamples hold every sample, for Merge and
	// for charts; DetectSamples those of a Detect workload.
	CycleSamples   *Recorder `json:"-"`
	AcquireSamples *Recorder `json:"-"`
	DetectSamples  *Recorder `json:"-"`
}

// KeepResult is what a Keep workload measured.
type KeepResult struct {
	Locks    int `json:"locks"`    // locks asked for
	Acquired int `json:"acquired"` // locks taken
	// Lost counts the locks detected lost during the hold or that could not
	// be released on a quorum at its end; FirstLoss says why the first was.
	Lost      int    `json:"lost"`
	FirstLoss string `json:"first_loss,omitempty"`
	// Hold is how long the locks were kept.
	Hold time.Duration `json:"hold_ns"`
	// CPUSeconds is the user+system CPU time of this process during the
	// hold (getrusage); ServerCPUSeconds that of the Nodes (INFO cpu).
	CPUSeconds       float64 `json:"cpu_seconds"`
	ServerCPUSeconds float64 `json:"server_cpu_seconds"`
	// Commands is the number of commands the Nodes ran during the
	// hold (INFO commandstats, INFO itself excluded, the commands run by
	// scripts included); CommandsPerSec is Commands per second of hold.
	Commands       int64   `json:"commands"`
	CommandsPerSec float64 `json:"commands_per_sec"`
	// Scripts and ScriptsPerSec count the script calls (EVAL, EVALSHA,
	// FCALL) among the Commands: one per extension request that reached a
	// node.
	Scripts       int64   `json:"scripts"`
	ScriptsPerSec float64 `json:"scripts_per_sec"`
	// Goroutines is the number of goroutines of this process in the middle
	// of the hold.
	Goroutines int `json:"goroutines"`
	// CPUFraction is CPUSeconds per second of hold: the share of one core
	// this process used to keep the locks.
	CPUFraction float64 `json:"cpu_fraction"`
	// HeapBytesPerLock is the live heap (runtime/metrics /gc/heap/live,
	// after a forced GC) at the end of the hold, the locks still held,
	// minus the live heap before the lock handles were made, divided by
	// the locks held: what a held lock costs, its handle included.
	HeapBytesPerLock float64 `json:"heap_bytes_per_lock"`
	// NodeBytesPerLock is the growth of each node's used_memory (INFO
	// memory) from before the locks were taken to the end of the hold, the
	// locks still held, averaged over the Nodes, per lock held: a held
	// lock's key and what the node keeps about it (the tracking table of
	// loss detection). TrackedKeysPerNode is the growth of the nodes'
	// tracking_total_keys (INFO stats) over the same span, their mean.
	NodeBytesPerLock   float64 `json:"node_bytes_per_lock"`
	TrackedKeysPerNode float64 `json:"tracked_keys_per_node"`
	// Processed is the number of commands the Nodes processed during
	// the hold by INFO stats total_commands_processed, the tool's own INFO
	// calls left out (the commands run by scripts are counted, as in
	// Commands); ProcessedPerSec is Processed per second of hold.
	Processed       int64   `json:"processed"`
	ProcessedPerSec float64 `json:"processed_per_sec"`
	// AllocBytesPerSec is what this process allocated per second of hold
	// (runtime/metrics /gc/heap/allocs:bytes), and GCCycles the garbage
	// collections that ran in the hold: with a large live heap each costs
	// a marking of every held lock, and the allocation rate sets how
	// often one comes.
	AllocBytesPerSec float64 `json:"alloc_bytes_per_sec"`
	GCCycles         int64   `json:"gc_cycles"`
	// GCCycleCPUSeconds is the CPU time (getrusage) of one collection of
	// the held locks, forced just before the hold so that the hold starts
	// with none owed: the acquisitions' garbage, collected or not in the
	// first seconds of the hold as the pacer had it, decided whether a
	// hold of 100,000 locks cost 0.20 or 0.30 CPU s.
	GCCycleCPUSeconds float64 `json:"gc_cycle_cpu_seconds"`
	// SteadyGCs is how many collections a hold this long brings in the
	// steady state, GOGC's share of the live heap being allocated between
	// two of them: AllocBytesPerSec x Hold / (live heap x GOGC/100).
	SteadyGCs float64 `json:"steady_gcs"`
	// SteadyCPUSeconds is CPUSeconds with the collections that ran in the
	// hold replaced by SteadyGCs, each at GCCycleCPUSeconds: what keeping
	// the locks costs over a long run, which a sample of Hold would show
	// as either no collection or a whole one. SteadyCPUFraction is it per
	// second of hold.
	SteadyCPUSeconds  float64 `json:"steady_cpu_seconds"`
	SteadyCPUFraction float64 `json:"steady_cpu_fraction"`
}

// DetectResult is what a Detect workload measured.
type DetectResult struct {
	// Samples counts the locks taken and broken; Noticed those whose holder
	// noticed the loss within MaxWait, Missed the others.
	Samples int `json:"samples"`
	Noticed int `json:"noticed"`
	Missed  int `json:"missed"`
	// MaxWait is the bound of each wait.
	MaxWait time.Duration `json:"max_wait_ns"`
	// Latency is the time from the last key of the quorum deleted or
	// overwritten to the holder's Done closed; a miss counts as MaxWait, so
	// a percentile at MaxWait means "not noticed".
	Latency Latency `json:"latency"`
}

// Run measures target on w. A Keep workload needs a KeepTarget and a
// Detect workload a WatchTarget; they return ErrNotSupported otherwise. ctx bounds the whole run; a run cut short by
// ctx returns what it measured with ctx's error.
func Run(ctx context.Context, target Target, w Workload) (Result, error) {
	if w.KeyPrefix == "" {
		w.KeyPrefix = "benchkit:"
	}
	// The target's name is left out, so that the targets of a workload
	// write keys of one length: a node's memory per key depends on it.
	w.KeyPrefix += w.ID + ":" + randomHex(6) + ":"
	switch w.Kind {
	case Cycle:
		return runCycle(ctx, target, w)
	case Allocs:
		return runAllocs(ctx, target, w)
	case Keep:
		kt, ok := target.(KeepTarget)
		if !ok {
			return Result{Workload: w.ID, Target: target.Name()}, ErrNotSupported
		}
		return runKeep(ctx, kt, w)
	case Detect:
		wt, ok := target.(WatchTarget)
		if !ok {
			return Result{Workload: w.ID, Target: target.Name()}, ErrNotSupported
		}
		return runDetect(ctx, wt, w)
	}
	return Result{}, errors.New("benchkit: unknown workload kind")
}
