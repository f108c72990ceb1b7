package httpapi

import (
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/pushpull/pushpull/timeline"
)

// TestDecodeStatuses: the scanner keeps id, created_at, text and the
// account's id from statuses in any layout JSON allows (white space,
// numeric ids, nested values, nulls, escapes), and refuses what is not
// JSON or lacks an id.
func TestDecodeStatuses(t *testing.T) {
	in := ` [ {"uri":"x","id" : 17 ,"media_attachments":[{"a":[1,2,{"b":null}]}],"text":"a \"b\" \u00e9\ud83d\ude00\n",
	"created_at":"2026-01-02T03:04:05.678Z","account":{"emojis":[],"id":"3","bot":false},"poll":null,"n":-1.5e3},
	{"id":"18","text":null,"account":{"id":4},"created_at":"2026-01-02T03:04:05Z"} ] `
	got, err := decodeStatuses([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []timeline.Message{
		{ID: 17, Author: 3, Body: "a \"b\" é😀\n", CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 678e6, time.UTC)},
		{ID: 18, Author: 4, CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)},
	}
	if len(got) != len(want) {
		t.Fatalf("%d statuses, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i].ID != want[i].ID || got[i].Author != want[i].Author || got[i].Body != want[i].Body || !got[i].CreatedAt.Equal(want[i].CreatedAt) {
			t.Errorf("status %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if got, err := decodeStatuses([]byte("[]")); err != nil || len(got) != 0 {
		t.Fatalf("[]: %v, %v", got, err)
	}
	for _, bad := range []string{``, `{}`, `[`, `[{"id":"1"}]`, `[{"id":"x","account":{"id":"1"}}]`, `[{"id":"1","account":{"id":"1"}}] x`,
		`[{"id":"1","account":{"id":"1"},"text":"unterminated}]`, `[{"id":"1","account":{"id":"1"},"created_at":"yesterday"}]`} {
		if _, err := decodeStatuses([]byte(bad)); !errors.Is(err, errSyntax) {
			t.Errorf("%q: %v, want a syntax error", bad, err)
		}
	}
}

// TestTimesRoundTrip: appendTime writes what Mastodon writes and
// parseTime reads it back to the millisecond, across leap days and the
// year's ends; parseTime refuses impossible dates its fast path could
// otherwise build (February 30th normalised to March 2nd) and reads other
// RFC 3339 forms through time.Parse.
func TestTimesRoundTrip(t *testing.T) {
	for _, at := range []time.Time{
		time.Date(2024, 2, 29, 23, 59, 59, 999e6, time.UTC),
		time.Date(2026, 12, 31, 0, 0, 0, 1e6, time.UTC),
		time.Date(1999, 1, 1, 12, 30, 45, 120e6+999, time.FixedZone("x", 5*3600)),
	} {
		b := appendTime(nil, at)
		if want := at.UTC().Format("2006-01-02T15:04:05.000Z"); string(b) != want {
			t.Errorf("appendTime(%v) = %s, want %s", at, b, want)
		}
		got, err := parseTime(b)
		if err != nil || !got.Equal(at.Truncate(time.Millisecond)) {
			t.Errorf("parseTime(%s) = %v, %v; want %v", b, got, err, at.Truncate(time.Millisecond))
		}
	}
	for _, bad := range []string{"2026-02-30T00:00:00.000Z", "2026-13-01T00:00:00.000Z", "2026-01-01T24:00:00.000Z", "2026-01-0xT00:00:00.000Z"} {
		if got, err := parseTime([]byte(bad)); err == nil {
			t.Errorf("parseTime(%s) = %v, want an error", bad, got)
		}
	}
	if got, err := parseTime([]byte("2026-01-02T03:04:05.5+01:00")); err != nil || !got.Equal(time.Date(2026, 1, 2, 2, 4, 5, 5e8, time.UTC)) {
		t.Errorf("an offset time: %v, %v", got, err)
	}
}

// TestSkipRefuses: the skipper that steps over unwanted fields refuses
// what is not JSON inside them.
func TestSkipRefuses(t *testing.T) {
	for _, bad := range []string{
		`[{"id":"1","account":{"id":"1"},"x":[1,}]`,
		`[{"id":"1","account":{"id":"1"},"x":{"a":tru}}]`,
		`[{"id":"1","account":{"id":"1"},"x":]}]`,
		`[{"id":"1","account":{"id":"1"},"x":[1 2]}]`,
		`[{"id":"1","account":{"id":"1"},"x":[[1]]]`,
	} {
		if _, err := decodeStatuses([]byte(bad)); !errors.Is(err, errSyntax) {
			t.Errorf("%s: %v, want a syntax error", bad, err)
		}
	}
}

// TestEscapersFastPath: a body the fast path takes comes out as the slow
// path writes it, and one it does not take is still escaped.
func TestEscapersFastPath(t *testing.T) {
	for body, want := range map[string]string{
		"plain text 123": "plain text 123",
		"a & b":          "a &amp; b",
		"it's <b>":       "it&#39;s &lt;b&gt;",
		"two\nlines":     "two<br />lines",
		`say "hi" \ bye`: `say &quot;hi&quot; \\ bye`,
		"é":              "é",
	} {
		if got := string(appendHTML(nil, body)); got != want {
			t.Errorf("appendHTML(%q) = %q, want %q", body, got, want)
		}
	}
	if got := string(jsonString(nil, "a\"b\\c\x01")); got != `"a\"b\\c\u0001"` {
		t.Errorf("jsonString = %s", got)
	}
}

// TestLinkCursor: the client reads the id of a Link header's next and
// prev URLs as ParseLinks and url.Values read them, in any order, with
// other parameters around it, and finds none where there is none.
func TestLinkCursor(t *testing.T) {
	mastodon := `<http://h/api/v1/timelines/home?limit=5&max_id=1041>; rel="next", <http://h/api/v1/timelines/home?limit=5&min_id=1045>; rel="prev"`
	for _, c := range []struct {
		header, rel, key string
		want             timeline.MessageID // 0: none
	}{
		{mastodon, "next", "max_id", 1041},
		{mastodon, "prev", "min_id", 1045},
		{mastodon, "next", "min_id", 0},
		{`<http://h/x?min_id=7>;rel=prev,<http://h/x?max_id=3&limit=2#top>; rel=next`, "next", "max_id", 3},
		{`<http://h/x?min_id=7>;rel=prev,<http://h/x?max_id=3&limit=2#top>; rel=next`, "prev", "min_id", 7},
		{`<http://h/x?min_id=7>; rel="prev"`, "next", "max_id", 0},
		{`<http://h/x?max_id=abc>; rel="next"`, "next", "max_id", 0},
		{`<http://h/x?max_id=0>; rel="next"`, "next", "max_id", 0},
		{`<http://h/x?xmax_id=4>; rel="next"`, "next", "max_id", 0},
		{`http://h/x?max_id=4; rel="next"`, "next", "max_id", 0},
		{``, "next", "max_id", 0},
	} {
		got := linkCursor(c.header, c.rel, c.key)
		var want timeline.Cursor
		if c.want != 0 {
			want = timeline.IDCursor(c.want)
		}
		if got != want {
			t.Errorf("%s, %s: %q, want %q", c.header, c.rel, got, want)
		}
		// As ParseLinks and url.Values read it.
		var old timeline.Cursor
		if u, err := url.Parse(ParseLinks(c.header)[c.rel]); err == nil {
			if id, err := parseID(u.Query().Get(c.key)); err == nil {
				old = timeline.IDCursor(timeline.MessageID(id))
			}
		}
		if got != old {
			t.Errorf("%s, %s: %q, but ParseLinks and url.Values read %q", c.header, c.rel, got, old)
		}
	}
}

// benchPage is a page of 20 statuses as this server writes them.
func benchPage() []byte {
	page := []byte{'['}
	for i, m := range benchMessages() {
		if i > 0 {
			page = append(page, ',')
		}
		page = appendStatus(page, "http://127.0.0.1:8080", m)
	}
	return append(page, ']')
}

// benchMessages are the 20 messages of benchPage.
func benchMessages() []timeline.Message {
	ms := make([]timeline.Message, 20)
	for i := range ms {
		ms[i] = timeline.Message{
			ID: timeline.MessageID(100000 + i), Author: timeline.UserID(1000 + i),
			Body:      "message of about the length that the benchmark's dataset draws, with some words in it",
			CreatedAt: time.Date(2026, 11, 26, 6, 30, i, 0, time.UTC),
		}
	}
	return ms
}

// BenchmarkDecodeStatuses reads a page of 20 statuses as this server
// writes them: the client's share of a page's cost.
func BenchmarkDecodeStatuses(b *testing.B) {
	page := benchPage()
	b.SetBytes(int64(len(page)))
	for b.Loop() {
		if ms, err := decodeStatuses(page); err != nil || len(ms) != 20 {
			b.Fatal(len(ms), err)
		}
	}
}

// BenchmarkEncodeStatuses writes a page of 20 statuses: the server's
// share of a page's cost besides net/http.
func BenchmarkEncodeStatuses(b *testing.B) {
	ms := benchMessages()
	var page []byte
	for b.Loop() {
		page = append(page[:0], '[')
		for i, m := range ms {
			if i > 0 {
				page = append(page, ',')
			}
			page = appendStatus(page, "http://127.0.0.1:8080", m)
		}
		page = append(page, ']')
	}
	b.SetBytes(int64(len(page)))
}

// TestStatusLayout: an entity as this server writes it is read by its
// layout, to the same message as field by field, for any body and
// origin; one laid out otherwise, or whose repeated ids, author or
// origin disagree, is left to the field-by-field reader, which reads
// what is valid JSON and refuses what is not.
func TestStatusLayout(t *testing.T) {
	bodies := []string{"plain", `"quoted" \ <b>&amp;</b>`, "two\nlines\r\n", "é 😀 \u2028", "x", `\"`, "</p>\",\"text\":"}
	at := time.Date(2026, 11, 26, 7, 5, 0, 123e6, time.UTC)
	for _, origin := range []string{"http://127.0.0.1:8080", "https://example.org", ""} {
		for i, body := range bodies {
			m := timeline.Message{ID: timeline.MessageID(1e12 + i), Author: timeline.UserID(7 + i), Body: body, CreatedAt: at}
			entity := appendStatus(nil, origin, m)
			s := &scanner{b: entity}
			got, ok := s.statusLayout()
			if !ok || s.i != len(entity) {
				t.Fatalf("%q at %q: not read by its layout (at %d of %d)", body, origin, s.i, len(entity))
			}
			f := &scanner{b: entity}
			want, err := f.statusFields()
			if err != nil || got.ID != want.ID || got.Author != want.Author || got.Body != want.Body || !got.CreatedAt.Equal(want.CreatedAt) ||
				got.ID != m.ID || got.Body != body {
				t.Fatalf("%q at %q: by layout %+v, by fields %+v (%v)", body, origin, got, want, err)
			}
		}
	}
	m := timeline.Message{ID: 42, Author: 7, Body: "hello", CreatedAt: at}
	entity := string(appendStatus(nil, "http://h", m))
	for _, c := range []struct {
		name, old, new string
		valid          bool // still JSON with an id and an account: read field by field
	}{
		{"white space", `","created_at"`, `", "created_at"`, true},
		{"another id in the uri", "/statuses/42", "/statuses/43", true},
		{"another author in the url", "/@7/42", "/@8/42", true},
		{"another account", `"account":{"id":"7"`, `"account":{"id":"8"`, true},
		{"another origin in the account", `"url":"http://h/@7","locked"`, `"url":"http://g/@7","locked"`, true},
		{"a field more", `"poll":null}`, `"poll":null,"x":1}`, true},
		{"a leading zero", `{"id":"42"`, `{"id":"042"`, true},
		{"truncated", `"fields":[]},"media_attachments":[],"mentions":[],"tags":[],"emojis":[],"card":null,"poll":null}`, `"fields":[]}`, false},
		{"unterminated text", `"text":"hello"`, `"text":"hello`, false},
	} {
		changed := strings.Replace(entity, c.old, c.new, 1)
		if changed == entity {
			t.Fatalf("%s: %q is not in the entity", c.name, c.old)
		}
		s := &scanner{b: []byte(changed)}
		if _, ok := s.statusLayout(); ok || s.i != 0 {
			t.Errorf("%s: read by the layout (at %d)", c.name, s.i)
		}
		got, err := decodeStatuses([]byte("[" + changed + "]"))
		if c.valid && (err != nil || len(got) != 1 || got[0].ID != 42) {
			t.Errorf("%s: field by field %+v, %v", c.name, got, err)
		}
		if !c.valid && !errors.Is(err, errSyntax) {
			t.Errorf("%s: %v, want a syntax error", c.name, err)
		}
	}
}
