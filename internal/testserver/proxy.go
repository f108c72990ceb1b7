package testserver

import (
	"net"
	"sync"
	"testing"
)

// Proxy forwards TCP connections from a port of its own to a server, so
// that a test can fault the server as its clients see it without touching
// the server, which other tests may share: Cut makes it vanish (the
// listener and every connection closed, as when it is killed), Restore
// brings it back on the same port, Freeze makes it stop answering (as when
// it hangs: connections are still accepted, and nothing goes either way
// until Thaw). Its methods are safe for concurrent use.
type Proxy struct {
	Addr string // 127.0.0.1:port, where clients connect

	network string

	mu     sync.Mutex
	target string // where new connections go (retarget)
	ln     net.Listener
	conns  []net.Conn
	cut    chan struct{} // closed by Cut: ends the forwarding of the connections of before
	thawed chan struct{} // closed while not frozen
	onHeld func()        // see OnHeld
	wg     sync.WaitGroup
}

// StartProxy forwards connections to the server at target on network
// ("tcp" or "unix") until the test ends.
func StartProxy(t testing.TB, network, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	thawed := make(chan struct{})
	close(thawed)
	p := &Proxy{Addr: ln.Addr().String(), network: network, target: target, thawed: thawed}
	p.serve(ln)
	t.Cleanup(func() { p.Thaw(); p.Cut(); p.wg.Wait() })
	return p
}

func (p *Proxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	cut := make(chan struct{})
	p.cut = cut
	p.mu.Unlock()
	p.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			target := p.target
			p.mu.Unlock()
			if target == "" { // nothing to forward to: as if refused
				c.Close()
				continue
			}
			up, err := net.Dial(p.network, target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			p.wg.Go(func() { p.forward(up, c, cut); up.Close() })
			p.wg.Go(func() { p.forward(c, up, cut); c.Close() })
		}
	})
}

// forward copies from src to dst, holding what it read while the proxy is
// frozen, until either side fails or the proxy is cut.
func (p *Proxy) forward(dst, src net.Conn, cut chan struct{}) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			thawed, onHeld := p.thawed, p.onHeld
			p.mu.Unlock()
			select {
			case <-thawed:
			default:
				if onHeld != nil {
					onHeld()
				}
				select {
				case <-thawed:
				case <-cut:
					return
				}
			}
			if _, err := dst.Write(buf[:n]); err != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// retarget sends the connections accepted from now on to target (on the
// same network), or closes them at once if target is ""; those made
// before keep theirs.
func (p *Proxy) retarget(target string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.target = target
}

// Cut closes the listener and every connection: clients see the server
// go away, and new connections are refused.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln == nil {
		return
	}
	p.ln.Close()
	p.ln = nil
	close(p.cut)
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// Restore listens again on Addr after Cut.
func (p *Proxy) Restore(t testing.TB) {
	t.Helper()
	ln, err := net.Listen("tcp", p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	p.serve(ln)
}

// OnHeld makes the proxy call f each time, frozen, it holds what a side
// sent (a request waiting for the frozen server, say), in the goroutine
// that holds it, before it waits for Thaw: a test learns that a call is
// waiting on the server from the event, not from a guess of how long it
// takes to get there. nil calls nothing.
func (p *Proxy) OnHeld(f func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.onHeld = f
}

// Freeze stops forwarding, both ways, until Thaw.
func (p *Proxy) Freeze() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.thawed:
		p.thawed = make(chan struct{})
	default: // frozen already
	}
}

// Thaw forwards again what Freeze held, and everything after.
func (p *Proxy) Thaw() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.thawed:
	default:
		close(p.thawed)
	}
}
