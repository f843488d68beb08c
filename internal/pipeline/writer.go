package pipeline

import (
	"fmt"
	"io"
	"net"
	"strconv"
	"time"

	"github.com/gomodule/redigo/redis"
)

// Socketed is a connection that Dial opened on a plain socket (no TLS, no
// wrapper of the caller's between it and the server) and lets the Conn
// use it: its batches then go out in one write each instead of through
// redigo's 4 KB buffer, which writes a large batch (a thousand extensions
// are about 80 KB) in twenty system calls, each of which, on loopback,
// also runs the server's side of the delivery. Its replies are read off
// the socket too (reader.go).
type Socketed interface {
	redis.Conn
	Socket() net.Conn
}

// maxBuffered is how many encoded bytes a batch keeps before it writes
// them, so that a huge batch does not hold all its bytes at once.
const maxBuffered = 512 << 10

// writer encodes commands in RESP, as redigo's Send does, into one buffer
// that is written to the socket at once.
type writer struct {
	sock io.Writer
	buf  []byte
}

// socketIO returns the writer and reader of a connection whose socket
// can be used directly, else nils.
func socketIO(rc redis.Conn, stall time.Duration) (*writer, *reader) {
	if s, ok := rc.(Socketed); ok {
		return &writer{sock: s.Socket()}, newReader(s.Socket(), stall)
	}
	return nil, nil
}

// command appends one command.
func (w *writer) command(name string, args []any) {
	w.buf = append(w.buf, '*')
	w.buf = strconv.AppendInt(w.buf, int64(1+len(args)), 10)
	w.buf = append(w.buf, '\r', '\n')
	w.bulk(name)
	for _, a := range args {
		w.arg(a, true)
	}
}

// arg appends one argument in redigo's forms: strings and byte slices as
// they are, numbers and bools in decimal, nil as empty, a redis.Argument
// by its RedisArg, anything else as fmt prints it.
func (w *writer) arg(a any, argumentOK bool) {
	var num [32]byte
	switch a := a.(type) {
	case string:
		w.bulk(a)
	case []byte:
		w.bulkBytes(a)
	case int:
		w.bulkBytes(strconv.AppendInt(num[:0], int64(a), 10))
	case int64:
		w.bulkBytes(strconv.AppendInt(num[:0], a, 10))
	case float64:
		w.bulkBytes(strconv.AppendFloat(num[:0], a, 'g', -1, 64))
	case bool:
		if a {
			w.bulk("1")
		} else {
			w.bulk("0")
		}
	case nil:
		w.bulk("")
	case redis.Argument:
		if argumentOK {
			w.arg(a.RedisArg(), false)
			return
		}
		w.bulkBytes(fmt.Append(nil, a))
	default:
		w.bulkBytes(fmt.Append(nil, a))
	}
}

func (w *writer) bulk(s string) {
	w.header(len(s))
	w.buf = append(append(w.buf, s...), '\r', '\n')
}

func (w *writer) bulkBytes(b []byte) {
	w.header(len(b))
	w.buf = append(append(w.buf, b...), '\r', '\n')
}

func (w *writer) header(n int) {
	w.buf = append(w.buf, '$')
	w.buf = strconv.AppendInt(w.buf, int64(n), 10)
	w.buf = append(w.buf, '\r', '\n')
}

// full reports whether the buffer should be written before more is added.
func (w *writer) full() bool { return len(w.buf) >= maxBuffered }

// flush writes the buffer, if it holds anything.
func (w *writer) flush() error {
	if len(w.buf) == 0 {
		return nil
	}
	_, err := w.sock.Write(w.buf)
	w.buf = w.buf[:0]
	return err
}
