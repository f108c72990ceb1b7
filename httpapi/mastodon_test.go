package httpapi_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mattn/go-mastodon"

	"github.com/pushpull/pushpull/httpapi"
	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/registry"
	_ "github.com/pushpull/pushpull/registry/all"
	"github.com/pushpull/pushpull/timeline"
)

func TestMain(m *testing.M) {
	testserver.Main(m, testserver.Options{Memcached: true, Redis: true, Vitess: true})
}

// serve runs a Server for s on a loopback port until the test ends, and
// returns its base URL.
func serve(t *testing.T, cfg httpapi.Config) string {
	t.Helper()
	return serveB(t, cfg)
}

// serveB is serve for tests and benchmarks.
func serveB(t testing.TB, cfg httpapi.Config) string {
	t.Helper()
	srv, err := httpapi.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx, ln, 30*time.Second) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return "http://" + ln.Addr().String()
}

// open opens model m on a fresh database (a keyspace on Vitess), with the
// test's memcached and Redis where it needs them.
func open(t *testing.T, m registry.Model) (timeline.Store, httpapi.Config) {
	t.Helper()
	cfg := registry.Config{MaxConns: 16}
	hc := httpapi.Config{Model: m.Name}
	switch {
	case m.OnVitess():
		cfg.Vtgate, cfg.Database = testserver.Vtgate(t), testserver.Keyspace(t)
		cfg.DSN = testserver.DSN(t)
	case m.Persistent():
		cfg.DSN, cfg.Database = testserver.DSN(t), testserver.Database(t)
	}
	if m.Needs&registry.Memcached != 0 {
		cfg.Memcache = []string{testserver.Memcache(t)}
		cfg.Namespace = fmt.Sprintf("%s.%s/", t.Name(), cfg.Database)
		hc.Memcache = cfg.Memcache
	}
	if m.Needs&registry.Redis != 0 {
		cfg.Redis = testserver.Redis(t)
		cfg.Namespace = fmt.Sprintf("%s.%s/", t.Name(), cfg.Database)
		hc.Redis = cfg.Redis
	}
	s, err := m.Open(context.Background(), cfg)
	if err != nil {
		t.Fatalf("open %s: %v", m.Name, err)
	}
	t.Cleanup(func() { s.Close() })
	hc.Store = s
	return s, hc
}

// as is a Mastodon client of the server at base acting as user (0: with
// no token).
func as(base string, user int) *mastodon.Client {
	token := ""
	if user != 0 {
		token = strconv.Itoa(user)
	}
	return mastodon.NewClient(&mastodon.Config{Server: base, AccessToken: token})
}

// id is user's account id.
func id(user int) mastodon.ID { return mastodon.ID(strconv.Itoa(user)) }

// apiCode is the status code of a go-mastodon error, or 0.
func apiCode(err error) int {
	var ae *mastodon.APIError
	if errors.As(err, &ae) {
		return ae.StatusCode
	}
	return 0
}

// ids are the ids of statuses.
func ids(ss []*mastodon.Status) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = string(s.ID)
	}
	return out
}

// newer says whether status id a is newer than b (ids are decimal).
func newer(a, b mastodon.ID) bool {
	x, _ := strconv.ParseInt(string(a), 10, 64)
	y, _ := strconv.ParseInt(string(b), 10, 64)
	return x > y
}

// TestMastodonClient drives the server with go-mastodon, a Mastodon
// client library, for every registered model and variant (those the
// equivalence test holds to the memory store's answers), each on a fresh
// database: follows answering relationships, posts, a walk through the
// home timeline by its Link headers while posts arrive between pages (no
// status skipped or repeated), polls by since_id and min_id, an author's
// own statuses, deletes, unfollows, and the errors a client must see.
// Asynchronous models are settled before each read of what was written.
func TestMastodonClient(t *testing.T) {
	models := slices.Clone(registry.Models())
	for _, m := range registry.Listed() {
		if m.Variant != "" {
			models = append(models, m)
		}
	}
	for _, m := range models {
		t.Run(m.Name, func(t *testing.T) {
			s, cfg := open(t, m)
			settle := func() {
				t.Helper()
				if st, ok := timeline.As[timeline.Settler](s); ok {
					if err := st.Settle(context.Background()); err != nil {
						t.Fatal(err)
					}
				}
			}
			exercise(t, serve(t, cfg), settle)
		})
	}
}

