package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/pushpull/pushpull/timeline"
)

// The Client reads Status entities with this scanner rather than with
// encoding/json: a page of 20 is the benchmark's hot path through HTTP,
// where reflection and scanning every value twice would cost more than
// the server's whole answer. It keeps id, created_at, text and the
// account's id, and skips any other value whatever it holds.

// errSyntax is a malformed answer.
var errSyntax = errors.New("httpapi: malformed JSON in the answer")

// scanner reads JSON from b at i.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// next skips white space and returns the next byte, or 0 at the end.
func (s *scanner) next() byte {
	if s.i < len(s.b) && s.b[s.i] > ' ' {
		return s.b[s.i] // no white space: the common case
	}
	s.ws()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

func (s *scanner) expect(c byte) error {
	if s.next() != c {
		return fmt.Errorf("%w: want %q at byte %d", errSyntax, c, s.i)
	}
	s.i++
	return nil
}

// str reads a string and returns its raw inside, escapes and all. It
// steps over the first bytes one by one, since most strings (keys, ids)
// are short, and looks for the closing quote of a longer one with
// IndexByte.
func (s *scanner) str() ([]byte, error) {
	if err := s.expect('"'); err != nil {
		return nil, err
	}
	b, start := s.b, s.i
	i := start
	for end := min(start+16, len(b)); i < end; i++ {
		switch b[i] {
		case '"':
			s.i = i + 1
			return b[start:i], nil
		case '\\':
			i++
		}
	}
	for i < len(b) {
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 {
			break
		}
		end := i + j
		i = end + 1
		// A quote after an odd number of backslashes is escaped.
		k := end
		for k > start && b[k-1] == '\\' {
			k--
		}
		if (end-k)%2 == 0 {
			s.i = i
			return b[start:end], nil
		}
	}
	return nil, fmt.Errorf("%w: unterminated string", errSyntax)
}

// text reads a string's value.
func (s *scanner) text() (string, error) {
	start := s.i
	raw, err := s.str()
	if err != nil || bytes.IndexByte(raw, '\\') < 0 {
		return string(raw), err
	}
	var out string
	if err := json.Unmarshal(s.b[s.skipWS(start):s.i], &out); err != nil {
		return "", fmt.Errorf("%w: %v", errSyntax, err)
	}
	return out, nil
}

// skipWS is the index of the first byte at or after i that is not white
// space.
func (s *scanner) skipWS(i int) int {
	for i < len(s.b) && (s.b[i] == ' ' || s.b[i] == '\t' || s.b[i] == '\n' || s.b[i] == '\r') {
		i++
	}
	return i
}

// skip reads any value and discards it. It walks the bytes once with a
// depth count instead of descending through object and array: most of a
// Status is fields the client skips, the account among them.
func (s *scanner) skip() error {
	depth := 0
	for {
		switch c := s.next(); {
		case c == '"':
			if _, err := s.str(); err != nil {
				return err
			}
		case c == '{' || c == '[':
			depth++
			s.i++
			continue
		case c == '}' || c == ']':
			if depth == 0 {
				return fmt.Errorf("%w: unexpected %q at byte %d", errSyntax, c, s.i)
			}
			depth--
			s.i++
		case c == 't' || c == 'f' || c == 'n' || c == '-' || c >= '0' && c <= '9':
			start := s.i
			for s.i < len(s.b) {
				switch s.b[s.i] {
				case ',', '}', ']', ':', ' ', '\t', '\n', '\r':
				default:
					s.i++
					continue
				}
				break
			}
			if !literal(s.b[start:s.i]) {
				return fmt.Errorf("%w: bad value %q at byte %d", errSyntax, s.b[start:s.i], start)
			}
		default:
			return fmt.Errorf("%w: unexpected byte at %d", errSyntax, s.i)
		}
		if depth == 0 {
			return nil
		}
		// Inside an object or array: a separator, a key's colon, or the end.
		switch s.next() {
		case ',', ':':
			s.i++
		case '}', ']':
		default:
			return fmt.Errorf("%w: want ',' at byte %d", errSyntax, s.i)
		}
	}
}

// literal reports whether b is true, false, null or a JSON number's bytes.
func literal(b []byte) bool {
	switch string(b) {
	case "true", "false", "null":
		return true
	}
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if !(c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E') {
			return false
		}
	}
	return true
}

