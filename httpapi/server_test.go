package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/pushpull/pushpull/httpapi"
	"github.com/pushpull/pushpull/internal/testserver"
	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/timeline"
)

// call sends a request as user (0: no token) and returns the response
// and its body.
func call(t *testing.T, method, target string, user int, body io.Reader, contentType string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, target, body)
	if err != nil {
		t.Fatal(err)
	}
	if user != 0 {
		req.Header.Set("Authorization", "Bearer "+strconv.Itoa(user))
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

// memoryServer serves a fresh memory store in which user 1 follows user
// 2, who has posted n messages; it returns the base URL and their ids,
// oldest first.
func memoryServer(t *testing.T, n int) (string, []timeline.MessageID) {
	t.Helper()
	s := timeline.NewMemory()
	t.Cleanup(func() { s.Close() })
	ctx := context.Background()
	if err := s.Follow(ctx, 1, 2); err != nil {
		t.Fatal(err)
	}
	var ids []timeline.MessageID
	for i := range n {
		m, err := s.Post(ctx, 2, fmt.Sprintf("message %d", i))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, m.ID)
	}
	return serve(t, httpapi.Config{Store: s}), ids
}

// statusIDs are the ids of a JSON array of statuses.
func statusIDs(t *testing.T, body string) []string {
	t.Helper()
	var ss []struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal([]byte(body), &ss); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.ID
	}
	return out
}

// idList is ids[from:to] newest first, as decimal strings.
func idList(ids []timeline.MessageID, from, to int) []string {
	var out []string
	for i := to - 1; i >= from; i-- {
		out = append(out, strconv.FormatInt(int64(ids[i]), 10))
	}
	return out
}

