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
	encoder
}

// encoder appends commands to buf in RESP.
type encoder struct{ buf []byte }

// AppendCommand appends the command in RESP, as the Conn writes it, to dst:
// for a command written to several connections (a round's, to every
// node), encoded once (Encoded).
func AppendCommand(dst []byte, name string, args []any) []byte {
	e := encoder{buf: dst}
	e.command(name, args)
	return e.buf
}

// Encoded is a Call that may bring its command already in RESP
// (AppendCommand): a Conn that writes to its socket copies those bytes
// rather than encoding the arguments. Wire returns nil when it has none;
// else bytes that Command's name and arguments encode to.
type Encoded interface {
	Call
	Wire() []byte
}

// encode appends call's command: its wire form, when it has one.
func (w *writer) encode(call Call, name string, args []any) {
	if e, ok := call.(Encoded); ok {
		if wire := e.Wire(); wire != nil {
			w.buf = append(w.buf, wire...)
			return
		}
	}
	w.command(name, args)
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
func (e *encoder) command(name string, args []any) {
	e.buf = append(e.buf, '*')
	e.buf = strconv.AppendInt(e.buf, int64(1+len(args)), 10)
	e.buf = append(e.buf, '\r', '\n')
	e.bulk(name)
	for _, a := range args {
		e.arg(a, true)
	}
}

// arg appends one argument in redigo's forms: strings and byte slices as
// they are, numbers and bools in decimal, nil as empty, a redis.Argument
// by its RedisArg, anything else as fmt prints it.
func (e *encoder) arg(a any, argumentOK bool) {
	var num [32]byte
	switch a := a.(type) {
	case string:
		e.bulk(a)
	case []byte:
		e.bulkBytes(a)
	case int:
		e.bulkBytes(strconv.AppendInt(num[:0], int64(a), 10))
	case int64:
		e.bulkBytes(strconv.AppendInt(num[:0], a, 10))
	case float64:
		e.bulkBytes(strconv.AppendFloat(num[:0], a, 'g', -1, 64))
	case bool:
		if a {
			e.bulk("1")
		} else {
			e.bulk("0")
		}
	case nil:
		e.bulk("")
	case redis.Argument:
		if argumentOK {
			e.arg(a.RedisArg(), false)
			return
		}
		e.bulkBytes(fmt.Append(nil, a))
	default:
		e.bulkBytes(fmt.Append(nil, a))
	}
}

func (e *encoder) bulk(s string) {
	e.header(len(s))
	e.buf = append(append(e.buf, s...), '\r', '\n')
}

func (e *encoder) bulkBytes(b []byte) {
	e.header(len(b))
	e.buf = append(append(e.buf, b...), '\r', '\n')
}

func (e *encoder) header(n int) {
	e.buf = append(e.buf, '$')
	e.buf = strconv.AppendInt(e.buf, int64(n), 10)
	e.buf = append(e.buf, '\r', '\n')
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
