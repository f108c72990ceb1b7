package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/pushpull/pushpull/timeline"
)

// Client is a timeline.Store that works through a Server's API over HTTP,
// as any Mastodon client would: what the benchmark drives to measure a
// model through the server (pushpull bench --http). Cursors are
// timeline.IDCursor of the ids the Link headers carry; a query's limit is
// at most MaxPageLimit. The follow lists (Followees, Followers, Follows)
// are not served and give errors.ErrUnsupported.
//
// It speaks HTTP/1.1 itself on keep-alive connections, one per concurrent
// call (see conn.go), and reads statuses with a scanner of its own (see
// decode.go): a status laid out byte for byte as this package's server
// writes it by matching its fixed parts whole, every byte checked and the
// ids, author and origin it repeats compared; any other JSON field by
// field. Lean, so that a benchmark through it measures the server more
// than itself. It is safe for concurrent use.
//
// Errors come back typed as the server sent them: 404 as
// timeline.ErrNotFound, 503 and a server that cannot be reached as
// timeline.ErrUnavailable, 400 and 422 as timeline.ErrInvalidInput.
type Client struct {
	pool pool
}

// NewClient returns a client of the server at addr (host:port).
func NewClient(addr string) *Client {
	return &Client{pool: pool{addr: addr}}
}

// bodies recycles the buffers answers are read into.
var bodies = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// do sends a request as user (0: without a token) and hands a 200's body
// to decode (nil: discarded); it returns the answer's Link header.
func (c *Client) do(ctx context.Context, method, path string, user timeline.UserID, form url.Values, decode func([]byte) error) (link string, err error) {
	var body []byte
	if form != nil {
		body = []byte(form.Encode())
	}
	token := ""
	if user != 0 {
		token = strconv.FormatInt(int64(user), 10)
	}
	a, err := c.pool.roundTrip(ctx, method, path, token, formType, body)
	if err != nil {
		if ctx.Err() != nil {
			return "", err
		}
		return "", fmt.Errorf("%s %s: %w: %w", method, path, timeline.ErrUnavailable, err)
	}
	defer bodies.Put(a.body)
	if a.code != http.StatusOK {
		var e struct {
			Error string `json:"error"`
		}
		json.Unmarshal(a.body.Bytes(), &e)
		return "", responseError(method, path, a.code, e.Error)
	}
	if decode != nil {
		if err := decode(a.body.Bytes()); err != nil {
			return "", fmt.Errorf("%s %s: %w", method, path, err)
		}
	}
	return a.link, nil
}

const formType = "application/x-www-form-urlencoded"

// responseError is the typed error of an answer other than 200.
func responseError(method, path string, code int, msg string) error {
	var sentinel error
	switch code {
	case http.StatusNotFound:
		sentinel = timeline.ErrNotFound
	case http.StatusServiceUnavailable:
		sentinel = timeline.ErrUnavailable
	case http.StatusBadRequest, http.StatusUnprocessableEntity, http.StatusUnauthorized, http.StatusRequestEntityTooLarge:
		return &timeline.InputError{Field: "request", Reason: fmt.Sprintf("%s %s: %d %s", method, path, code, msg), Err: timeline.ErrInvalidInput}
	default:
		return fmt.Errorf("%s %s: %d %s", method, path, code, msg)
	}
	return fmt.Errorf("%s %s: %d %s: %w", method, path, code, msg, sentinel)
}

