package loadgen

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pushpull/pushpull/hybrid/selective"
	"github.com/pushpull/pushpull/internal/cost"
	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/loadgen/dataset"
	"github.com/pushpull/pushpull/push"
	"github.com/pushpull/pushpull/registry"
)

// TestPhaseCountsNoOtherDesignsBackgroundWork: a design measured after
// selective counts none of the work of selective's flusher. The run holds
// a lock on selective's user_rates from the announcement of selective's
// submission to that of push's, so that the flushes selective's posts
// made due are all still to do when its phase ends. Push's posts and
// pages update and delete no row: one that push's phases count is
// selective's (its rates' upserts, its flips' removals).
func TestPhaseCountsNoOtherDesignsBackgroundWork(t *testing.T) {
	ctx := context.Background()
	spec, err := dataset.PaperSpec().Scaled(0.002)
	if err != nil {
		t.Fatal(err)
	}
	admin := testserver.Admin(t)
	defer admin.Close()
	lock := &rateLock{db: admin, table: selective.DefaultDatabase + ".user_rates"}
	defer lock.release()
	selectiveSubmit := "phase " + string(registry.FamilyHybrid) + "/submit "
	progress := &lineHook{on: func(line string) {
		switch {
		case strings.HasPrefix(line, selectiveSubmit):
			lock.take(t)
		case strings.HasPrefix(line, "phase "+push.ModelName+"/submit "):
			lock.release()
		}
	}}
	cfg := BenchConfig{
		DSN: testserver.DSN(t), Force: true, Spec: spec, Scale: 0.002,
		Models:   []string{selective.ModelName, push.ModelName},
		Duration: time.Second, ExtraDuration: time.Second, Progress: progress,
		// A flush is due after a few posts, so that selective's
		// submission leaves several due when it ends.
		Options: map[string]string{selective.OptionFlushEvery: "20"},
	}
	res, err := RunBench(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !lock.taken() {
		t.Fatal("the lock on selective's rates was never taken: no submission of selective's announced")
	}
	for _, f := range res.Failures {
		if !strings.Contains(f, "harness") {
			t.Fatalf("failure: %s", f)
		}
	}
	if s := res.Model(selective.ModelName); s == nil || s.Submit.Ops == 0 {
		t.Fatalf("selective posted nothing: %+v", s)
	}
	p := res.Model(push.ModelName)
	if p == nil {
		t.Fatal("no push in the result")
	}
	for _, ph := range []struct {
		name string
		c    cost.Cost
	}{{"newest pages", p.Retrieve.Cost}, {"posts", p.Submit.Cost}} {
		c := ph.c
		if c == nil {
			t.Fatalf("push's %s have no cost", ph.name)
		}
		t.Logf("push's %s after selective's: %.0f ops, rows updated %.4f, deleted %.4f, written %.4f an operation",
			ph.name, c[cost.Ops], c[cost.RowsUpdated], c[cost.RowsDeleted], c[cost.RowsWritten])
		if c[cost.RowsUpdated] != 0 || c[cost.RowsDeleted] != 0 {
			t.Errorf("push's %s updated %.4f and deleted %.4f rows an operation: selective's background work, counted in push's phase",
				ph.name, c[cost.RowsUpdated], c[cost.RowsDeleted])
		}
	}
}

// rateLock holds every row and gap of a table locked in a transaction of
// its own, from take to release.
type rateLock struct {
	db    *sql.DB
	table string
	mu    sync.Mutex
	tx    *sql.Tx
	held  bool
}

func (l *rateLock) take(t *testing.T) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held {
		return
	}
	tx, err := l.db.Begin()
	if err != nil {
		t.Error(err)
		return
	}
	rows, err := tx.Query("SELECT user_id FROM " + l.table + " FOR UPDATE")
	if err == nil {
		for rows.Next() {
		}
		err = errors.Join(rows.Err(), rows.Close())
	}
	if err != nil {
		tx.Rollback()
		t.Error(err)
		return
	}
	l.tx, l.held = tx, true
}

func (l *rateLock) release() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.tx != nil {
		l.tx.Rollback()
		l.tx = nil
	}
}

func (l *rateLock) taken() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.held
}

// lineHook is a progress writer that calls on with each whole line, in
// the writer's goroutine, as it is written.
type lineHook struct {
	mu      sync.Mutex
	partial bytes.Buffer
	on      func(line string)
}

func (h *lineHook) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.partial.Write(p)
	for {
		line, err := h.partial.ReadString('\n')
		if err != nil {
			h.partial.WriteString(line) // not whole yet
			return len(p), nil
		}
		h.on(strings.TrimSuffix(line, "\n"))
	}
}
