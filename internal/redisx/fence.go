package redisx

import (
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Fence keeps state derived from a database in Redis trustworthy when
// Redis calls fail. State is written after the database, by Lua scripts
// made with FencedScript; a script run whose outcome is unknown (a frozen
// server applies on its return what it had received, or not) may have
// left the state behind the database, so the caller owes a fence: it
// replaces the epoch, a random token under one key that every fenced
// script checks and whose value names the valid state (the scripts put
// it in a sentinel member of each key they keep), which makes all state
// written under the old epoch unreadable for every process at once. A
// write is acknowledged only once its Redis part succeeded or the fence
// is paid; meanwhile the process reads elsewhere (Owed), and a goroutine
// pays the fence as soon as Redis answers. A write the server refused
// needs no fence: no server was running, and the next one starts empty.
type Fence struct {
	rc    *Client
	key   string
	epoch atomic.Pointer[string]
	owed  atomic.Bool
	paid  atomic.Int64
	stop  chan struct{}
	wg    sync.WaitGroup
	once  sync.Once
}

// NewFence returns the fence whose epoch lives under key, adopting the
// epoch Redis holds or making one, and starts its goroutine; Close stops
// it.
func NewFence(ctx context.Context, rc *Client, key string) (*Fence, error) {
	f := &Fence{rc: rc, key: key, stop: make(chan struct{})}
	if err := f.learn(ctx, ""); err != nil {
		return nil, err
	}
	f.wg.Go(f.payLoop)
	return f, nil
}

// Key is the epoch's key: every fenced script's KEYS[1].
func (f *Fence) Key() string { return f.key }

// Owed reports whether a fence is owed: the state may lack a write.
func (f *Fence) Owed() bool { return f.owed.Load() }

// Paid returns how many fences were paid.
func (f *Fence) Paid() int64 { return f.paid.Load() }

// Close stops the goroutine.
func (f *Fence) Close() {
	f.once.Do(func() {
		close(f.stop)
		f.wg.Wait()
	})
}

// BuildToken returns a random positive integer below 2^50, which Redis
// keeps exactly as a score: a token for a rebuild to recognise its own
// sentinel by.
func BuildToken() int64 {
	var b [8]byte
	crand.Read(b[:])
	return int64(binary.LittleEndian.Uint64(b[:])>>14) | 1
}

// token returns a fresh epoch.
func token() string {
	var b [8]byte
	crand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// learn adopts seen, the epoch a script reported, or when it is "" (Redis
// has none, or it is not known) the one Redis holds, making one if there
// is none.
func (f *Fence) learn(ctx context.Context, seen string) error {
	if seen != "" {
		f.epoch.Store(&seen)
		return nil
	}
	fresh := token()
	cur, err := f.rc.Do(ctx, func(b Builder) Completed {
		return b.Set().Key(f.key).Value(fresh).Nx().Get().Build()
	}).ToString()
	switch {
	case IsNil(err):
		cur = fresh // set by this call
	case err != nil:
		return err
	}
	f.epoch.Store(&cur)
	return nil
}

// Run runs script, made with FencedScript, once per call under the
// current epoch (it fills in each call's Keys[0] and Args[0]), adopting a
// new epoch and running again when the script reports that it changed.
// read says the script only reads (see Client.RunAll).
func (f *Fence) Run(ctx context.Context, read bool, script *Script, calls []Call) ([]Result, error) {
	for range 3 {
		ep := *f.epoch.Load()
		for i := range calls {
			calls[i].Keys[0], calls[i].Args[0] = f.key, ep
		}
		res := f.rc.RunAll(ctx, read, script, calls)
		changed, seen := false, ""
		for _, r := range res {
			if rest, ok := ErrorPrefix(r.Error(), "EPOCH"); ok {
				changed, seen = true, rest
			}
		}
		if !changed {
			for _, r := range res {
				if err := r.Error(); err != nil {
					return res, err
				}
			}
			return res, nil
		}
		if err := f.learn(ctx, seen); err != nil {
			return nil, err
		}
	}
	return nil, errors.New("redis epoch keeps changing")
}

// Mutate runs script as the Redis part of a database write that is done:
// it runs to the client's own deadlines even if ctx is canceled. If it
// fails in a way that may have left the state behind, a fence is owed,
// and paid at once if Redis answers. The error is not nil only when the
// state may be behind and the fence could not be paid.
func (f *Fence) Mutate(ctx context.Context, script *Script, calls []Call) ([]Result, error) {
	ctx = context.WithoutCancel(ctx)
	res, err := f.Run(ctx, false, script, calls)
	if err == nil || NotApplied(err) {
		return res, nil // applied, or no server holds state to fix
	}
	return nil, f.Owe(ctx, err)
}

// dropScript deletes the keys after the fence's (Drop).
var dropScript = FencedScript("", `
for i = 2, #KEYS do redis.call('DEL', KEYS[i]) end
return 1
`)

// Drop deletes keys under the fence, at most size in a call, as the Redis
// part of a write that is done (Mutate): the repair of a write whose
// outcome is unknown, whose state each key held is then rebuilt from the
// record on its next read. When Redis does not answer, the fence is owed
// instead, as Mutate owes it.
func (f *Fence) Drop(ctx context.Context, keys []string, size int) error {
	var calls []Call
	for part := range slices.Chunk(keys, size) {
		calls = append(calls, Call{Keys: append([]string{""}, part...), Args: []string{""}})
	}
	if len(calls) == 0 {
		return nil
	}
	_, err := f.Mutate(ctx, dropScript, calls)
	return err
}

// Owe records that the state may lack a write (cause says why), and pays
// the fence at once if it can; it returns an error matching ErrFenceOwed
// when it cannot.
func (f *Fence) Owe(ctx context.Context, cause error) error {
	f.owed.Store(true)
	if err := f.pay(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("%w (%v): %w", ErrFenceOwed, cause, err)
	}
	return nil
}

// ErrFenceOwed means a write's Redis part may not have been applied and
// the fence that would make up for it could not be paid yet.
var ErrFenceOwed = errors.New("redis state may lack a write, and its fence is not paid")

// pay replaces the epoch if a fence is owed.
func (f *Fence) pay(ctx context.Context) error {
	if !f.owed.Load() {
		return nil
	}
	fresh := token()
	var err error
	// A connection the server closed (it died) fails the first calls
	// on it; a fresh one tells a dead server (refused) from a live one.
	for range 1 + pipelines {
		err = f.rc.Do(ctx, func(b Builder) Completed {
			return b.Set().Key(f.key).Value(fresh).Build()
		}).Error()
		if !broken(err) {
			break
		}
	}
	if err != nil && !NotApplied(err) {
		return err
	}
	if err == nil {
		f.epoch.Store(&fresh)
	}
	// Refused: no server is running, and the next one starts empty.
	f.owed.Store(false)
	f.paid.Add(1)
	return nil
}

// payLoop pays an owed fence as soon as Redis answers, until Close.
func (f *Fence) payLoop() {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-f.stop:
			return
		case <-tick.C:
			if f.owed.Load() {
				f.pay(context.Background())
			}
		}
	}
}

