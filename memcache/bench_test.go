package memcache

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	gomemcache "github.com/bradfitz/gomemcache/memcache"

	"github.com/pushpull/pushpull/internal/mysqlx"
	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/pull"
	"github.com/pushpull/pushpull/pull/sqlread"
	"github.com/pushpull/pushpull/push"
	"github.com/pushpull/pushpull/timeline"
	"github.com/pushpull/pushpull/timeline/timelinetest"
)

// BenchmarkFirstPage measures one first-page read end to end on a real
// MariaDB and memcached, for a reader following 43 users (the paper's
// average) who posted 30 messages each:
//
//   - store: the wrapped store alone;
//   - cached-page-ttl: a hit of this package's Store under the ttl policy
//     (one memcached Get, decode);
//   - cached-page-invalidate: a hit under the invalidate policy (one
//     GetMulti of the generation and the page, decode);
//   - cached-ids: the alternative design, a memcached Get of the page's ids
//     followed by the query that a hit would then need for the bodies
//     (SELECT ... FROM messages WHERE id IN (...)).
func BenchmarkFirstPage(b *testing.B) {
	for _, model := range []string{"push", "pull-sp"} {
		b.Run(model, func(b *testing.B) {
			ctx := context.Background()
			inner, db := openBenchStore(b, model)
			rng := rand.New(rand.NewPCG(5, 5))
			for a := timeline.UserID(2); a <= 44; a++ {
				timelinetest.Follow(b, inner, 1, a)
			}
			bodies := benchPage(rng, 200).Messages
			for i := range 30 * 43 {
				timelinetest.Post(b, inner, timeline.UserID(2+i%43), bodies[i%len(bodies)].Body)
			}
			want := timelinetest.Newest(b, inner, 1)

			b.Run("store", func(b *testing.B) {
				for b.Loop() {
					if _, err := inner.Timeline(ctx, 1, timeline.Query{}); err != nil {
						b.Fatal(err)
					}
				}
			})

			for _, policy := range []Policy{PolicyTTL, PolicyInvalidate} {
				b.Run("cached-page-"+string(policy), func(b *testing.B) {
					s, err := New(b.Context(), nopClose{inner}, Options{
						Servers:   []string{testserver.Memcache(b)},
						Namespace: fmt.Sprintf("bench-%d", time.Now().UnixNano()),
						Policy:    policy,
						TTL:       time.Hour,
						Followers: inner.(FollowerLister).AllFollowers,
					})
					if err != nil {
						b.Fatal(err)
					}
					defer s.Close()
					if _, err := s.Timeline(ctx, 1, timeline.Query{}); err != nil {
						b.Fatal(err)
					}
					for b.Loop() {
						if _, err := s.Timeline(ctx, 1, timeline.Query{}); err != nil {
							b.Fatal(err)
						}
					}
					if st := s.Stats(); st.Misses != 1 {
						b.Fatalf("not all hits: %+v", st)
					}
				})
			}

			b.Run("cached-ids", func(b *testing.B) {
				mc := gomemcache.New(testserver.Memcache(b))
				mc.MaxIdleConns = 4
				defer mc.Close()
				key := fmt.Sprintf("pushpull:bench-ids-%d:page:1", time.Now().UnixNano())
				if err := mc.Set(&gomemcache.Item{Key: key, Value: appendIDs(nil, &entry{fetchedAt: time.Now(), page: want})}); err != nil {
					b.Fatal(err)
				}
				for b.Loop() {
					it, err := mc.Get(key)
					if err != nil {
						b.Fatal(err)
					}
					_, _, next, msgIDs, err := decodeIDs(it.Value)
					if err != nil {
						b.Fatal(err)
					}
					p, err := bodiesByID(ctx, db, msgIDs)
					if err != nil {
						b.Fatal(err)
					}
					p.Next = next
					if len(p.Messages) != len(want.Messages) {
						b.Fatalf("got %d messages, want %d", len(p.Messages), len(want.Messages))
					}
				}
			})
		})
	}
}

// BenchmarkCached runs the kit's benchmarks (timelinetest.RunBenchmarks:
// newest page, older page, post) on push and pull-sp behind this package's
// Store under each policy. The kit reads every newest page once before it
// measures, so newest pages are hits; older pages pass through to the
// wrapped store; under the invalidate policy a post also bumps the
// generations of its author's followers.
func BenchmarkCached(b *testing.B) {
	for _, model := range []string{"push", "pull-sp"} {
		for _, policy := range []Policy{PolicyTTL, PolicyInvalidate} {
			b.Run(model+"/"+string(policy), func(b *testing.B) {
				timelinetest.RunBenchmarks(b, func(b *testing.B) timeline.Store {
					inner, _ := openBenchStore(b, model)
					s, err := New(b.Context(), inner, Options{
						Servers:   []string{testserver.Memcache(b)},
						Namespace: fmt.Sprintf("bench-%d", time.Now().UnixNano()),
						Policy:    policy,
						TTL:       time.Hour,
					})
					if err != nil {
						b.Fatal(err)
					}
					b.Cleanup(func() { s.Close() })
					return s
				})
			})
		}
	}
}

// openBenchStore opens model ("push" or "pull-sp") in a fresh database and
// closes it when b ends.
func openBenchStore(b *testing.B, model string) (timeline.Store, *sql.DB) {
	b.Helper()
	ctx := timelinetest.Context(b)
	dsn, database := testserver.DSN(b), testserver.Database(b)
	var (
		s   timeline.Store
		err error
	)
	switch model {
	case "push":
		s, err = push.Open(ctx, push.Config{DSN: dsn, Database: database})
	case "pull-sp":
		s, err = pull.Open(ctx, pull.Config{DSN: dsn, Database: database, Read: sqlread.SP{}})
	default:
		b.Fatalf("unknown model %q", model)
	}
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s, s.(timeline.DBHolder).DB()
}

// bodiesByID is what a hit of an ids-only cache must do next.
func bodiesByID(ctx context.Context, db *sql.DB, msgIDs []timeline.MessageID) (timeline.Page, error) {
	if len(msgIDs) == 0 {
		return timeline.Page{}, nil
	}
	args := make([]any, len(msgIDs))
	for i, id := range msgIDs {
		args[i] = id
	}
	rows, err := db.QueryContext(ctx,
		`SELECT id, author_id, body, created_at FROM messages WHERE id IN (?`+strings.Repeat(",?", len(msgIDs)-1)+`) ORDER BY id DESC`,
		args...)
	if err != nil {
		return timeline.Page{}, err
	}
	msgs, err := mysqlx.ScanMessages(rows, len(msgIDs))
	return timeline.Page{Messages: msgs}, err
}

// nopClose keeps a benchmark's Store.Close from closing the shared store.
type nopClose struct{ timeline.Store }

func (nopClose) Close() error { return nil }
