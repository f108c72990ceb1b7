package httpapi

import (
	"errors"
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
