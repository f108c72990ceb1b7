package httpapi

import (
	"net/http"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/pushpull/pushpull/timeline"
)

// The entities are written by appending to a buffer, not by
// encoding/json: a page of 20 statuses is the hot path, and reflection
// would be most of its cost.

// bufs recycles response buffers.
var bufs = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}

// send writes b as a JSON response with the given status code.
func send(w http.ResponseWriter, code int, b []byte) {
	h := w.Header()
	h["Content-Type"] = jsonType
	h["Cache-Control"] = noStore
	h["Content-Length"] = []string{strconv.Itoa(len(b))}
	w.WriteHeader(code)
	w.Write(b)
}

var (
	jsonType = []string{"application/json; charset=utf-8"}
	noStore  = []string{"no-cache, no-store, max-age=0, must-revalidate"}
)

// writeError answers {"error": msg}.
func writeError(w http.ResponseWriter, code int, msg string) {
	b := append([]byte(`{"error":`), jsonString(nil, msg)...)
	send(w, code, append(b, '}'))
}

// base is the scheme and host of the request, which the entities' URLs
// and the Link headers start with.
func base(r *http.Request) string {
	host := r.Host
	if host == "" {
		host = "localhost"
	}
	if r.TLS != nil {
		return "https://" + host
	}
	return "http://" + host
}

// writePage answers a page of statuses, with its Link header: rel="next"
// (max_id: the page's oldest id) when the timeline holds statuses older
// than the page (the store's Page.Next, which counts those below a
// since_id or min_id too), and rel="prev" (min_id: the page's newest id)
// on a page that has statuses, each on the request's own path with its
// limit parameter, if it had one. A page with nothing older has no next
// link, so a client that follows next links stops without reading an
// empty page; an empty page has no link at all. The statuses come from
// the server's cache when it holds them.
func (s *Server) writePage(w http.ResponseWriter, r *http.Request, p timeline.Page, limit string) {
	bp := bufs.Get().(*[]byte)
	defer bufs.Put(bp)
	origin := base(r)
	b := append((*bp)[:0], '[')
	hits := 0
	for i, m := range p.Messages {
		if i > 0 {
			b = append(b, ',')
		}
		var hit bool
		b, hit = s.cache.appendStatus(b, origin, m)
		if hit {
			hits++
		}
	}
	s.metrics.cached(s.cache, hits, len(p.Messages)-hits)
	b = append(b, ']')
	if n := len(p.Messages); n > 0 {
		link := make([]byte, 0, 256)
		self := origin + r.URL.Path + "?"
		if limit != "" {
			self += "limit=" + limit + "&" // digits only: pageQuery checked
		}
		if p.Next != "" {
			link = append(link, '<')
			link = append(link, self...)
			link = append(link, "max_id="...)
			link = strconv.AppendInt(link, int64(p.Messages[n-1].ID), 10)
			link = append(link, `>; rel="next", `...)
		}
		link = append(link, '<')
		link = append(link, self...)
		link = append(link, "min_id="...)
		link = strconv.AppendInt(link, int64(p.Messages[0].ID), 10)
		link = append(link, `>; rel="prev"`...)
		w.Header()["Link"] = []string{string(link)}
	}
	send(w, http.StatusOK, b)
	*bp = b
}

// writeStatus answers one status, with its text, from the server's cache
// when it holds it.
func (s *Server) writeStatus(w http.ResponseWriter, r *http.Request, m timeline.Message) {
	b, hit := s.cache.appendStatus(nil, base(r), m)
	if hit {
		s.metrics.cached(s.cache, 1, 0)
	} else {
		s.metrics.cached(s.cache, 0, 1)
	}
	send(w, http.StatusOK, b)
}

// appendStatus appends m as a Mastodon Status entity. content is the
// body as HTML (escaped, in a paragraph, line breaks as <br />); text is
// the body byte for byte (Mastodon's plain-text source, which it sends
// only for a deleted status and this server always sends).
// What the store does not keep (replies, boosts, media, counts) is empty,
// zero or null.
func appendStatus(b []byte, origin string, m timeline.Message) []byte {
	return appendStatusCut(b, origin, m, nil)
}

