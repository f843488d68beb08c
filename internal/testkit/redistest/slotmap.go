package redistest

import (
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/gomodule/redigo/redis"
)

// SlotRange is one entry of CLUSTER SLOTS: slots First..Last, owned by the
// master at Host:Port as the reply names it.
type SlotRange struct {
	First, Last int
	Host        string
	Port        int
}

// SlotMap is a CLUSTER SLOTS reply, sorted by first slot.
type SlotMap []SlotRange

// ParseSlotMap reads a CLUSTER SLOTS reply in redigo's form, with the
// error of the command that returned it.
func ParseSlotMap(reply any, err error) (SlotMap, error) {
	entries, err := redis.Values(reply, err)
	if err != nil {
		return nil, err
	}
	var m SlotMap
	for _, e := range entries {
		f, err := redis.Values(e, nil)
		if err != nil || len(f) < 3 {
			return nil, fmt.Errorf("redistest: malformed CLUSTER SLOTS entry %v", e)
		}
		first, err1 := redis.Int(f[0], nil)
		last, err2 := redis.Int(f[1], nil)
		master, err3 := redis.Values(f[2], nil)
		if err := errors.Join(err1, err2, err3); err != nil || len(master) < 2 {
			return nil, fmt.Errorf("redistest: malformed CLUSTER SLOTS entry %v", e)
		}
		host, err1 := redis.String(master[0], nil)
		port, err2 := redis.Int(master[1], nil)
		if err := errors.Join(err1, err2); err != nil {
			return nil, fmt.Errorf("redistest: malformed CLUSTER SLOTS entry %v", e)
		}
		m = append(m, SlotRange{first, last, host, port})
	}
	slices.SortFunc(m, func(a, b SlotRange) int { return a.First - b.First })
	return m, nil
}

// slotMapOf reads CLUSTER SLOTS on n.
func slotMapOf(n *Node) (SlotMap, error) { return ParseSlotMap(query(n, "CLUSTER", "SLOTS")) }

// Complete reports whether the ranges cover every slot once.
func (m SlotMap) Complete() bool {
	next := 0
	for _, r := range m {
		if r.First != next || r.Last < r.First {
			return false
		}
		next = r.Last + 1
	}
	return next == ClusterSlots
}

// OwnerAddr returns host:port of slot's master, "" when no range holds
// it.
func (m SlotMap) OwnerAddr(slot int) string {
	if r, ok := m.ownerOf(slot); ok {
		return net.JoinHostPort(r.Host, strconv.Itoa(r.Port))
	}
	return ""
}

// owner returns the port of slot's master, 0 when no range holds it.
func (m SlotMap) owner(slot int) int {
	r, _ := m.ownerOf(slot)
	return r.Port
}

func (m SlotMap) ownerOf(slot int) (SlotRange, bool) {
	for _, r := range m {
		if r.First <= slot && slot <= r.Last {
			return r, true
		}
	}
	return SlotRange{}, false
}

// masters returns the ports of the masters in the order of their first
// slot.
func (m SlotMap) masters() []int {
	var out []int
	for _, r := range m {
		if !slices.Contains(out, r.Port) {
			out = append(out, r.Port)
		}
	}
	return out
}

// firstSlotOf returns the first slot of the master on port, -1 if none.
func (m SlotMap) firstSlotOf(port int) int {
	for _, r := range m {
		if r.Port == port {
			return r.First
		}
	}
	return -1
}

// InFlightBound returns more bytes than the kernel can buffer on one
// loopback TCP connection: the largest receive buffer autotuning may grow
// to (tcp_rmem's third field) plus the largest send buffer (tcp_wmem's),
// plus 1 MiB. A write of that many bytes to a master whose replica is
// paused stays unreplicated. Both limits count the buffers' memory, which
// is more than the data they hold. Without /proc (not Linux), 64 MiB,
// several times the defaults of the BSDs and macOS.
func InFlightBound() int {
	const mib = 1 << 20
	limit := func(name string) int {
		b, err := os.ReadFile("/proc/sys/net/ipv4/" + name)
		if err != nil {
			return -1
		}
		f := strings.Fields(string(b))
		if len(f) != 3 {
			return -1
		}
		v, err := strconv.Atoi(f[2])
		if err != nil {
			return -1
		}
		return v
	}
	r, w := limit("tcp_rmem"), limit("tcp_wmem")
	if r < 0 || w < 0 {
		return 64 * mib
	}
	return r + w + mib
}
