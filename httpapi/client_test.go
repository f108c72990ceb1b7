package httpapi_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/pushpull/pushpull/httpapi"
	"github.com/pushpull/pushpull/timeline"
)

// TestClient: the Client is a timeline.Store through the server: writes,
// pages walked by Next, polls by Prev, an author's own, messages by id,
// and the errors typed as the library types them.
func TestClient(t *testing.T) {
	s := timeline.NewMemory()
	defer s.Close()
	c := httpapi.NewClient(strings.TrimPrefix(serve(t, httpapi.Config{Store: s}), "http://"))
	defer c.Close()
	ctx := context.Background()
	if err := c.Follow(ctx, 1, 2); err != nil {
		t.Fatal(err)
	}
	bodies := []string{"plain", "a \"quote\", a \\ and a tab\t", "line\r\nbreaks\n", "über ✓ 😀", "<b>&amp;</b>", "\u2028 separators \u2029"}
	var posted []timeline.Message
	for i := range 11 {
		m, err := c.Post(ctx, 2, bodies[i%len(bodies)])
		if err != nil {
			t.Fatal(err)
		}
		if m.Body != bodies[i%len(bodies)] || m.Author != 2 || m.CreatedAt.IsZero() {
			t.Fatalf("posted %+v", m)
		}
		posted = append(posted, m)
	}
	// The walk by Next: what the store itself says, page by page.
	q := timeline.Query{Limit: 4}
	var walked []timeline.Message
	for pages := 0; ; pages++ {
		if pages > 5 {
			t.Fatal("the walk does not end")
		}
		p, err := c.Timeline(ctx, 1, q)
		if err != nil {
			t.Fatal(err)
		}
		walked = append(walked, p.Messages...)
		if p.Prev != timeline.IDCursor(p.Messages[0].ID) {
			t.Fatalf("Prev %q, want the page's newest", p.Prev)
		}
		if p.Next == "" {
			break
		}
		q.Before = p.Next
	}
	if len(walked) != len(posted) {
		t.Fatalf("walked %d messages, want %d", len(walked), len(posted))
	}
	for i, m := range walked {
		want := posted[len(posted)-1-i]
		if m.ID != want.ID || m.Body != want.Body || m.Author != want.Author || !m.CreatedAt.Equal(want.CreatedAt) {
			t.Fatalf("message %d: %+v, want %+v", i, m, want)
		}
	}
	// A poll by Prev as After: the oldest newer, none skipped.
	p, err := c.Timeline(ctx, 1, timeline.Query{Limit: 2, After: timeline.IDCursor(posted[5].ID)})
	if err != nil || len(p.Messages) != 2 || p.Messages[0].ID != posted[7].ID || p.Messages[1].ID != posted[6].ID {
		t.Fatalf("after %d: %+v, %v", posted[5].ID, p, err)
	}
	if p, err = c.AuthorTimeline(ctx, 2, timeline.Query{Limit: 1}); err != nil || len(p.Messages) != 1 || p.Messages[0].ID != posted[10].ID {
		t.Fatalf("author timeline: %+v, %v", p, err)
	}
	if m, err := c.Message(ctx, posted[3].ID); err != nil || m.Body != posted[3].Body {
		t.Fatalf("message: %+v, %v", m, err)
	}
	if err := c.Delete(ctx, 2, posted[3].ID); err != nil {
		t.Fatal(err)
	}
	for what, err := range map[string]error{
		"message deleted":  errOf(c.Message(ctx, posted[3].ID)),
		"delete again":     c.Delete(ctx, 2, posted[3].ID),
		"delete another's": c.Delete(ctx, 1, posted[4].ID),
		"message never":    errOf(c.Message(ctx, 1<<40)),
		"self follow":      c.Follow(ctx, 3, 3),
		"empty body":       errOf(c.Post(ctx, 2, "")),
		"limit over 40":    errOf(c.Timeline(ctx, 1, timeline.Query{Limit: 41})),
		"a signed cursor":  errOf(c.Timeline(ctx, 1, timeline.Query{Before: "AQAAAAAAAAAqAAAAAAAAAAAAAAAA"})),
		"follow lists":     errOf(c.Followees(ctx, 1, timeline.FollowQuery{})),
	} {
		var want error
		switch what {
		case "self follow", "empty body", "limit over 40", "a signed cursor":
			want = timeline.ErrInvalidInput
		case "follow lists":
			want = errors.ErrUnsupported
		default:
			want = timeline.ErrNotFound
		}
		if !errors.Is(err, want) {
			t.Errorf("%s: %v, want %v", what, err, want)
		}
	}
	if err := c.Unfollow(ctx, 1, 2); err != nil {
		t.Fatal(err)
	}
	if p, err := c.Timeline(ctx, 1, timeline.Query{}); err != nil || len(p.Messages) != 0 || p.Next != "" || p.Prev != "" {
		t.Fatalf("after the unfollow: %+v, %v", p, err)
	}
}

// errOf is the error of a call that returns a value and an error.
func errOf[T any](_ T, err error) error { return err }

// TestClientUnavailable: a server that cannot be reached is
// timeline.ErrUnavailable, and the call ends with its context.
func TestClientUnavailable(t *testing.T) {
	c := httpapi.NewClient("127.0.0.1:1")
	_, err := c.Timeline(context.Background(), 1, timeline.Query{})
	if !errors.Is(err, timeline.ErrUnavailable) {
		t.Fatalf("no server: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Timeline(ctx, 1, timeline.Query{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("a canceled context: %v", err)
	}
}

// FuzzBodies: any body the store takes comes back through the server's
// JSON and the client's scanner byte for byte.
func FuzzBodies(f *testing.F) {
	for _, b := range []string{"plain", "quote \" backslash \\", "tab\tline\nbreak\r\n", "über ✓ 😀", "\u2028", "<&>"} {
		f.Add(b)
	}
	s := timeline.NewMemory()
	defer s.Close()
	base := serveB(f, httpapi.Config{Store: s})
	c := httpapi.NewClient(strings.TrimPrefix(base, "http://"))
	defer c.Close()
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, body string) {
		if timeline.CheckBody(body) != nil {
			return
		}
		m, err := c.Post(ctx, 7, body)
		if err != nil {
			t.Fatal(err)
		}
		if m.Body != body {
			t.Fatalf("posted %q, read back %q", body, m.Body)
		}
		p, err := c.AuthorTimeline(ctx, 7, timeline.Query{Limit: 1})
		if err != nil || len(p.Messages) != 1 || p.Messages[0].Body != body {
			t.Fatalf("author timeline: %+v, %v", p, err)
		}
	})
}