// TestPaging: max_id, since_id, min_id and limit bound the page as
// Mastodon's documentation says, and the Link header is Mastodon's:
// rel="next" with the page's oldest id as max_id when older statuses
// remain, rel="prev" with its newest as min_id, on the request's path,
// keeping its limit; none on an empty page.
func TestPaging(t *testing.T) {
	base, ids := memoryServer(t, 45)
	home := base + "/api/v1/timelines/home"
	id := func(i int) string { return strconv.FormatInt(int64(ids[i]), 10) }
	for _, c := range []struct {
		query string
		want  []string // newest first
		link  string   // the Link header, base elided
	}{
		{"limit=3", idList(ids, 42, 45),
			`</api/v1/timelines/home?limit=3&max_id=` + id(42) + `>; rel="next", </api/v1/timelines/home?limit=3&min_id=` + id(44) + `>; rel="prev"`},
		{"", idList(ids, 25, 45),
			`</api/v1/timelines/home?max_id=` + id(25) + `>; rel="next", </api/v1/timelines/home?min_id=` + id(44) + `>; rel="prev"`},
		{"limit=100", idList(ids, 5, 45), // Mastodon's most: 40
			`</api/v1/timelines/home?limit=100&max_id=` + id(5) + `>; rel="next", </api/v1/timelines/home?limit=100&min_id=` + id(44) + `>; rel="prev"`},
		{"limit=3&max_id=" + id(3), idList(ids, 0, 3), // the last page: no next
			`</api/v1/timelines/home?limit=3&min_id=` + id(2) + `>; rel="prev"`},
		{"limit=3&since_id=" + id(10), idList(ids, 42, 45), // the newest above: a gap below
			`</api/v1/timelines/home?limit=3&max_id=` + id(42) + `>; rel="next", </api/v1/timelines/home?limit=3&min_id=` + id(44) + `>; rel="prev"`},
		{"limit=3&min_id=" + id(10), idList(ids, 11, 14), // immediately newer
			`</api/v1/timelines/home?limit=3&max_id=` + id(11) + `>; rel="next", </api/v1/timelines/home?limit=3&min_id=` + id(13) + `>; rel="prev"`},
		{"limit=3&min_id=" + id(10) + "&since_id=" + id(30), idList(ids, 11, 14), // min_id wins
			`</api/v1/timelines/home?limit=3&max_id=` + id(11) + `>; rel="next", </api/v1/timelines/home?limit=3&min_id=` + id(13) + `>; rel="prev"`},
		{"max_id=" + id(20) + "&since_id=" + id(17), idList(ids, 18, 20), // both bounds; older remain below them
			`</api/v1/timelines/home?max_id=` + id(18) + `>; rel="next", </api/v1/timelines/home?min_id=` + id(19) + `>; rel="prev"`},
		{"max_id=" + id(3) + "&since_id=" + id(0), idList(ids, 1, 3), // nothing older than since_id's own
			`</api/v1/timelines/home?max_id=` + id(1) + `>; rel="next", </api/v1/timelines/home?min_id=` + id(2) + `>; rel="prev"`},
		{"max_id=" + id(2), idList(ids, 0, 2), // nothing older at all
			`</api/v1/timelines/home?min_id=` + id(1) + `>; rel="prev"`},
		{"max_id=" + id(20) + "&min_id=" + id(15) + "&limit=2", idList(ids, 16, 18),
			`</api/v1/timelines/home?limit=2&max_id=` + id(16) + `>; rel="next", </api/v1/timelines/home?limit=2&min_id=` + id(17) + `>; rel="prev"`},
		{"since_id=" + id(44), nil, ""}, // nothing newer: no link
	} {
		resp, body := call(t, "GET", home+"?"+c.query, 1, nil, "")
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", c.query, resp.StatusCode, body)
		}
		if got := statusIDs(t, body); strings.Join(got, " ") != strings.Join(c.want, " ") {
			t.Errorf("%s: %v, want %v", c.query, got, c.want)
		}
		if got := strings.ReplaceAll(resp.Header.Get("Link"), base, ""); got != c.link {
			t.Errorf("%s: Link\n%s\nwant\n%s", c.query, got, c.link)
		}
	}
	// An author's own statuses page alike, on their path; they need no
	// token.
	resp, body := call(t, "GET", base+"/api/v1/accounts/2/statuses?limit=2", 0, nil, "")
	if got := statusIDs(t, body); resp.StatusCode != 200 || strings.Join(got, " ") != strings.Join(idList(ids, 43, 45), " ") {
		t.Fatalf("account statuses: %d %v", resp.StatusCode, got)
	}
	if want := `<` + base + `/api/v1/accounts/2/statuses?limit=2&max_id=` + id(43) + `>; rel="next", <` + base + `/api/v1/accounts/2/statuses?limit=2&min_id=` + id(44) + `>; rel="prev"`; resp.Header.Get("Link") != want {
		t.Fatalf("account statuses: Link %s, want %s", resp.Header.Get("Link"), want)
	}
	if _, body := call(t, "GET", base+"/api/v1/accounts/2/statuses?pinned=true", 0, nil, ""); body != "[]" {
		t.Fatalf("pinned statuses: %s, want none", body)
	}
	// The links parse back (httpapi.ParseLinks), and lead where they say.
	links := httpapi.ParseLinks(resp.Header.Get("Link"))
	if u, err := url.Parse(links["next"]); err != nil || u.Query().Get("max_id") != id(43) {
		t.Fatalf("ParseLinks: %v", links)
	}
}

