package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"time"
)

// The Client speaks HTTP/1.1 itself, on keep-alive connections it keeps
// one per concurrent call, rather than through net/http's transport,
// which hands every request to a writing and a reading goroutine of the
// connection: a load generator's client, lean, so that what a benchmark
// through it measures is the server. It needs what this package's server
// sends: a Content-Length on every answer.

// conn is one keep-alive connection.
type conn struct {
	nc  net.Conn
	r   *bufio.Reader
	req []byte // the request being written
}

// answer is one response: its status code, the Link header, the body.
type answer struct {
	code int
	link string
	body *bytes.Buffer // from bodies
}

// errNoLength is an answer this client cannot read.
var errNoLength = errors.New("httpapi: an answer without Content-Length")

// pool keeps a client's idle connections.
type pool struct {
	addr string
	mu   sync.Mutex
	idle []*conn
	dial net.Dialer
}

func (p *pool) get(ctx context.Context) (*conn, error) {
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		c := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		return c, nil
	}
	p.mu.Unlock()
	nc, err := p.dial.DialContext(ctx, "tcp", p.addr)
	if err != nil {
		return nil, err
	}
	return &conn{nc: nc, r: bufio.NewReaderSize(nc, 32<<10)}, nil
}

func (p *pool) put(c *conn) {
	p.mu.Lock()
	p.idle = append(p.idle, c)
	p.mu.Unlock()
}

// close closes the idle connections.
func (p *pool) close() {
	p.mu.Lock()
	idle := p.idle
	p.idle = nil
	p.mu.Unlock()
	for _, c := range idle {
		c.nc.Close()
	}
}

// roundTrip sends one request on a connection of the pool and reads the
// answer whole. A connection that fails, or that the server closes, is
// dropped; ctx's deadline and cancellation bound the exchange.
func (p *pool) roundTrip(ctx context.Context, method, target, token, contentType string, body []byte) (answer, error) {
	c, err := p.get(ctx)
	if err != nil {
		return answer{}, err
	}
	if d, ok := ctx.Deadline(); ok {
		c.nc.SetDeadline(d)
	} else {
		c.nc.SetDeadline(time.Time{})
	}
	stop := context.AfterFunc(ctx, func() { c.nc.SetDeadline(time.Unix(1, 0)) })
	a, keep, err := c.exchange(p.addr, method, target, token, contentType, body)
	if !stop() || err != nil || !keep {
		c.nc.Close()
		if err == nil && ctx.Err() != nil {
			err = ctx.Err()
		}
	} else {
		p.put(c)
	}
	if err != nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	return a, err
}

// exchange writes the request and reads the answer; keep says whether
// the connection may serve another.
func (c *conn) exchange(host, method, target, token, contentType string, body []byte) (a answer, keep bool, err error) {
	b := append(c.req[:0], method...)
	b = append(b, ' ')
	b = append(b, target...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, host...)
	if token != "" {
		b = append(b, "\r\nAuthorization: Bearer "...)
		b = append(b, token...)
	}
	if body != nil {
		b = append(b, "\r\nContent-Type: "...)
		b = append(b, contentType...)
		b = append(b, "\r\nContent-Length: "...)
		b = strconv.AppendInt(b, int64(len(body)), 10)
	}
	b = append(b, "\r\n\r\n"...)
	b = append(b, body...)
	c.req = b
	if _, err := c.nc.Write(b); err != nil {
		return a, false, err
	}
	line, err := c.line()
	if err != nil {
		return a, false, err
	}
	// HTTP/1.1 200 OK
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) {
		return a, false, fmt.Errorf("httpapi: a malformed status line %q", line)
	}
	if a.code, err = strconv.Atoi(string(line[9:12])); err != nil {
		return a, false, fmt.Errorf("httpapi: a malformed status line %q", line)
	}
	length, keep := -1, true
	for {
		line, err := c.line()
		if err != nil {
			return a, false, err
		}
		if len(line) == 0 {
			break
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		value = bytes.TrimSpace(value)
		switch {
		case asciiEqualFold(name, "Content-Length"):
			if length, err = strconv.Atoi(string(value)); err != nil || length < 0 {
				return a, false, fmt.Errorf("httpapi: Content-Length %q", value)
			}
		case asciiEqualFold(name, "Link"):
			a.link = string(value)
		case asciiEqualFold(name, "Connection"):
			keep = !asciiEqualFold(value, "close")
		case asciiEqualFold(name, "Transfer-Encoding"):
			return a, false, errNoLength
		}
	}
	if length < 0 {
		return a, false, errNoLength
	}
	a.body = bodies.Get().(*bytes.Buffer)
	a.body.Reset()
	a.body.Grow(length)
	if _, err := io.CopyN(a.body, c.r, int64(length)); err != nil {
		bodies.Put(a.body)
		a.body = nil
		return a, false, err
	}
	return a, keep, nil
}

// line reads one header line without its CRLF.
func (c *conn) line() ([]byte, error) {
	line, err := c.r.ReadSlice('\n')
	if err != nil {
		if errors.Is(err, bufio.ErrBufferFull) {
			return nil, errors.New("httpapi: a header line too long")
		}
		return nil, err
	}
	return bytes.TrimRight(line, "\r\n"), nil
}

// asciiEqualFold reports whether b is s, in any case.
func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range len(b) {
		x, y := b[i], s[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