// pageValues are a query's Mastodon parameters.
func pageValues(q timeline.Query) (url.Values, error) {
	if _, err := timeline.PageLimit(q.Limit); err != nil {
		return nil, err
	}
	if q.Limit > MaxPageLimit {
		return nil, &timeline.InputError{Field: "limit", Reason: fmt.Sprintf("at most %d through the HTTP API", MaxPageLimit), Err: timeline.ErrInvalidLimit}
	}
	if q.Since != "" && q.After != "" {
		return nil, &timeline.InputError{Field: "after", Reason: "Since and After exclude each other", Err: timeline.ErrInvalidCursor}
	}
	v := url.Values{}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	for _, p := range []struct {
		name string
		cur  timeline.Cursor
	}{{"max_id", q.Before}, {"since_id", q.Since}, {"min_id", q.After}} {
		if p.cur == "" {
			continue
		}
		id, ok := timeline.IDOf(p.cur)
		if !ok {
			return nil, &timeline.InputError{Field: "cursor", Reason: "through the HTTP API, cursors are message ids (timeline.IDCursor)", Err: timeline.ErrInvalidCursor}
		}
		v.Set(p.name, strconv.FormatInt(int64(id), 10))
	}
	return v, nil
}

// page reads one page at path with q's parameters.
func (c *Client) page(ctx context.Context, path string, user timeline.UserID, q timeline.Query) (timeline.Page, error) {
	v, err := pageValues(q)
	if err != nil {
		return timeline.Page{}, err
	}
	if len(v) > 0 {
		path += "?" + v.Encode()
	}
	var p timeline.Page
	link, err := c.do(ctx, http.MethodGet, path, user, nil, func(b []byte) (err error) {
		p.Messages, err = decodeStatuses(b)
		return err
	})
	if err != nil {
		return timeline.Page{}, err
	}
	p.Next = linkCursor(link, "next", "max_id")
	p.Prev = linkCursor(link, "prev", "min_id")
	return p, nil
}

// linkCursor is the cursor of the id that the URL of rel in a Link
// header carries as its parameter key, or "" when there is none. It
// reads the header as ParseLinks does, and the URL's query without
// decoding it: ids are digits, which no server encodes. It is the
// client's hot path, so it scans in place rather than build the maps of
// ParseLinks and url.Values.
func linkCursor(header, rel, key string) timeline.Cursor {
	for part := range strings.SplitSeq(header, ",") {
		target, params, ok := strings.Cut(strings.TrimSpace(part), ";")
		if !ok || len(target) < 2 || target[0] != '<' || target[len(target)-1] != '>' || !hasRel(params, rel) {
			continue
		}
		_, query, _ := strings.Cut(target[1:len(target)-1], "?")
		query, _, _ = strings.Cut(query, "#")
		for kv := range strings.SplitSeq(query, "&") {
			if k, v, _ := strings.Cut(kv, "="); k == key {
				if id, err := parseID(v); err == nil {
					return timeline.IDCursor(timeline.MessageID(id))
				}
				return ""
			}
		}
		return ""
	}
	return ""
}

// hasRel reports whether a link's parameters (after its URL) say rel.
func hasRel(params, rel string) bool {
	for p := range strings.SplitSeq(params, ";") {
		if r, ok := strings.CutPrefix(strings.TrimSpace(p), "rel="); ok && strings.Trim(r, `"`) == rel {
			return true
		}
	}
	return false
}

// ParseLinks returns the URLs of a Link header by their rel.
func ParseLinks(header string) map[string]string {
	out := map[string]string{}
	for _, part := range strings.Split(header, ",") {
		target, params, ok := strings.Cut(strings.TrimSpace(part), ";")
		if !ok || !strings.HasPrefix(target, "<") || !strings.HasSuffix(target, ">") {
			continue
		}
		for _, p := range strings.Split(params, ";") {
			if rel, ok := strings.CutPrefix(strings.TrimSpace(p), "rel="); ok {
				out[strings.Trim(rel, `"`)] = target[1 : len(target)-1]
			}
		}
	}
	return out
}

// Timeline reads a page of user's home timeline.
func (c *Client) Timeline(ctx context.Context, user timeline.UserID, q timeline.Query) (timeline.Page, error) {
	if err := timeline.CheckUser("user", user); err != nil {
		return timeline.Page{}, err
	}
	return c.page(ctx, "/api/v1/timelines/home", user, q)
}

