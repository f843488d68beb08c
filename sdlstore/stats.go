package sdlstore

import "context"

// InstanceStats are the figures of one instance, from its INFO.
type InstanceStats struct {
	Instance int    `json:"instance"`
	Addr     string `json:"addr,omitempty"` // "" when the pool does not know it
	// Error is set, and the figures are zero, when the instance did not
	// answer.
	Error string `json:"error,omitempty"`
	// Keys counts the keys of database 0, where SDL data lives.
	Keys int64 `json:"keys"`
	// UsedMemory is the memory Redis allocated, in bytes.
	UsedMemory int64 `json:"used_memory_bytes"`
	// ConnectedClients counts the client connections, this one included.
	ConnectedClients int64 `json:"connected_clients"`
	// OpsPerSec is the instantaneous number of commands per second.
	OpsPerSec int64 `json:"ops_per_sec"`
	// UptimeSeconds is how long the server has run.
	UptimeSeconds int64 `json:"uptime_seconds"`
}

// Statistics asks every instance for its INFO, each within a few seconds,
// and returns its key count, memory, clients, load and uptime, in hashing
// order. An instance that does not answer has Error set; the error returned
// is only ErrClosed.
func (s *Store) Statistics(ctx context.Context) ([]InstanceStats, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	out := make([]InstanceStats, 0, len(s.insts))
	for _, in := range s.insts {
		st := InstanceStats{Instance: in.index}
		info, err := s.info(ctx, in, "statistics")
		st.Addr = in.addr()
		if err != nil {
			st.Error = err.Error()
			out = append(out, st)
			continue
		}
		st.Keys = intField(subFields(info["db0"]), "keys")
		st.UsedMemory = intField(info, "used_memory")
		st.ConnectedClients = intField(info, "connected_clients")
		st.OpsPerSec = intField(info, "instantaneous_ops_per_sec")
		st.UptimeSeconds = intField(info, "uptime_in_seconds")
		out = append(out, st)
	}
	return out, nil
}