// originCuts are the places in a Status entity where its origin goes:
// its uri, its url and its account's url.
const originCuts = 3

// The fixed parts of a Status entity as this server writes it, between
// the values it varies: the writer appends them and the Client's scanner
// reads an entity laid out so by matching them (statusLayout).
const (
	stID       = `{"id":"`
	stCreated  = `","created_at":"`
	stURI      = `","in_reply_to_id":null,"in_reply_to_account_id":null,"sensitive":false,"spoiler_text":"","visibility":"public","language":null,"uri":"`
	stUsers    = "/users/"
	stStatuses = "/statuses/"
	stURL      = `","url":"`
	stAt       = "/@"
	stContent  = `","replies_count":0,"reblogs_count":0,"favourites_count":0,"edited_at":null,"content":"<p>`
	stText     = `</p>","text":`
	stAccount  = `,"reblog":null,"account":`
	stEnd      = `,"media_attachments":[],"mentions":[],"tags":[],"emojis":[],"card":null,"poll":null}`

	acID       = `{"id":"`
	acUsername = `","username":"user`
	acAcct     = `","acct":"user`
	acDisplay  = `","display_name":"user`
	acURL      = `","url":"`
	acEnd      = `","locked":false,"bot":false,"group":false,"note":"","avatar":"","avatar_static":"","header":"","header_static":"","followers_count":0,"following_count":0,"statuses_count":0,"emojis":[],"fields":[]}`
)

// appendStatusCut is appendStatus that, when cuts is not nil, records
// where in b each origin starts, so that the entity rendered with an
// empty origin can be completed for any origin (statusCache).
func appendStatusCut(b []byte, origin string, m timeline.Message, cuts *[originCuts]int) []byte {
	// The id and the author repeat (three and six times): written once.
	var idBuf, authorBuf [20]byte
	id := strconv.AppendInt(idBuf[:0], int64(m.ID), 10)
	author := strconv.AppendInt(authorBuf[:0], int64(m.Author), 10)
	b = append(b, stID...)
	b = append(b, id...)
	b = append(b, stCreated...)
	b = appendTime(b, m.CreatedAt)
	b = append(b, stURI...)
	if cuts != nil {
		cuts[0] = len(b)
	}
	b = append(b, origin...)
	b = append(b, stUsers...)
	b = append(b, author...)
	b = append(b, stStatuses...)
	b = append(b, id...)
	b = append(b, stURL...)
	if cuts != nil {
		cuts[1] = len(b)
	}
	b = append(b, origin...)
	b = append(b, stAt...)
	b = append(b, author...)
	b = append(b, '/')
	b = append(b, id...)
	b = append(b, stContent...)
	b = appendHTML(b, m.Body)
	b = append(b, stText...)
	b = jsonString(b, m.Body)
	b = append(b, stAccount...)
	var at *int
	if cuts != nil {
		at = &cuts[2]
	}
	b = appendAccountCut(b, origin, author, at)
	b = append(b, stEnd...)
	return b
}

// appendAccount appends user as a Mastodon Account entity: id, username
// and acct "user<id>", its URL; the rest, which the store does not keep,
// empty or zero.
func appendAccount(b []byte, origin string, user timeline.UserID) []byte {
	var buf [20]byte
	return appendAccountCut(b, origin, strconv.AppendInt(buf[:0], int64(user), 10), nil)
}

// appendAccountCut is appendAccount of the user whose decimal id is user
// that, when cut is not nil, records where in b the origin starts.
func appendAccountCut(b []byte, origin string, user []byte, cut *int) []byte {
	b = append(b, acID...)
	b = append(b, user...)
	b = append(b, acUsername...)
	b = append(b, user...)
	b = append(b, acAcct...)
	b = append(b, user...)
	b = append(b, acDisplay...)
	b = append(b, user...)
	b = append(b, acURL...)
	if cut != nil {
		*cut = len(b)
	}
	b = append(b, origin...)
	b = append(b, stAt...)
	b = append(b, user...)
	b = append(b, acEnd...)
	return b
}

