package httpapi_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/pushpull/pushpull/httpapi"
	"github.com/pushpull/pushpull/timeline"
)

// get reads target with the Host header host, as user, and returns the
// status code and the body.
func get(t *testing.T, target, host string, user int) (int, string) {
	t.Helper()
	req, err := http.NewRequest("GET", target, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	req.Header.Set("Authorization", "Bearer "+strconv.Itoa(user))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// TestStatusCacheServer: a server with its cache of rendered statuses
// answers byte for byte what one without it answers, whatever Host the
// requests name, and counts its hits; a status deleted through it is
// never served again; New refuses a cache size it does not know.
func TestStatusCacheServer(t *testing.T) {
	s := timeline.NewMemory()
	t.Cleanup(func() { s.Close() })
	ctx := context.Background()
	if err := s.Follow(ctx, 1, 2); err != nil {
		t.Fatal(err)
	}
	var ids []timeline.MessageID
	for i, body := range []string{"plain", `"quoted" <b>&</b>`, "two\nlines é 😀", "four", "five"} {
		m, err := s.Post(ctx, 2, fmt.Sprintf("%s %d", body, i))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, m.ID)
	}
	cached := serve(t, httpapi.Config{Store: s, StatusCacheBytes: 1 << 20})
	fresh := serve(t, httpapi.Config{Store: s})
	home := "/api/v1/timelines/home"
	one := "/api/v1/statuses/" + strconv.FormatInt(int64(ids[1]), 10)
	for _, host := range []string{"a.example:80", "b.example", "a.example:80"} {
		for _, path := range []string{home, home + "?limit=2", one} {
			code, got := get(t, cached+path, host, 1)
			_, want := get(t, fresh+path, host, 1)
			if code != 200 || got != want {
				t.Errorf("%s at %s: %d\n%s\nwant\n%s", path, host, code, got, want)
			}
		}
	}
	_, metrics := call(t, "GET", cached+"/metrics", 0, nil, "")
	// The first page rendered 5 statuses; the rest were hits: 5 + 2 + 1
	// at the first host, twice 8 at the others.
	for _, want := range []string{`pushpull_http_status_cache_total{result="miss"} 5`, `pushpull_http_status_cache_total{result="hit"} 19`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if _, none := call(t, "GET", fresh+"/metrics", 0, nil, ""); !strings.Contains(none, `pushpull_http_status_cache_total{result="miss"} 0`) {
		t.Errorf("a server without a cache counts its hits")
	}

	// Deleted through the server: gone from the pages and the status
	// route, although both were cached.
	resp, body := call(t, "DELETE", cached+one, 2, nil, "")
	if resp.StatusCode != 200 || !strings.Contains(body, `"text":"\"quoted\" <b>&</b> 1"`) {
		t.Fatalf("delete: %d %s", resp.StatusCode, body)
	}
	if code, _ := get(t, cached+one, "a.example:80", 1); code != 404 {
		t.Errorf("the deleted status: %d, want 404", code)
	}
	_, page := get(t, cached+home, "a.example:80", 1)
	if got := statusIDs(t, page); strings.Contains(strings.Join(got, " "), strconv.FormatInt(int64(ids[1]), 10)) || len(got) != 4 {
		t.Errorf("after the delete the page has %v", got)
	}

	for _, size := range []int64{-1, -1 << 40} {
		if _, err := httpapi.New(httpapi.Config{Store: s, StatusCacheBytes: size}); !errors.Is(err, httpapi.ErrConfig) {
			t.Errorf("StatusCacheBytes %d: %v, want ErrConfig", size, err)
		}
	}
}