// parseTime reads a created_at: 2006-01-02T15:04:05.000Z, as Mastodon and
// this server write it, without a layout to interpret, or any other
// RFC 3339 time through time.Parse.
func parseTime(raw []byte) (time.Time, error) {
	if len(raw) == 24 && raw[4] == '-' && raw[7] == '-' && raw[10] == 'T' && raw[13] == ':' &&
		raw[16] == ':' && raw[19] == '.' && raw[23] == 'Z' {
		n := func(i, w int) (int, bool) {
			v := 0
			for _, c := range raw[i : i+w] {
				if c < '0' || c > '9' {
					return 0, false
				}
				v = v*10 + int(c-'0')
			}
			return v, true
		}
		y, ok1 := n(0, 4)
		mo, ok2 := n(5, 2)
		d, ok3 := n(8, 2)
		h, ok4 := n(11, 2)
		mi, ok5 := n(14, 2)
		sec, ok6 := n(17, 2)
		ms, ok7 := n(20, 3)
		if ok1 && ok2 && ok3 && ok4 && ok5 && ok6 && ok7 &&
			mo >= 1 && mo <= 12 && d >= 1 && d <= 31 && h < 24 && mi < 60 && sec < 60 {
			t := time.Date(y, time.Month(mo), d, h, mi, sec, ms*1e6, time.UTC)
			if t.Day() == d { // not February 30th
				return t, nil
			}
		}
	}
	return time.Parse(time.RFC3339Nano, string(raw))
}

// object reads an object, calling field for each member with the scanner
// at its value, which field must read.
func (s *scanner) object(field func(key []byte) error) error {
	if err := s.expect('{'); err != nil {
		return err
	}
	if s.next() == '}' {
		s.i++
		return nil
	}
	for {
		key, err := s.str()
		if err != nil {
			return err
		}
		if err := s.expect(':'); err != nil {
			return err
		}
		if err := field(key); err != nil {
			return err
		}
		switch s.next() {
		case ',':
			s.i++
		case '}':
			s.i++
			return nil
		default:
			return fmt.Errorf("%w: want ',' or '}' at byte %d", errSyntax, s.i)
		}
	}
}

// array reads an array, calling elem for each element.
func (s *scanner) array(elem func() error) error {
	if err := s.expect('['); err != nil {
		return err
	}
	if s.next() == ']' {
		s.i++
		return nil
	}
	for {
		if err := elem(); err != nil {
			return err
		}
		switch s.next() {
		case ',':
			s.i++
		case ']':
			s.i++
			return nil
		default:
			return fmt.Errorf("%w: want ',' or ']' at byte %d", errSyntax, s.i)
		}
	}
}

// id reads a decimal id in a string (or a bare number, as some servers
// send).
func (s *scanner) id() (int64, error) {
	var raw []byte
	if s.next() == '"' {
		r, err := s.str()
		if err != nil {
			return 0, err
		}
		raw = r
	} else {
		start := s.i
		if err := s.skip(); err != nil {
			return 0, err
		}
		raw = s.b[start:s.i]
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%w: id %q", errSyntax, raw)
	}
	return n, nil
}

// status reads one Status entity: by statusLayout when it is laid out as
// this server writes it, and field by field otherwise.
func (s *scanner) status() (timeline.Message, error) {
	if m, ok := s.statusLayout(); ok {
		return m, nil
	}
	return s.statusFields()
}