// exercise is TestMastodonClient's scenario on the server at base.
func exercise(t *testing.T, base string, settle func()) {
	ctx := context.Background()
	const reader, alice, bob, carol = 1, 2, 3, 4
	r, a, b := as(base, reader), as(base, alice), as(base, bob)

	// Follows answer the relationship, followed_by read from the store.
	if _, err := a.AccountFollow(ctx, id(reader)); err != nil {
		t.Fatal(err)
	}
	rel, err := r.AccountFollow(ctx, id(alice))
	if err != nil {
		t.Fatal(err)
	}
	if rel.ID != id(alice) || !rel.Following || !rel.FollowedBy {
		t.Fatalf("relationship after following alice, who follows back: %+v", rel)
	}
	if rel, err = r.AccountFollow(ctx, id(bob)); err != nil || !rel.Following || rel.FollowedBy {
		t.Fatalf("relationship after following bob: %+v, %v", rel, err)
	}

	// Posts: the answer is the status, its content HTML, its text the
	// body byte for byte.
	var posted []*mastodon.Status
	for i := range 24 {
		c, body := a, fmt.Sprintf("alice's %d <b>&</b>\nsecond line", i)
		if i%2 == 1 {
			c, body = b, fmt.Sprintf("bob's %d", i)
		}
		st, err := c.PostStatus(ctx, &mastodon.Toot{Status: body, Visibility: mastodon.VisibilityPublic})
		if err != nil {
			t.Fatalf("post %d: %v", i, err)
		}
		if i == 0 && (st.Content != "<p>alice&#39;s 0 &lt;b&gt;&amp;&lt;/b&gt;<br />second line</p>" || st.Account.ID != id(alice) || st.CreatedAt.IsZero()) {
			t.Fatalf("posted status: content %q, account %q, created %v", st.Content, st.Account.ID, st.CreatedAt)
		}
		if len(posted) > 0 && !newer(st.ID, posted[0].ID) {
			t.Fatalf("status %s posted after %s has an id not above it", st.ID, posted[0].ID)
		}
		posted = slices.Insert(posted, 0, st) // newest first
	}
	settle()

	// A walk by the Link headers, 5 a page, with one post by bob between
	// pages: every status posted before the walk once, newest first.
	var walked []*mastodon.Status
	var during []*mastodon.Status
	pg := &mastodon.Pagination{Limit: 5}
	for pages := 0; ; pages++ {
		if pages > 20 {
			t.Fatal("the walk does not end")
		}
		page, err := r.GetTimelineHome(ctx, pg)
		if err != nil {
			t.Fatalf("page %d: %v", pages, err)
		}
		if len(page) == 0 {
			t.Fatalf("page %d is empty: the previous page's next link led nowhere", pages)
		}
		walked = append(walked, page...)
		st, err := b.PostStatus(ctx, &mastodon.Toot{Status: fmt.Sprintf("bob during the walk %d", pages)})
		if err != nil {
			t.Fatal(err)
		}
		during = slices.Insert(during, 0, st)
		if pg.MaxID == "" {
			break // no rel="next": go-mastodon stops
		}
		if pg.Limit != 5 || pg.MinID != "" || pg.SinceID != "" {
			t.Fatalf("next link after page %d: %+v, want max_id and limit 5", pages, pg)
		}
	}
	if got, want := strings.Join(ids(walked), " "), strings.Join(ids(posted), " "); got != want {
		t.Fatalf("the walk read\n%s\nwant\n%s", got, want)
	}
	if walked[0].Content != "<p>bob&#39;s 23</p>" {
		t.Fatalf("content of the newest status: %q", walked[0].Content)
	}
	settle()

	// A poll by since_id: the newest statuses above the newest read.
	newest := posted[0].ID
	got, err := r.GetTimelineHome(ctx, &mastodon.Pagination{SinceID: newest, Limit: 40})
	if err != nil {
		t.Fatal(err)
	}
	if g, w := strings.Join(ids(got), " "), strings.Join(ids(during), " "); g != w {
		t.Fatalf("since_id %s: %s, want %s", newest, g, w)
	}
	// since_id with a small limit: the newest, a gap below.
	if got, err = r.GetTimelineHome(ctx, &mastodon.Pagination{SinceID: newest, Limit: 2}); err != nil || strings.Join(ids(got), " ") != strings.Join(ids(during[:2]), " ") {
		t.Fatalf("since_id %s, limit 2: %v, %v; want %v", newest, ids(got), err, ids(during[:2]))
	}
	// Polls by min_id: the oldest above it first, newest first in each
	// page, the page's newest the next min_id, until nothing is newer.
	var polled []string
	for minID := newest; ; {
		got, err := r.GetTimelineHome(ctx, &mastodon.Pagination{MinID: minID, Limit: 2})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 {
			break
		}
		polled = append(ids(got), polled...)
		minID = got[0].ID
		if len(polled) > len(during) {
			break
		}
	}
	if g, w := strings.Join(polled, " "), strings.Join(ids(during), " "); g != w {
		t.Fatalf("min_id polls read %s, want %s", g, w)
	}

	// An author's own statuses, walked by go-mastodon's iterator.
	var own []string
	for st, err := range r.AccountStatuses(ctx, id(alice), &mastodon.Pagination{Limit: 4}) {
		if err != nil {
			t.Fatal(err)
		}
		own = append(own, string(st.ID))
	}
	var alices []string
	for _, st := range posted {
		if st.Account.ID == id(alice) {
			alices = append(alices, string(st.ID))
		}
	}
	if strings.Join(own, " ") != strings.Join(alices, " ") {
		t.Fatalf("alice's statuses: %v, want %v", own, alices)
	}

	// Deletes: by the author only; then gone from the timeline and by id.
	doomed := posted[len(posted)-1] // alice's first
	if err := r.DeleteStatus(ctx, doomed.ID); apiCode(err) != 404 {
		t.Fatalf("the reader deletes alice's status: %v, want 404", err)
	}
	if err := a.DeleteStatus(ctx, doomed.ID); err != nil {
		t.Fatal(err)
	}
	if err := a.DeleteStatus(ctx, doomed.ID); apiCode(err) != 404 {
		t.Fatalf("a second delete: %v, want 404", err)
	}
	settle()
	if _, err := r.GetStatus(ctx, doomed.ID); apiCode(err) != 404 {
		t.Fatalf("the deleted status by id: %v, want 404", err)
	}
	home, err := r.GetTimelineHome(ctx, &mastodon.Pagination{Limit: 40})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(ids(home), string(doomed.ID)) || len(home) != len(posted)+len(during)-1 {
		t.Fatalf("after the delete the timeline holds %d statuses (want %d), the deleted one: %v",
			len(home), len(posted)+len(during)-1, slices.Contains(ids(home), string(doomed.ID)))
	}

	// Unfollow: bob's statuses leave the timeline at once.
	if rel, err := r.AccountUnfollow(ctx, id(bob)); err != nil || rel.Following {
		t.Fatalf("unfollow bob: %+v, %v", rel, err)
	}
	settle()
	if home, err = r.GetTimelineHome(ctx, &mastodon.Pagination{Limit: 40}); err != nil {
		t.Fatal(err)
	}
	for _, st := range home {
		if st.Account.ID != id(alice) {
			t.Fatalf("status %s of %s after unfollowing bob", st.ID, st.Account.ID)
		}
	}
	if len(home) != len(alices)-1 {
		t.Fatalf("%d statuses after unfollowing bob, want alice's %d", len(home), len(alices)-1)
	}

	// The errors a client sees.
	if _, err := r.PostStatus(ctx, &mastodon.Toot{Status: "   "}); apiCode(err) != 422 {
		t.Fatalf("a blank status: %v, want 422", err)
	}
	if _, err := r.PostStatus(ctx, &mastodon.Toot{Status: "with a photo", MediaIDs: []mastodon.ID{"1"}}); apiCode(err) != 422 {
		t.Fatalf("a status with media: %v, want 422", err)
	}
	if _, err := as(base, 0).GetTimelineHome(ctx, nil); apiCode(err) != 401 {
		t.Fatalf("no token: %v, want 401", err)
	}
	if _, err := as(base, carol).AccountFollow(ctx, id(carol)); apiCode(err) != 422 {
		t.Fatalf("following oneself: %v, want 422", err)
	}
	if _, err := r.GetTimelineHome(ctx, &mastodon.Pagination{MaxID: "x1"}); apiCode(err) != 400 {
		t.Fatalf("max_id x1: %v, want 400", err)
	}
	if _, err := r.GetStatus(ctx, "999999999999"); apiCode(err) != 404 {
		t.Fatalf("an unknown status: %v, want 404", err)
	}
	me, err := as(base, carol).GetAccountCurrentUser(ctx)
	if err != nil || me.ID != id(carol) || me.Username != "user4" {
		t.Fatalf("verify_credentials as carol: %+v, %v", me, err)
	}
}