// writeAccount answers one account.
func writeAccount(w http.ResponseWriter, r *http.Request, user timeline.UserID) {
	send(w, http.StatusOK, appendAccount(nil, base(r), user))
}

// writeRelationship answers a Mastodon Relationship entity.
func writeRelationship(w http.ResponseWriter, target timeline.UserID, following, followedBy bool) {
	b := append([]byte(nil), `{"id":"`...)
	b = strconv.AppendInt(b, int64(target), 10)
	b = append(b, `","following":`...)
	b = strconv.AppendBool(b, following)
	b = append(b, `,"showing_reblogs":`...)
	b = strconv.AppendBool(b, following)
	b = append(b, `,"notifying":false,"languages":null,"followed_by":`...)
	b = strconv.AppendBool(b, followedBy)
	b = append(b, `,"blocking":false,"blocked_by":false,"muting":false,"muting_notifications":false,"requested":false,"requested_by":false,"domain_blocking":false,"endorsed":false,"note":""}`...)
	send(w, http.StatusOK, b)
}

const hex = "0123456789abcdef"

// jsonString appends s as a JSON string.
func jsonString(b []byte, s string) []byte {
	b = append(b, '"')
	b = jsonInner(b, s)
	return append(b, '"')
}

// jsonInner appends s escaped for the inside of a JSON string. s is valid
// UTF-8 (the store keeps only that); an invalid byte would be sent as
// U+FFFD.
func jsonInner(b []byte, s string) []byte {
	if plain(s) {
		return append(b, s...)
	}
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			if r == utf8.RuneError {
				b = append(b, `\ufffd`...)
			} else {
				b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
			}
			i += size
			start = i
			continue
		}
		i += size
	}
	return append(b, s[start:]...)
}

// appendHTML appends s escaped as HTML text, line breaks as <br />, all
// inside a JSON string's quotes (the caller writes them).
func appendHTML(b []byte, s string) []byte {
	if plainHTML(s) {
		return append(b, s...)
	}
	start := 0
	for i := 0; i < len(s); i++ {
		var esc string
		switch s[i] {
		case '&':
			esc = "&amp;"
		case '<':
			esc = "&lt;"
		case '>':
			esc = "&gt;"
		case '"':
			esc = "&quot;"
		case '\'':
			esc = "&#39;"
		case '\n':
			esc = "<br />"
		case '\r':
			if i+1 < len(s) && s[i+1] == '\n' {
				esc = "" // \r\n is one break
			} else {
				esc = "<br />"
			}
		default:
			continue
		}
		b = jsonInner(b, s[start:i])
		b = append(b, esc...)
		start = i + 1
	}
	return jsonInner(b, s[start:])
}

// plain reports whether s is printable ASCII with no quote or backslash,
// which a JSON string holds as it is: most bodies, so the escapers skip
// their byte-by-byte work for them.
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// plainHTML reports whether s is plain (see plain) and holds none of the
// bytes HTML escapes or breaks lines at.
func plainHTML(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c >= utf8.RuneSelf, c == '"', c == '\\', c == '&', c == '<', c == '>', c == '\'':
			return false
		}
	}
	return true
}

// appendTime appends t in UTC as Mastodon writes times,
// 2006-01-02T15:04:05.000Z, without a layout to interpret: a page writes
// twenty of them. A year outside 0..9999 falls back to time's formatter.
func appendTime(b []byte, t time.Time) []byte {
	t = t.UTC()
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		return t.AppendFormat(b, "2006-01-02T15:04:05.000Z")
	}
	hour, min, sec := t.Clock()
	ms := t.Nanosecond() / 1e6
	return append(b,
		byte('0'+year/1000), byte('0'+year/100%10), byte('0'+year/10%10), byte('0'+year%10), '-',
		byte('0'+int(month)/10), byte('0'+int(month)%10), '-',
		byte('0'+day/10), byte('0'+day%10), 'T',
		byte('0'+hour/10), byte('0'+hour%10), ':',
		byte('0'+min/10), byte('0'+min%10), ':',
		byte('0'+sec/10), byte('0'+sec%10), '.',
		byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10), 'Z')
}