// statusLayout reads a Status entity laid out byte for byte as this
// server writes it (appendStatus): it matches each fixed part whole and
// reads the values between them, and checks that the ids, the author and
// the origin repeated in the uri, the urls and the account agree. So it
// reads and checks every byte of the entity, at the cost of comparing
// memory rather than of scanning forty-odd fields one by one: the
// client's share of a page through HTTP. An entity laid out otherwise
// (another server, white space, fields in another order) leaves the
// scanner where it was and reports false, for statusFields.
func (s *scanner) statusLayout() (m timeline.Message, ok bool) {
	b, i := s.b, s.i
	defer func(from int) {
		if !ok {
			s.i = from
		}
	}(s.i)
	lit := func(part string) bool {
		if len(b)-i < len(part) || string(b[i:i+len(part)]) != part {
			return false
		}
		i += len(part)
		return true
	}
	// num reads a positive decimal number with no leading zero.
	num := func() (int64, bool) {
		start := i
		var n int64
		for i < len(b) && b[i] >= '0' && b[i] <= '9' && i-start < 18 {
			n = n*10 + int64(b[i]-'0')
			i++
		}
		return n, i > start && b[start] != '0'
	}
	// same reads the decimal number want.
	same := func(want int64) bool {
		n, ok := num()
		return ok && n == want
	}
	if !lit(stID) {
		return m, false
	}
	id, ok := num()
	if !ok || !lit(stCreated) || len(b)-i < 24 {
		return m, false
	}
	at, err := parseTime(b[i : i+24])
	if err != nil {
		return m, false
	}
	i += 24
	if !lit(stURI) {
		return m, false
	}
	// The origin: what comes before /users/, with nothing to escape.
	j := bytes.Index(b[i:], []byte(stUsers))
	if j < 0 || bytes.IndexAny(b[i:i+j], "\"\\") >= 0 {
		return m, false
	}
	origin := string(b[i : i+j]) // three more times below
	i += j + len(stUsers)
	author, ok := num()
	if !ok || !lit(stStatuses) || !same(id) || !lit(stURL) || !lit(origin) || !lit(stAt) || !same(author) ||
		!lit("/") || !same(id) || !lit(stContent) {
		return m, false
	}
	// content, up to its closing quote: checked for its escapes, not read.
	content, end := i, i
	for {
		q := bytes.IndexByte(b[end:], '"')
		if q < 0 {
			return m, false
		}
		end += q
		k := end
		for b[k-1] == '\\' {
			k--
		}
		if (end-k)%2 == 0 {
			break
		}
		end++
	}
	if i = end - len("</p>"); i < content || !lit(stText) {
		return m, false
	}
	s.i = i
	body, err := s.text()
	i = s.i
	if err != nil || !lit(stAccount) || !lit(acID) || !same(author) || !lit(acUsername) || !same(author) ||
		!lit(acAcct) || !same(author) || !lit(acDisplay) || !same(author) || !lit(acURL) || !lit(origin) ||
		!lit(stAt) || !same(author) || !lit(acEnd) || !lit(stEnd) {
		return timeline.Message{}, false
	}
	s.i = i
	return timeline.Message{ID: timeline.MessageID(id), Author: timeline.UserID(author), Body: body, CreatedAt: at}, true
}

// statusFields reads one Status entity field by field, in any layout
// JSON allows: it keeps id, created_at, text and the account's id and
// skips any other value.
func (s *scanner) statusFields() (timeline.Message, error) {
	var m timeline.Message
	err := s.object(func(key []byte) error {
		switch string(key) {
		case "id":
			id, err := s.id()
			m.ID = timeline.MessageID(id)
			return err
		case "created_at":
			raw, err := s.str()
			if err != nil {
				return err
			}
			if m.CreatedAt, err = parseTime(raw); err != nil {
				return fmt.Errorf("%w: created_at: %v", errSyntax, err)
			}
			return nil
		case "text":
			if s.next() == 'n' {
				return s.skip() // null
			}
			var err error
			m.Body, err = s.text()
			return err
		case "account":
			return s.object(func(key []byte) error {
				if string(key) != "id" {
					return s.skip()
				}
				id, err := s.id()
				m.Author = timeline.UserID(id)
				return err
			})
		}
		return s.skip()
	})
	if err == nil && (m.ID == 0 || m.Author == 0) {
		err = fmt.Errorf("%w: a status without an id or an account", errSyntax)
	}
	return m, err
}

// decodeStatus reads one Status entity from b.
func decodeStatus(b []byte) (timeline.Message, error) {
	s := &scanner{b: b}
	m, err := s.status()
	if err == nil && s.next() != 0 {
		err = fmt.Errorf("%w: bytes after the status", errSyntax)
	}
	return m, err
}

// decodeStatuses reads an array of Status entities from b.
func decodeStatuses(b []byte) ([]timeline.Message, error) {
	s := &scanner{b: b}
	out := make([]timeline.Message, 0, 20)
	err := s.array(func() error {
		m, err := s.status()
		out = append(out, m)
		return err
	})
	if err == nil && s.next() != 0 {
		err = fmt.Errorf("%w: bytes after the array", errSyntax)
	}
	return out, err
}
