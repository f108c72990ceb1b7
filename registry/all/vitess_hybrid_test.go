package all_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/pushpull/pushpull/hybrid"
	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/internal/vtstats"
	"github.com/pushpull/pushpull/push"
	"github.com/pushpull/pushpull/timeline"
	"github.com/pushpull/pushpull/timeline/timelinetest"
)

// TestHybridVitessCalls counts, with vtgate's counters, the shards and
// tablet calls of hybrid@vitess's pages and posts: a page of a reader who
// follows no listed author is one call to the reader's shard (the
// mailbox and pull_follows in one statement), as push@vitess's is; with a
// listed followee it is one call more, to that author's shard alone, and
// shows the pulled posts merged with the mailbox's; a post of a listed
// author touches the author's shard and the sequence alone.
func TestHybridVitessCalls(t *testing.T) {
	ctx := context.Background()
	keyspace := testserver.Keyspace(t)
	status := testserver.VtgateStatus(t)
	const threshold = 3
	s, err := hybrid.OpenVitess(ctx, hybrid.Config{
		Config:    push.Config{DSN: testserver.Vtgate(t), Database: keyspace, VtgateStatus: status},
		Threshold: threshold,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	mem := timeline.NewMemory()
	both := func(do func(timeline.Store)) { do(s); do(mem) }
	// Readers 1 and 2 follow 16 ordinary authors (a follower or two
	// each); 1 and 40, 41 follow the celebrity 30, who is listed by
	// their post.
	var ordinary []timeline.UserID
	for a := timeline.UserID(2); a <= 17; a++ {
		ordinary = append(ordinary, a)
		both(func(st timeline.Store) { timelinetest.Follow(t, st, 1, a) })
		if a%2 == 0 {
			both(func(st timeline.Store) { timelinetest.Follow(t, st, 18, a) })
		}
	}
	const celebrity = 30
	for _, f := range []timeline.UserID{1, 40, 41} {
		both(func(st timeline.Store) { timelinetest.Follow(t, st, f, celebrity) })
	}
	snap := func() vtstats.Snapshot {
		t.Helper()
		sn, err := vtstats.Read(ctx, status)
		if err != nil {
			t.Fatal(err)
		}
		return sn
	}
	post := func(author timeline.UserID, body string) vtstats.Snapshot {
		t.Helper()
		before := snap()
		timelinetest.Post(t, s, author, body)
		d := snap().Sub(before)
		timelinetest.Post(t, mem, author, body) // ids differ: pages are compared by body
		return d
	}
	for i, a := range ordinary {
		post(a, fmt.Sprintf("ordinary %d", i))
	}
	post(celebrity, "celebrity 0") // lists the author: pull_follows on the followers' shards
	for i := 1; i < 3; i++ {
		d := post(celebrity, fmt.Sprintf("celebrity %d", i))
		if touched := d.Touched(keyspace); len(touched) != 1 {
			t.Errorf("celebrity post %d touched shards %v; want its author's alone", i, touched)
		}
		if cross := d.CrossShard(); cross != 0 {
			t.Errorf("celebrity post %d: %d cross-shard transactions", i, cross)
		}
	}
	page := func(reader timeline.UserID, q timeline.Query) (timeline.Page, vtstats.Counts, []string) {
		t.Helper()
		before := snap()
		p, err := s.Timeline(ctx, reader, q)
		if err != nil {
			t.Fatal(err)
		}
		d := snap().Sub(before)
		return p, d.Keyspace(keyspace), d.Touched(keyspace)
	}
	bodies := func(ms []timeline.Message) []string {
		var out []string
		for _, m := range ms {
			out = append(out, m.Body)
		}
		return out
	}
	memPage := func(reader timeline.UserID, limit int, before timeline.Message) []timeline.Message {
		t.Helper()
		var all []timeline.Message
		for _, m := range timelinetest.Walk(t, mem, reader, 50) {
			if before.Body == "" || m.ID < memID(t, mem, reader, before.Body) {
				all = append(all, m)
			}
		}
		return all[:min(limit, len(all))]
	}
	// Reader 18 follows no listed author: one call, one shard.
	p, c, touched := page(18, timeline.Query{Limit: 5})
	if c.Calls != 1 || len(touched) != 1 {
		t.Errorf("a page of a reader who follows no listed author: %d calls to shards %v; want 1 to one", c.Calls, touched)
	}
	if got, want := bodies(p.Messages), bodies(memPage(18, 5, timeline.Message{})); !slices.Equal(got, want) {
		t.Errorf("reader 18's page %v, want %v", got, want)
	}
	// Reader 1 follows the celebrity: the mailbox's shard and the
	// celebrity's, two calls; newest and older pages hold the pulled
	// posts where they belong.
	var last timeline.Message
	q := timeline.Query{Limit: 5}
	for n := 0; ; n++ {
		p, c, _ := page(1, q)
		if c.Calls != 2 {
			t.Errorf("reader 1's page %d: %d calls; want 2 (the mailbox's shard, then the celebrity's)", n, c.Calls)
		}
		if got, want := bodies(p.Messages), bodies(memPage(1, 5, last)); !slices.Equal(got, want) {
			t.Fatalf("reader 1's page %d: %v, want %v", n, got, want)
		}
		if p.Next == "" {
			break
		}
		last, q = p.Messages[len(p.Messages)-1], timeline.Query{Limit: 5, Before: p.Next}
	}
	// Reader 40 has nothing in the mailbox: every page is pulled.
	p, _, _ = page(40, timeline.Query{Limit: 2})
	if got, want := bodies(p.Messages), []string{"celebrity 2", "celebrity 1"}; !slices.Equal(got, want) {
		t.Errorf("reader 40's page %v, want %v", got, want)
	}
}

// memID returns the id of the message with body on reader's timeline in
// mem.
func memID(t *testing.T, mem timeline.Store, reader timeline.UserID, body string) timeline.MessageID {
	t.Helper()
	for _, m := range timelinetest.Walk(t, mem, reader, 50) {
		if m.Body == body {
			return m.ID
		}
	}
	t.Fatalf("no message %q on %d's timeline", body, reader)
	return 0
}
