package pipeline

import (
	"errors"
	"io"
	"math"
	"net"
	"reflect"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
)

// chunkSocket serves its bytes a few at a time, as a socket may, and
// counts the deadlines set on it.
type chunkSocket struct {
	data      []byte
	chunk     int
	deadlines int
}

func (s *chunkSocket) Read(p []byte) (int, error) {
	if len(s.data) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), s.chunk)], s.data)
	s.data = s.data[n:]
	return n, nil
}

func (s *chunkSocket) SetReadDeadline(time.Time) error { s.deadlines++; return nil }

// netSocket is a chunkSocket as a net.Conn, for redigo's reader.
type netSocket struct {
	net.Conn // nil: redigo's reader uses only the methods below
	*chunkSocket
}

func (s netSocket) Read(p []byte) (int, error)        { return s.chunkSocket.Read(p) }
func (s netSocket) SetReadDeadline(t time.Time) error { return s.chunkSocket.SetReadDeadline(t) }
func (netSocket) Close() error                        { return nil }

// longNumber matches a length that redigo would allocate for at once (the
// reader grows into it as the bytes come), and an integer that redigo
// would read past an int64's range (the reader refuses it): the two are
// compared on the others.
var longNumber = regexp.MustCompile(`[$*][0-9]{6}|:-?[0-9]{19}`)

// FuzzReaderAgreesWithRedigo: on any bytes, read a few at a time, the
// reader gives the replies redigo's reader gives, and fails where it
// fails.
func FuzzReaderAgreesWithRedigo(f *testing.F) {
	for _, seed := range []string{
		"+OK\r\n+PONG\r\n+string\r\n",
		"-ERR unknown command\r\n:42\r\n:-7\r\n",
		"$5\r\nhello\r\n$0\r\n\r\n$-1\r\n",
		"*2\r\n$10\r\n1733245678\r\n$6\r\n123456\r\n",
		"*3\r\n:1\r\n*2\r\n$1\r\na\r\n*0\r\n$-1\r\n*-1\r\n",
		"*2\r\n:1\r\n-INNER fails\r\n",
		"$3\r\nabcd\r\n", "+OK\n", "\r\n", ":x\r\n", "$-2\r\n", "*1\r\n", "$4\r\nab",
	} {
		f.Add([]byte(seed), uint8(1))
		f.Add([]byte(seed), uint8(64))
	}
	f.Fuzz(func(t *testing.T, data []byte, chunk uint8) {
		if longNumber.Match(data) {
			t.Skip()
		}
		ours := newReader(&chunkSocket{data: data, chunk: int(chunk%16) + 1}, time.Second)
		theirs := redis.NewConn(netSocket{chunkSocket: &chunkSocket{data: data, chunk: 4096}}, 0, 0)
		for i := 0; ; i++ {
			v, err := ours.receive()
			want, wantErr := theirs.Receive()
			var re, wantRE redis.Error
			isRE, wantIsRE := errors.As(err, &re), errors.As(wantErr, &wantRE)
			switch {
			case isRE || wantIsRE:
				if re != wantRE || v != nil || want != nil {
					t.Fatalf("reply %d: %#v, %v; redigo %#v, %v", i, v, err, want, wantErr)
				}
			case (err == nil) != (wantErr == nil):
				t.Fatalf("reply %d: %#v, %v; redigo %#v, %v", i, v, err, want, wantErr)
			case err != nil:
				return // both found the end or a malformed reply
			case !reflect.DeepEqual(v, want):
				t.Fatalf("reply %d: %#v; redigo %#v", i, v, want)
			}
		}
	})
}

// TestReaderSetsTheDeadlineOncePerRead: a hundred replies that come in one
// read cost one deadline, not a hundred.
func TestReaderSetsTheDeadlineOncePerRead(t *testing.T) {
	var data []byte
	for i := range 100 {
		data = append(data, ":"+strconv.Itoa(i)+"\r\n"...)
	}
	s := &chunkSocket{data: data, chunk: len(data)}
	rd := newReader(s, time.Second)
	for i := range 100 {
		if v, err := rd.receive(); err != nil || v != int64(i) {
			t.Fatalf("reply %d: %v, %v", i, v, err)
		}
	}
	if s.deadlines != 1 {
		t.Fatalf("%d deadlines set for one read", s.deadlines)
	}
}

// TestParseIntRange: every int64 is read, and nothing beyond.
func TestParseIntRange(t *testing.T) {
	for _, n := range []int64{0, -1, 9, math.MaxInt64, math.MinInt64, math.MinInt64 + 1} {
		if got, err := parseInt([]byte(strconv.FormatInt(n, 10))); err != nil || got != n {
			t.Errorf("parseInt(%d) = %d, %v", n, got, err)
		}
	}
	for _, s := range []string{"9223372036854775808", "-9223372036854775809", "99999999999999999999", "", "-", "1a", "+1"} {
		if got, err := parseInt([]byte(s)); err == nil {
			t.Errorf("parseInt(%q) = %d, want an error", s, got)
		}
	}
}

// FuzzClockAgreesWithParseTime: on any bytes, the reader's TIME parse
// gives the time that ParseTime finds in redigo's reply, the same error
// reply, or, when redigo's reply is not a time, a failure.
func FuzzClockAgreesWithParseTime(f *testing.F) {
	for _, seed := range []string{
		"*2\r\n$10\r\n1733245678\r\n$6\r\n123456\r\n",
		"*2\r\n$1\r\n0\r\n$1\r\n0\r\n",
		"*2\r\n$10\r\n1733245678\r\n$7\r\n1234567\r\n",
		"-NOPERM no TIME\r\n", "*2\r\n:1\r\n:2\r\n", "*3\r\n", "$3\r\nabc\r\n", "*2\r\n$2\r\n1\r\n",
	} {
		f.Add([]byte(seed), uint8(3))
	}
	f.Fuzz(func(t *testing.T, data []byte, chunk uint8) {
		if longNumber.Match(data) {
			t.Skip()
		}
		got, err := newReader(&chunkSocket{data: data, chunk: int(chunk%16) + 1}, time.Second).clock()
		v, wantErr := redis.NewConn(netSocket{chunkSocket: &chunkSocket{data: data, chunk: 4096}}, 0, 0).Receive()
		var re, wantRE redis.Error
		if errors.As(wantErr, &wantRE) {
			if !errors.As(err, &re) || re != wantRE {
				t.Fatalf("clock() = %d, %v; redigo's error reply %v", got, err, wantErr)
			}
			return
		}
		want, parseErr := ParseTime(v)
		switch {
		case wantErr == nil && parseErr == nil && (err != nil || got != want):
			t.Fatalf("clock() = %d, %v; ParseTime %d", got, err, want)
		case (wantErr != nil || parseErr != nil) && err == nil:
			t.Fatalf("clock() = %d of a reply that is not a time: %#v, %v", got, v, wantErr)
		}
	})
}
