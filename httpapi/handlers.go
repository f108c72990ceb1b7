package httpapi

import (
	"encoding/json"
	"errors"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/pushpull/pushpull/timeline"
)

// errBadToken is the answer to a request without a usable bearer token.
var errBadToken = errors.New("The access token is invalid")

// caller returns the user the request acts as: the decimal user id of its
// bearer token ("Authorization: Bearer 42"). It answers 401 itself and
// returns false when there is none.
func caller(w http.ResponseWriter, r *http.Request) (timeline.UserID, bool) {
	auth := r.Header.Get("Authorization")
	ok := len(auth) > 7 && strings.EqualFold(auth[:7], "Bearer ")
	id, err := int64(0), strconv.ErrSyntax
	if ok {
		id, err = parseID(strings.TrimSpace(auth[7:]))
	}
	if !ok || err != nil {
		w.Header().Set("WWW-Authenticate", `Bearer realm="pushpull", error="invalid_token", error_description="the token is a user id: Bearer 42"`)
		writeError(w, http.StatusUnauthorized, errBadToken.Error())
		return 0, false
	}
	return timeline.UserID(id), true
}

// parseID parses a decimal id: digits only, positive, in range.
func parseID(s string) (int64, error) {
	if s == "" || strings.Trim(s, "0123456789") != "" {
		return 0, strconv.ErrSyntax
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, err
	}
	if n <= 0 {
		return 0, strconv.ErrRange
	}
	return n, nil
}

// pathID is the id in the request's path, or a 404 written (as Mastodon
// answers for an id it cannot find) and false.
func pathID(w http.ResponseWriter, r *http.Request) (int64, bool) {
	id, err := parseID(r.PathValue("id"))
	if err != nil {
		writeError(w, http.StatusNotFound, "Record not found")
		return 0, false
	}
	return id, true
}

// paramError is a malformed query parameter: 400.
type paramError struct{ name, reason string }

func (e *paramError) Error() string { return e.name + ": " + e.reason }

// pageQuery turns Mastodon's paging parameters into a query:
//
//   - max_id: only statuses older than it (Query.Before);
//   - since_id: the newest statuses newer than it (Query.Since);
//   - min_id: the statuses immediately newer than it, the oldest first
//     above it, returned newest first (Query.After); with min_id,
//     since_id is ignored, as Mastodon ignores it;
//   - limit: the page size, 20 by default; above MaxPageLimit it is
//     MaxPageLimit, as in Mastodon.
//
// limit is the limit parameter as given ("" for none), which the page's
// links repeat.
func pageQuery(v url.Values) (q timeline.Query, limit string, err error) {
	if limit = v.Get("limit"); limit != "" {
		n, err := parseID(limit)
		switch {
		case err == nil:
			q.Limit = int(min(n, MaxPageLimit))
		case errors.Is(err, strconv.ErrRange) && strings.Trim(limit, "0") != "":
			q.Limit = MaxPageLimit // too large for an int64
		default:
			return q, "", &paramError{"limit", "want a positive integer"}
		}
	}
	for _, p := range []struct {
		name string
		to   *timeline.Cursor
	}{{"max_id", &q.Before}, {"since_id", &q.Since}, {"min_id", &q.After}} {
		s := v.Get(p.name)
		if s == "" {
			continue
		}
		id, err := parseID(s)
		if err != nil {
			return q, "", &paramError{p.name, "want a status id: a positive integer"}
		}
		*p.to = timeline.IDCursor(timeline.MessageID(id))
	}
	if q.After != "" {
		q.Since = ""
	}
	return q, limit, nil
}

// home serves GET /api/v1/timelines/home.
func (s *Server) home(w http.ResponseWriter, r *http.Request) {
	user, ok := caller(w, r)
	if !ok {
		return
	}
	q, limit, err := pageQuery(r.URL.Query())
	if err != nil {
		s.fail(w, err)
		return
	}
	page, err := s.store.Timeline(r.Context(), user, q)
	if err != nil {
		s.fail(w, err)
		return
	}
	s.writePage(w, r, page, limit)
}

// accountStatuses serves GET /api/v1/accounts/{id}/statuses: the
// account's own statuses. It needs no token. The account has no pinned
// status and no media, so pinned=true and only_media=true find none.
func (s *Server) accountStatuses(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	v := r.URL.Query()
	q, limit, err := pageQuery(v)
	if err != nil {
		s.fail(w, err)
		return
	}
	if v.Get("pinned") == "true" || v.Get("only_media") == "true" {
		s.writePage(w, r, timeline.Page{}, limit)
		return
	}
	page, err := s.store.AuthorTimeline(r.Context(), timeline.UserID(id), q)
	if err != nil {
		s.fail(w, err)
		return
	}
	s.writePage(w, r, page, limit)
}

// unsupported are the parameters of a new status that ask for what this
// server does not keep; a status that uses one is refused (422) rather
// than stored without it.
// A form names them as they are or with brackets (media_ids[],
// poll[options][]).
var unsupported = []string{"media_ids", "poll", "in_reply_to_id", "scheduled_at"}