// TestErrors: every bad request gets its status code and a JSON error,
// and nothing is written.
func TestErrors(t *testing.T) {
	base, ids := memoryServer(t, 1)
	form := "application/x-www-form-urlencoded"
	own := strconv.FormatInt(int64(ids[0]), 10) // user 2's
	for _, c := range []struct {
		method, path string
		user         int
		body, ctype  string
		code         int
	}{
		{"GET", "/api/v1/timelines/home", 0, "", "", 401},
		{"POST", "/api/v1/statuses", 0, "status=hi", form, 401},
		{"GET", "/api/v1/timelines/home?limit=0", 1, "", "", 400},
		{"GET", "/api/v1/timelines/home?limit=-5", 1, "", "", 400},
		{"GET", "/api/v1/timelines/home?limit=ten", 1, "", "", 400},
		{"GET", "/api/v1/timelines/home?max_id=0", 1, "", "", 400},
		{"GET", "/api/v1/timelines/home?since_id=1e3", 1, "", "", 400},
		{"GET", "/api/v1/timelines/home?min_id=-1", 1, "", "", 400},
		{"GET", "/api/v1/accounts/x/statuses", 0, "", "", 404},
		{"POST", "/api/v1/statuses", 1, "", form, 422},
		{"POST", "/api/v1/statuses", 1, "status=", form, 422},
		{"POST", "/api/v1/statuses", 1, "status=" + strings.Repeat("x", 281), form, 422},
		{"POST", "/api/v1/statuses", 1, "status=a%01b", form, 422},
		{"POST", "/api/v1/statuses", 1, "status=hi&in_reply_to_id=" + own, form, 422},
		{"POST", "/api/v1/statuses", 1, `{"status": 5}`, "application/json", 400},
		{"POST", "/api/v1/statuses", 1, `{"status"`, "application/json", 400},
		{"POST", "/api/v1/statuses", 1, `{"status": "hi", "poll": {"options": ["a"]}}`, "application/json", 422},
		{"POST", "/api/v1/statuses", 1, "status=" + strings.Repeat("x", 70000), form, 413},
		{"DELETE", "/api/v1/statuses/" + own, 1, "", "", 404},
		{"DELETE", "/api/v1/statuses/abc", 2, "", "", 404},
		{"DELETE", "/api/v1/statuses/99999", 2, "", "", 404},
		{"GET", "/api/v1/statuses/99999", 0, "", "", 404},
		{"POST", "/api/v1/accounts/0/follow", 1, "", "", 404},
		{"POST", "/api/v1/accounts/1/follow", 1, "", "", 422},
		{"GET", "/api/v2/timelines/home", 1, "", "", 404},
	} {
		var body io.Reader
		if c.body != "" {
			body = strings.NewReader(c.body)
		}
		resp, got := call(t, c.method, base+c.path, c.user, body, c.ctype)
		var e struct {
			Error string `json:"error"`
		}
		if resp.StatusCode != c.code || json.Unmarshal([]byte(got), &e) != nil || e.Error == "" ||
			resp.Header.Get("Content-Type") != "application/json; charset=utf-8" {
			t.Errorf("%s %s %q as %d: %d %s (%s), want %d and a JSON error",
				c.method, c.path, c.body, c.user, resp.StatusCode, got, resp.Header.Get("Content-Type"), c.code)
		}
		if c.code == 401 && !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer ") {
			t.Errorf("%s %s: 401 without WWW-Authenticate", c.method, c.path)
		}
	}
	// Nothing was written: user 2 still has its one status, and user 1
	// none.
	for user, want := range map[int]int{1: 0, 2: 1} {
		_, body := call(t, "GET", fmt.Sprintf("%s/api/v1/accounts/%d/statuses", base, user), 0, nil, "")
		if got := statusIDs(t, body); len(got) != want {
			t.Errorf("user %d has %d statuses after the bad requests, want %d", user, len(got), want)
		}
	}
	// A JSON body is a status as well as a form.
	if resp, body := call(t, "POST", base+"/api/v1/statuses", 1, strings.NewReader(`{"status":"über \"quoted\"\n"}`), "application/json"); resp.StatusCode != 200 ||
		!strings.Contains(body, `"text":"über \"quoted\"\n"`) || !strings.Contains(body, `"content":"<p>über &quot;quoted&quot;<br /></p>"`) {
		t.Fatalf("JSON post: %d %s", resp.StatusCode, body)
	}
}

