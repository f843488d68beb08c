package pipeline

import (
	"fmt"
	"math"
)

// ParseTime reads a reply to TIME as redigo gives it (two bulk strings of
// digits, seconds and microseconds) in µs, without allocating.
func ParseTime(v any) (int64, error) {
	t, _ := v.([]any)
	if len(t) == 2 {
		sec, ok1 := t[0].([]byte)
		us, ok2 := t[1].([]byte)
		if ok1 && ok2 {
			return timeOf(sec, us)
		}
	}
	return 0, fmt.Errorf("TIME replied %v, not a time", v)
}

// timeOf reads TIME's seconds and microseconds.
func timeOf(sec, us []byte) (int64, error) {
	s, ok1 := parseDigits(sec)
	u, ok2 := parseDigits(us)
	t, ok := micros(s, u)
	if !ok1 || !ok2 || !ok {
		return 0, fmt.Errorf("TIME replied %q %q, not a time", sec, us)
	}
	return t, nil
}

// micros is a time of TIME's parts in µs, if it is one.
func micros(sec, us uint64) (int64, bool) {
	if sec >= math.MaxInt64/1_000_000 || us >= 1_000_000 {
		return 0, false
	}
	return int64(sec)*1_000_000 + int64(us), true
}
