package cache

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/pushpull/pushpull/internal/mysqlx"
	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/pull"
	"github.com/pushpull/pushpull/pull/sqlread"
	"github.com/pushpull/pushpull/push"
	"github.com/pushpull/pushpull/timeline"
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
			var (
				inner timeline.Store
				db    *sql.DB
			)
			switch model {
			case "push":
				s, err := push.Open(ctx, push.Config{DSN: testserver.DSN(b), Database: testserver.Database(b)})
				if err != nil {
					b.Fatal(err)
				}
				inner, db = s, s.DB()
			default:
				s, err := pull.Open(ctx, pull.Config{DSN: testserver.DSN(b), Database: testserver.Database(b), Read: sqlread.SP{}})
				if err != nil {
					b.Fatal(err)
				}
				inner, db = s, s.DB()
			}
			defer inner.Close()
			rng := rand.New(rand.NewPCG(5, 5))
			for a := timeline.UserID(2); a <= 44; a++ {
				if err := inner.Follow(ctx, 1, a); err != nil {
					b.Fatal(err)
				}
			}
			bodies := benchPage(rng, 200).Messages
			for i := range 30 * 43 {
				if _, err := inner.Post(ctx, timeline.UserID(2+i%43), bodies[i%len(bodies)].Body); err != nil {
					b.Fatal(err)
				}
			}
			want, err := inner.Timeline(ctx, 1, timeline.Query{})
			if err != nil {
				b.Fatal(err)
			}

			b.Run("store", func(b *testing.B) {
				for b.Loop() {
					if _, err := inner.Timeline(ctx, 1, timeline.Query{}); err != nil {
						b.Fatal(err)
					}
				}
			})

			for _, policy := range []Policy{PolicyTTL, PolicyInvalidate} {
				b.Run("cached-page-"+string(policy), func(b *testing.B) {
					s, err := New(nopClose{inner}, Options{
						Servers:   []string{testserver.Memcache(b)},
						Namespace: fmt.Sprintf("bench-%d", time.Now().UnixNano()),
						Policy:    policy,
						TTL:       time.Hour,
						Followers: inner.(FollowerLister).Followers,
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
				mc := memcache.New(testserver.Memcache(b))
				mc.MaxIdleConns = 4
				defer mc.Close()
				key := fmt.Sprintf("pushpull:bench-ids-%d:page:1", time.Now().UnixNano())
				if err := mc.Set(&memcache.Item{Key: key, Value: appendIDs(nil, &entry{fetchedAt: time.Now(), page: want})}); err != nil {
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