// viaProxy opens push on the test MariaDB through a proxy the test can
// cut or freeze.
func viaProxy(t *testing.T) (timeline.Store, *testserver.Proxy, string) {
	t.Helper()
	cfg, err := mysql.ParseDSN(testserver.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	p := testserver.StartProxy(t, cfg.Net, cfg.Addr)
	cfg.Net, cfg.Addr = "tcp", p.Addr
	m, err := registry.Lookup("push")
	if err != nil {
		t.Fatal(err)
	}
	s, err := m.Open(context.Background(), registry.Config{DSN: cfg.FormatDSN(), Database: testserver.Database(t), MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, p, p.Addr
}

// TestUnavailable: a database that is down is a 503 with Retry-After,
// and /healthz says down (503); a database that stops answering is a 503
// once the request's time runs out; once it is back, requests succeed
// again.
func TestUnavailable(t *testing.T) {
	s, p, addr := viaProxy(t)
	base := serve(t, httpapi.Config{Store: s, Model: "push", Database: addr, RequestTimeout: 2 * time.Second})
	home := base + "/api/v1/timelines/home"
	if resp, body := call(t, "GET", home, 1, nil, ""); resp.StatusCode != 200 {
		t.Fatalf("before the fault: %d %s", resp.StatusCode, body)
	}
	if resp, body := call(t, "GET", base+"/healthz", 0, nil, ""); resp.StatusCode != 200 || !strings.Contains(body, `"status":"up"`) {
		t.Fatalf("healthz before the fault: %d %s", resp.StatusCode, body)
	}
	p.Cut()
	for _, r := range []struct{ method, path, body string }{
		{"GET", "/api/v1/timelines/home", ""},
		{"POST", "/api/v1/statuses", "status=hello"},
		{"POST", "/api/v1/accounts/2/follow", ""},
		{"DELETE", "/api/v1/statuses/1", ""},
	} {
		var body io.Reader
		if r.body != "" {
			body = strings.NewReader(r.body)
		}
		resp, got := call(t, r.method, base+r.path, 1, body, "application/x-www-form-urlencoded")
		if resp.StatusCode != 503 || resp.Header.Get("Retry-After") != strconv.Itoa(httpapi.RetryAfter) {
			t.Errorf("%s %s with the database down: %d (Retry-After %q) %s, want 503", r.method, r.path, resp.StatusCode, resp.Header.Get("Retry-After"), got)
		}
	}
	if resp, body := call(t, "GET", base+"/healthz", 0, nil, ""); resp.StatusCode != 503 || !strings.Contains(body, `"status":"down"`) {
		t.Fatalf("healthz with the database down: %d %s", resp.StatusCode, body)
	}
	p.Restore(t)
	testserver.Poll(t, 30*time.Second, "a 200 once the database is back", func() bool {
		resp, _ := call(t, "GET", home, 1, nil, "")
		return resp.StatusCode == 200
	})
	p.Freeze()
	resp, body := call(t, "GET", home+"?limit=7", 1, nil, "")
	p.Thaw()
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("a database that does not answer: %d %s, want 503", resp.StatusCode, body)
	}
}

// TestDegraded: with its memcached down, pull-recent keeps serving, and
// /healthz says degraded (200), and the metrics say which server is down.
func TestDegraded(t *testing.T) {
	m, err := registry.Lookup("pull-recent")
	if err != nil {
		t.Fatal(err)
	}
	p := testserver.StartProxy(t, "tcp", testserver.Memcache(t))
	s, err := m.Open(context.Background(), registry.Config{
		DSN: testserver.DSN(t), Database: testserver.Database(t), Memcache: []string{p.Addr}, Namespace: t.Name() + "/",
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	base := serve(t, httpapi.Config{Store: s, Model: m.Name, Memcache: []string{p.Addr}})
	if resp, body := call(t, "GET", base+"/healthz", 0, nil, ""); resp.StatusCode != 200 || !strings.Contains(body, `"status":"up"`) {
		t.Fatalf("healthz: %d %s", resp.StatusCode, body)
	}
	p.Cut()
	testserver.Poll(t, 30*time.Second, "healthz degraded with memcached cut", func() bool {
		if resp, body := call(t, "GET", base+"/api/v1/timelines/home", 1, nil, ""); resp.StatusCode != 200 {
			t.Fatalf("a read with memcached down: %d %s", resp.StatusCode, body)
		}
		resp, body := call(t, "GET", base+"/healthz", 0, nil, "")
		return resp.StatusCode == 200 && strings.Contains(body, `"status":"degraded"`)
	})
	_, metrics := call(t, "GET", base+"/metrics", 0, nil, "")
	if want := fmt.Sprintf(`pushpull_server_up{kind="memcached",server=%q} 0`, p.Addr); !strings.Contains(metrics, want) {
		t.Fatalf("metrics lack %s", want)
	}
}

// TestMetrics: requests are counted and timed by route and status code;
// the store's own counters and its servers are reported; an asynchronous
// model's fan-out lag is a histogram.
func TestMetrics(t *testing.T) {
	m, err := registry.Lookup("push-async")
	if err != nil {
		t.Fatal(err)
	}
	s, cfg := open(t, m)
	base := serve(t, cfg)
	call(t, "POST", base+"/api/v1/accounts/2/follow", 1, nil, "")
	for range 3 {
		call(t, "POST", base+"/api/v1/statuses", 2, strings.NewReader("status=hi"), "application/x-www-form-urlencoded")
	}
	call(t, "GET", base+"/api/v1/timelines/home", 1, nil, "")
	call(t, "GET", base+"/api/v1/timelines/home", 0, nil, "")
	if st, ok := timeline.As[timeline.Settler](s); !ok {
		t.Fatal("push-async is no Settler")
	} else if err := st.Settle(context.Background()); err != nil {
		t.Fatal(err)
	}
	resp, body := call(t, "GET", base+"/metrics", 0, nil, "")
	if resp.StatusCode != 200 {
		t.Fatalf("metrics: %d", resp.StatusCode)
	}
	for _, want := range []string{
		`pushpull_http_requests_total{code="200",route="status_post"} 3`,
		`pushpull_http_requests_total{code="200",route="home"} 1`,
		`pushpull_http_requests_total{code="401",route="home"} 1`,
		`pushpull_http_request_duration_seconds_count{code="200",route="status_post"} 3`,
		`pushpull_http_request_duration_seconds_bucket{code="200",route="home",le="10"} 1`,
		`pushpull_server_up{kind="database",server=""} 1`,
		`pushpull_store_work_total{counter=`,
		`pushpull_fanout_lag_seconds_count 3`,
		`go_goroutines`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if t.Failed() {
		t.Log(body)
	}
}

// held is a store whose home timeline reads wait, once entered, until the
// test releases them, and which records when it is settled.
type held struct {
	timeline.Store
	entered chan struct{}
	release chan struct{}
	mu      sync.Mutex
	events  []string
}

func (h *held) Unwrap() timeline.Store { return h.Store }

func (h *held) Timeline(ctx context.Context, user timeline.UserID, q timeline.Query) (timeline.Page, error) {
	h.entered <- struct{}{}
	<-h.release
	p, err := h.Store.Timeline(ctx, user, q)
	h.record("read")
	return p, err
}

func (h *held) Settle(ctx context.Context) error {
	h.record("settle")
	return nil
}

func (h *held) record(e string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events = append(h.events, e)
}

// TestShutdown: when Run's context ends, the request in flight finishes
// and is answered, new connections are refused, and the store is settled
// after it, before Run returns.
func TestShutdown(t *testing.T) {
	h := &held{Store: timeline.NewMemory(), entered: make(chan struct{}), release: make(chan struct{})}
	defer h.Store.Close()
	srv, err := httpapi.New(httpapi.Config{Store: h})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx, ln, time.Minute) }()
	base := "http://" + ln.Addr().String()
	answered := make(chan int, 1)
	go func() {
		resp, err := http.Get(base + "/healthz") // a connection of its own first: the server is up
		if err == nil {
			resp.Body.Close()
		}
		req, _ := http.NewRequest("GET", base+"/api/v1/timelines/home", nil)
		req.Header.Set("Authorization", "Bearer 1")
		resp, err = http.DefaultClient.Do(req)
		if err != nil {
			answered <- 0
			return
		}
		resp.Body.Close()
		answered <- resp.StatusCode
	}()
	<-h.entered
	cancel()
	// Shutdown closes the listener before it waits for the request.
	testserver.Poll(t, 30*time.Second, "the listener closed", func() bool {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err == nil {
			c.Close()
		}
		return err != nil
	})
	select {
	case err := <-done:
		t.Fatalf("Run returned (%v) with a request in flight", err)
	default:
	}
	close(h.release)
	if code := <-answered; code != 200 {
		t.Fatalf("the request in flight got %d, want 200", code)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(h.events, ","); got != "read,settle" {
		t.Fatalf("events %s, want the read, then the settle", got)
	}
}

// TestCheckListen: loopback only, unless allowed.
func TestCheckListen(t *testing.T) {
	for addr, ok := range map[string]bool{
		"127.0.0.1:8080": true, "localhost:8080": true, "[::1]:8080": true, "127.1.2.3:0": true,
		":8080": false, "0.0.0.0:8080": false, "192.168.1.5:8080": false, "example.com:80": false,
	} {
		err := httpapi.CheckListen(addr, false)
		if (err == nil) != ok || err != nil && !errors.Is(err, httpapi.ErrRemoteListen) {
			t.Errorf("CheckListen(%q, false) = %v", addr, err)
		}
		if err := httpapi.CheckListen(addr, true); err != nil {
			t.Errorf("CheckListen(%q, true) = %v", addr, err)
		}
	}
	for _, addr := range []string{"8080", "127.0.0.1", "127.0.0.1:port", "127.0.0.1:99999"} {
		if err := httpapi.CheckListen(addr, true); err == nil || errors.Is(err, httpapi.ErrRemoteListen) {
			t.Errorf("CheckListen(%q) = %v, want a malformed address", addr, err)
		}
	}
}