// fencedCheck follows a fenced script's helpers: a script run under
// another epoch fails with "EPOCH <the current one>" before it touches
// anything.
const fencedCheck = `
local cur = redis.call('GET', KEYS[1])
if cur ~= ARGV[1] then
	return redis.error_reply('EPOCH ' .. (cur or ''))
end
`

// FencedScript returns the script of src run under a Fence: KEYS[1] is
// the epoch's key and ARGV[1] the epoch (Fence.Run fills both in), and S
// names the sentinel member of the current epoch. helpers (Lua function
// definitions, which may use S) go before the check.
func FencedScript(helpers, src string) *Script {
	return NewScript("local S = 'e' .. ARGV[1]\n" + helpers + fencedCheck + src)
}

// Set is a sorted set kept under a Fence, as ReadSets reads it.
type Set struct {
	// Valid: the set holds the sentinel of the current epoch, whose
	// score is Sentinel.
	Valid    bool
	Sentinel float64
	// Members are the other members and their scores.
	Members map[string]float64
}

// ReadSets reads the epoch under epochKey and then the sorted sets keys,
// whole, one call each: what a checker compares with the record. A set
// without the current epoch's sentinel ("e" and the epoch, as
// FencedScript's scripts name it) is not Valid; with no epoch, none is.
func ReadSets(ctx context.Context, c *Client, epochKey string, keys []string) ([]Set, int64, error) {
	epoch, err := c.Do(ctx, func(b Builder) Completed { return b.Get().Key(epochKey).Build() }).ToString()
	if IsNil(err) {
		return make([]Set, len(keys)), 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("read the epoch from Redis %s: %w", c.Addr(), err)
	}
	sentinel := "e" + epoch
	out := make([]Set, len(keys))
	var entries int64
	for i, key := range keys {
		zs, err := c.Do(ctx, func(b Builder) Completed {
			return b.Zrange().Key(key).Min("0").Max("-1").Withscores().Build()
		}).AsZScores()
		if err != nil {
			return nil, entries, fmt.Errorf("read %s from Redis %s: %w", key, c.Addr(), err)
		}
		entries += int64(len(zs))
		set := Set{Members: make(map[string]float64, len(zs))}
		for _, z := range zs {
			if z.Member == sentinel {
				set.Valid, set.Sentinel = true, z.Score
			} else {
				set.Members[z.Member] = z.Score
			}
		}
		out[i] = set
	}
	return out, entries, nil
}

// List is a list kept under a Fence, as ReadLists reads it. Such a list
// ends in its sentinel: "e" and the epoch (as FencedScript's scripts name
// it), a colon and a number (its state, such as a floor, or minus a
// rebuild's token).
type List struct {
	// Valid: the list ends in a sentinel of the current epoch, whose
	// number is Sentinel.
	Valid    bool
	Sentinel int64
	// Items are the other elements, in order.
	Items []string
}

// ReadLists reads the epoch under epochKey and then the lists keys,
// whole, one call each: what a checker compares with the record. A list
// whose last element is not a sentinel of the current epoch is not Valid, and its Items are all its elements; with
// no epoch, none is read.
func ReadLists(ctx context.Context, c *Client, epochKey string, keys []string) ([]List, int64, error) {
	epoch, err := c.Do(ctx, func(b Builder) Completed { return b.Get().Key(epochKey).Build() }).ToString()
	if IsNil(err) {
		return make([]List, len(keys)), 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("read the epoch from Redis %s: %w", c.Addr(), err)
	}
	prefix := "e" + epoch + ":"
	out := make([]List, len(keys))
	var entries int64
	for i, key := range keys {
		items, err := c.Do(ctx, func(b Builder) Completed {
			return b.Lrange().Key(key).Start(0).Stop(-1).Build()
		}).AsStrSlice()
		if err != nil {
			return nil, entries, fmt.Errorf("read %s from Redis %s: %w", key, c.Addr(), err)
		}
		entries += int64(len(items))
		out[i].Items = items
		if len(items) == 0 {
			continue
		}
		if rest, ok := strings.CutPrefix(items[len(items)-1], prefix); ok {
			if n, err := strconv.ParseInt(rest, 10, 64); err == nil {
				out[i] = List{Valid: true, Sentinel: n, Items: items[:len(items)-1]}
			}
		}
	}
	return out, entries, nil
}
