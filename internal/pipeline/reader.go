package pipeline

import (
	"bytes"
	"cmp"
	"errors"
	"io"
	"math"
	"slices"
	"time"

	"github.com/gomodule/redigo/redis"
)

// errProtocol is what a reply that is not RESP2 fails the connection
// with.
var errProtocol = errors.New("pipeline: malformed reply")

// okReply is the value of +OK, shared rather than allocated per reply.
var okReply any = "OK"

// readBufSize is what the reader's buffer starts with; it grows for a
// reply that does not fit and stays grown.
const readBufSize = 16 << 10

// reader parses RESP2 replies off the socket of a Socketed connection into
// the values redigo's Receive gives (int64, []byte, string, []any, nil,
// redis.Error), with a buffer of its own. It sets the read deadline once
// per read from the socket, when the buffer holds no whole reply, rather
// than once per reply as redigo's ReceiveWithTimeout does: under load one
// read brings the replies of a whole batch, and moving the socket's
// deadline (a runtime timer) for each of them was a twentieth of the
// client's CPU in a cycle.
type reader struct {
	sock  socket
	stall time.Duration
	buf   []byte // read from the socket, not yet all parsed
	r     int    // the first byte of buf not parsed
}

// socket is what the reader needs of its connection.
type socket interface {
	io.Reader
	SetReadDeadline(t time.Time) error
}

func newReader(sock socket, stall time.Duration) *reader {
	return &reader{sock: sock, stall: stall, buf: make([]byte, 0, readBufSize)}
}

// receive reads one reply, waiting at most the stall time for each read
// from the socket. An error reply is returned as the error, as redigo's
// Receive does; any other error is the connection's.
func (rd *reader) receive() (any, error) {
	v, err := rd.value()
	if e, ok := v.(redis.Error); ok && err == nil {
		return nil, e
	}
	return v, err
}

// value reads one reply, an error reply as a value.
func (rd *reader) value() (any, error) {
	line, err := rd.line()
	if err != nil {
		return nil, err
	}
	if len(line) == 0 {
		return nil, errProtocol
	}
	switch line[0] {
	case '+':
		if string(line[1:]) == "OK" {
			return okReply, nil
		}
		return string(line[1:]), nil
	case '-':
		return redis.Error(line[1:]), nil
	case ':':
		n, err := parseInt(line[1:])
		if err != nil {
			return nil, err
		}
		return n, nil
	case '$':
		n, err := parseLen(line[1:])
		if n < 0 || err != nil {
			return nil, err
		}
		return rd.bulk(n)
	case '*':
		n, err := parseLen(line[1:])
		if n < 0 || err != nil {
			return nil, err
		}
		vals := make([]any, 0, min(n, 1024)) // grown as elements come: a length is not trusted
		for range n {
			v, err := rd.value()
			if err != nil {
				return nil, err
			}
			vals = append(vals, v)
		}
		return vals, nil
	}
	return nil, errProtocol
}

// clock reads the reply to TIME, two bulk strings of digits, in µs
// without allocating. An error reply is returned as the error; anything
// else fails the connection.
func (rd *reader) clock() (int64, error) {
	line, err := rd.line()
	switch {
	case err != nil:
		return 0, err
	case len(line) > 0 && line[0] == '-':
		return 0, redis.Error(line[1:])
	case string(line) != "*2":
		return 0, errProtocol
	}
	sec, err := rd.number()
	if err != nil {
		return 0, err
	}
	us, err := rd.number()
	if err != nil {
		return 0, err
	}
	t, ok := micros(sec, us)
	if !ok {
		return 0, errProtocol
	}
	return t, nil
}

// number reads a bulk string of decimal digits, as a line: it holds no
// CRLF.
func (rd *reader) number() (uint64, error) {
	line, err := rd.line()
	if err != nil || len(line) == 0 || line[0] != '$' {
		return 0, cmp.Or(err, errProtocol)
	}
	n, err := parseLen(line[1:])
	if err != nil || n < 0 {
		return 0, errProtocol
	}
	if line, err = rd.line(); err != nil {
		return 0, err
	}
	v, ok := parseDigits(line)
	if !ok || len(line) != n {
		return 0, errProtocol
	}
	return v, nil
}

// line returns the next line without its CRLF; it is valid until the
// next read.
func (rd *reader) line() ([]byte, error) {
	for {
		if i := bytes.IndexByte(rd.buf[rd.r:], '\n'); i >= 0 {
			line := rd.buf[rd.r : rd.r+i+1]
			rd.r += i + 1
			if len(line) < 2 || line[len(line)-2] != '\r' {
				return nil, errProtocol
			}
			return line[:len(line)-2], nil
		}
		if err := rd.fill(); err != nil {
			return nil, err
		}
	}
}

// bulk reads a bulk string of n bytes and its CRLF. What the buffer
// lacks of a long one is read straight into the value, which grows as it
// arrives rather than trusting the length all at once.
func (rd *reader) bulk(n int) ([]byte, error) {
	avail := min(n, len(rd.buf)-rd.r)
	p := make([]byte, avail, min(n, avail+readBufSize))
	rd.r += copy(p, rd.buf[rd.r:])
	for len(p) < n {
		p = slices.Grow(p, min(n-len(p), len(p)+readBufSize))
		if err := rd.sock.SetReadDeadline(time.Now().Add(rd.stall)); err != nil {
			return nil, err
		}
		k, err := rd.sock.Read(p[len(p):min(n, cap(p))])
		p = p[:len(p)+k]
		if k == 0 {
			return nil, cmp.Or(err, io.ErrNoProgress)
		}
	}
	end, err := rd.line()
	if err != nil {
		return nil, err
	}
	if len(end) != 0 {
		return nil, errProtocol
	}
	return p, nil
}

// fill reads what the socket has, at least one byte, after the bytes not
// yet parsed, which it first moves to the front.
func (rd *reader) fill() error {
	rest := copy(rd.buf, rd.buf[rd.r:])
	rd.buf, rd.r = rd.buf[:rest], 0
	if rest == cap(rd.buf) {
		rd.buf = slices.Grow(rd.buf, rest)
	}
	if err := rd.sock.SetReadDeadline(time.Now().Add(rd.stall)); err != nil {
		return err
	}
	n, err := rd.sock.Read(rd.buf[rest:cap(rd.buf)])
	rd.buf = rd.buf[:rest+n]
	if n > 0 {
		return nil // an error with the bytes comes again on the next read
	}
	return cmp.Or(err, io.ErrNoProgress)
}

// parseLen reads the length of a bulk string or an array: -1 for nil.
func parseLen(p []byte) (int, error) {
	if string(p) == "-1" {
		return -1, nil
	}
	n, ok := parseDigits(p)
	if !ok || n > math.MaxInt32 {
		return -1, errProtocol
	}
	return int(n), nil
}

// parseInt reads an integer reply: a decimal int64.
func parseInt(p []byte) (int64, error) {
	neg := len(p) > 0 && p[0] == '-'
	if neg {
		p = p[1:]
	}
	n, ok := parseDigits(p)
	switch {
	case ok && neg && n <= 1<<63:
		return -int64(n), nil // 1<<63 wraps to math.MinInt64, as it should
	case ok && !neg && n <= math.MaxInt64:
		return int64(n), nil
	}
	return 0, errProtocol
}

// parseDigits reads 1 to 19 decimal digits, which fit a uint64.
func parseDigits(p []byte) (uint64, bool) {
	if len(p) == 0 || len(p) > 19 {
		return 0, false
	}
	var n uint64
	for _, c := range p {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	return n, true
}
