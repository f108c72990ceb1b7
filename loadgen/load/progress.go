package load

import (
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pushpull/pushpull/loadgen/dataset"
)

// progress shows the tables being loaded: on a terminal one line redrawn
// twice a second with every active table's rows, rate and ETA; elsewhere
// only a line per finished table.
type progress struct {
	w     io.Writer
	tty   bool
	mu    sync.Mutex
	live  []*tracked
	stop  chan struct{}
	ended chan struct{}
}

type tracked struct {
	what  string
	total int64
	n     *atomic.Int64
	start time.Time
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func newProgress(w io.Writer) *progress {
	p := &progress{w: w, tty: w != nil && isTerminal(w), stop: make(chan struct{}), ended: make(chan struct{})}
	if !p.tty {
		close(p.ended)
		return p
	}
	go func() {
		defer close(p.ended)
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-t.C:
				p.mu.Lock()
				p.redraw()
				p.mu.Unlock()
			}
		}
	}()
	return p
}

func (p *progress) redraw() {
	line := "\r\033[K  loading"
	for _, t := range p.live {
		done := t.n.Load()
		rate := float64(done) / time.Since(t.start).Seconds()
		eta := "?"
		if rate > 0 {
			eta = time.Duration(float64(t.total-done) / rate * float64(time.Second)).Round(time.Second).String()
		}
		line += fmt.Sprintf("  %s %3.0f%% %.2fM rows/s ETA %s", t.what, 100*float64(done)/float64(max(t.total, 1)), rate/1e6, eta)
	}
	fmt.Fprint(p.w, line)
}

func (p *progress) add(what string, total int64, n *atomic.Int64) *tracked {
	t := &tracked{what: what, total: total, n: n, start: time.Now()}
	p.mu.Lock()
	p.live = append(p.live, t)
	p.mu.Unlock()
	return t
}

func (p *progress) done(t *tracked, secs float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, x := range p.live {
		if x == t {
			p.live = append(p.live[:i], p.live[i+1:]...)
			break
		}
	}
	if p.w == nil {
		return
	}
	if p.tty {
		fmt.Fprint(p.w, "\r\033[K")
	}
	done := t.n.Load()
	fmt.Fprintf(p.w, "  loaded  %-16s %12s rows in %6.1fs  (%.2fM rows/s)\n", t.what, dataset.Commas(done), secs, float64(done)/secs/1e6)
}

// note prints a line of its own, between redraws of the live line.
func (p *progress) note(format string, args ...any) {
	if p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty {
		fmt.Fprint(p.w, "\r\033[K")
	}
	fmt.Fprintf(p.w, format+"\n", args...)
}

func (p *progress) close() {
	select {
	case <-p.stop:
	default:
		close(p.stop)
	}
	<-p.ended
}