// post serves POST /api/v1/statuses: the parameter "status" of a form
// (urlencoded or multipart) or of a JSON object is the body, stored byte
// for byte. visibility, language, sensitive and spoiler_text are accepted
// and not kept.
func (s *Server) post(w http.ResponseWriter, r *http.Request) {
	user, ok := caller(w, r)
	if !ok {
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxBodyBytes)
	body, present, err := statusParam(r)
	if err != nil {
		var tooBig *http.MaxBytesError
		var unsupported *unsupportedError
		switch {
		case errors.As(err, &tooBig):
			writeError(w, http.StatusRequestEntityTooLarge, "request body too large")
		case errors.As(err, &unsupported):
			s.fail(w, err)
		default:
			writeError(w, http.StatusBadRequest, err.Error())
		}
		return
	}
	if !present {
		writeError(w, http.StatusUnprocessableEntity, "Validation failed: Text can't be blank")
		return
	}
	m, err := s.store.Post(r.Context(), user, body)
	if err != nil {
		s.fail(w, err)
		return
	}
	s.writeStatus(w, r, m)
}

// statusParam reads the status text of a new status, and refuses what
// unsupported lists.
func statusParam(r *http.Request) (body string, present bool, err error) {
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if ct == "application/json" {
		var in map[string]json.RawMessage
		dec := json.NewDecoder(r.Body)
		if err := dec.Decode(&in); err != nil {
			return "", false, errors.New("the body is not a JSON object: " + err.Error())
		}
		for _, name := range unsupported {
			if raw, ok := in[name]; ok && string(raw) != "null" && string(raw) != "[]" && string(raw) != `""` {
				return "", false, &unsupportedError{name}
			}
		}
		raw, ok := in["status"]
		if !ok || string(raw) == "null" {
			return "", false, nil
		}
		if err := json.Unmarshal(raw, &body); err != nil {
			return "", false, errors.New("status: want a string")
		}
		return body, true, nil
	}
	if ct == "multipart/form-data" {
		err = r.ParseMultipartForm(maxBodyBytes)
	} else {
		err = r.ParseForm()
	}
	if err != nil {
		return "", false, err
	}
	for key, vs := range r.PostForm {
		name, _, _ := strings.Cut(key, "[")
		if slices.Contains(unsupported, name) && slices.ContainsFunc(vs, func(v string) bool { return v != "" }) {
			return "", false, &unsupportedError{key}
		}
	}
	vs, ok := r.PostForm["status"]
	if !ok || len(vs) == 0 {
		return "", false, nil
	}
	return vs[0], true, nil
}

// unsupportedError is a status that asks for a feature this server does
// not keep: 422.
type unsupportedError struct{ param string }

func (e *unsupportedError) Error() string {
	return "Validation failed: " + e.param + " is not supported by this server"
}

// status serves GET /api/v1/statuses/{id}.
func (s *Server) status(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	m, err := s.store.Message(r.Context(), timeline.MessageID(id))
	if err != nil {
		s.fail(w, err)
		return
	}
	s.writeStatus(w, r, m)
}

// delete serves DELETE /api/v1/statuses/{id}: it answers the deleted
// status, with its text, as Mastodon does. Another account's status is
// not found (404), as in Mastodon. The status leaves the server's cache.
func (s *Server) delete(w http.ResponseWriter, r *http.Request) {
	user, ok := caller(w, r)
	if !ok {
		return
	}
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	m, err := s.store.Message(r.Context(), timeline.MessageID(id))
	if err == nil && m.Author != user {
		err = timeline.ErrNotFound
	}
	if err == nil {
		err = s.store.Delete(r.Context(), user, m.ID)
	}
	if err != nil {
		s.fail(w, err)
		return
	}
	s.cache.evict(m.ID)
	send(w, http.StatusOK, appendStatus(nil, base(r), m))
}

// follow serves POST /api/v1/accounts/{id}/follow.
func (s *Server) follow(w http.ResponseWriter, r *http.Request) {
	s.relate(w, r, true)
}

// unfollow serves POST /api/v1/accounts/{id}/unfollow.
func (s *Server) unfollow(w http.ResponseWriter, r *http.Request) {
	s.relate(w, r, false)
}

// relate follows or unfollows the account in the path and answers the
// relationship, with followed_by read from the store.
func (s *Server) relate(w http.ResponseWriter, r *http.Request, follow bool) {
	user, ok := caller(w, r)
	if !ok {
		return
	}
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	target := timeline.UserID(id)
	change := s.store.Unfollow
	if follow {
		change = s.store.Follow
	}
	if err := change(r.Context(), user, target); err != nil {
		s.fail(w, err)
		return
	}
	followedBy, err := s.store.Follows(r.Context(), target, user)
	if err != nil {
		s.fail(w, err)
		return
	}
	writeRelationship(w, target, follow, followedBy)
}

// account serves GET /api/v1/accounts/{id}: every positive id is an
// account (the store keeps no user list).
func (s *Server) account(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	writeAccount(w, r, timeline.UserID(id))
}

// verifyCredentials serves GET /api/v1/accounts/verify_credentials: the
// caller's account.
func (s *Server) verifyCredentials(w http.ResponseWriter, r *http.Request) {
	user, ok := caller(w, r)
	if !ok {
		return
	}
	writeAccount(w, r, user)
}