// AuthorTimeline reads a page of author's own statuses.
func (c *Client) AuthorTimeline(ctx context.Context, author timeline.UserID, q timeline.Query) (timeline.Page, error) {
	if err := timeline.CheckUser("author", author); err != nil {
		return timeline.Page{}, err
	}
	return c.page(ctx, "/api/v1/accounts/"+strconv.FormatInt(int64(author), 10)+"/statuses", 0, q)
}

// status sends a request that answers a status.
func (c *Client) status(ctx context.Context, method, path string, user timeline.UserID, form url.Values) (timeline.Message, error) {
	var m timeline.Message
	_, err := c.do(ctx, method, path, user, form, func(b []byte) (err error) {
		m, err = decodeStatus(b)
		return err
	})
	return m, err
}

// Post posts body as author.
func (c *Client) Post(ctx context.Context, author timeline.UserID, body string) (timeline.Message, error) {
	if err := timeline.CheckUser("author", author); err != nil {
		return timeline.Message{}, err
	}
	if err := timeline.CheckBody(body); err != nil {
		return timeline.Message{}, err
	}
	return c.status(ctx, http.MethodPost, "/api/v1/statuses", author, url.Values{"status": {body}})
}

// Delete deletes author's status id.
func (c *Client) Delete(ctx context.Context, author timeline.UserID, id timeline.MessageID) error {
	if err := timeline.CheckUser("author", author); err != nil {
		return err
	}
	if id <= 0 {
		return &timeline.InputError{Field: "id", Reason: "not positive", Err: timeline.ErrInvalidMessage}
	}
	_, err := c.status(ctx, http.MethodDelete, "/api/v1/statuses/"+strconv.FormatInt(int64(id), 10), author, nil)
	return err
}

// Message reads status id.
func (c *Client) Message(ctx context.Context, id timeline.MessageID) (timeline.Message, error) {
	if id <= 0 {
		return timeline.Message{}, &timeline.InputError{Field: "id", Reason: "not positive", Err: timeline.ErrInvalidMessage}
	}
	return c.status(ctx, http.MethodGet, "/api/v1/statuses/"+strconv.FormatInt(int64(id), 10), 0, nil)
}

// relate follows or unfollows.
func (c *Client) relate(ctx context.Context, follower, followee timeline.UserID, action string) error {
	if err := timeline.CheckUser("follower", follower); err != nil {
		return err
	}
	if err := timeline.CheckUser("followee", followee); err != nil {
		return err
	}
	_, err := c.do(ctx, http.MethodPost, "/api/v1/accounts/"+strconv.FormatInt(int64(followee), 10)+"/"+action, follower, url.Values{}, nil)
	return err
}

// Follow makes follower follow followee.
func (c *Client) Follow(ctx context.Context, follower, followee timeline.UserID) error {
	return c.relate(ctx, follower, followee, "follow")
}

// Unfollow makes follower stop following followee.
func (c *Client) Unfollow(ctx context.Context, follower, followee timeline.UserID) error {
	return c.relate(ctx, follower, followee, "unfollow")
}

// errNoFollowLists is what the follow lists give.
var errNoFollowLists = fmt.Errorf("httpapi: the HTTP API serves no follow lists: %w", errors.ErrUnsupported)

// Followees is not served: errors.ErrUnsupported.
func (c *Client) Followees(context.Context, timeline.UserID, timeline.FollowQuery) (timeline.FollowPage, error) {
	return timeline.FollowPage{}, errNoFollowLists
}

// Followers is not served: errors.ErrUnsupported.
func (c *Client) Followers(context.Context, timeline.UserID, timeline.FollowQuery) (timeline.FollowPage, error) {
	return timeline.FollowPage{}, errNoFollowLists
}

// Follows is not served: errors.ErrUnsupported.
func (c *Client) Follows(context.Context, timeline.UserID, timeline.UserID) (bool, error) {
	return false, errNoFollowLists
}

// Close closes the client's idle connections.
func (c *Client) Close() error {
	c.pool.close()
	return nil
}

var _ timeline.Store = (*Client)(nil)
