package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/pushpull/pushpull/timeline"
)

func TestOneLine(t *testing.T) {
	for in, want := range map[string]string{
		"plain":                "plain",
		"Café ☕🥐 👩‍💻":          "Café ☕🥐 👩‍💻",
		"a\nb\r\nc\td":         `a\nb\r\nc\td`,
		`back\slash`:           `back\\slash`,
		"bell\a del\x7f":       `bell\x07 del\x7f`,
		"nbsp\u00a0zwsp\u200b": `nbsp\u00a0zwsp\u200b`,
	} {
		if got := oneLine(in); got != want {
			t.Errorf("oneLine(%q) = %q, want %q", in, got, want)
		}
		if strings.ContainsAny(oneLine(in), "\n\r\t") {
			t.Errorf("oneLine(%q) is not one line", in)
		}
	}
}

func TestParseUserID(t *testing.T) {
	for _, ok := range []string{"1", "42", "9223372036854775807"} {
		if _, err := parseUserID("user", ok); err != nil {
			t.Errorf("parseUserID(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"", "0", "-1", "+1", "1e3", "0x1", " 1", "1 ", "9223372036854775808", "99999999999999999999", "١"} {
		_, err := parseUserID("follower", bad)
		var ie *timeline.InputError
		if !errors.As(err, &ie) || ie.Field != "follower" || !errors.Is(err, timeline.ErrInvalidUser) || !errors.Is(err, timeline.ErrInvalidInput) {
			t.Errorf("parseUserID(%q) = %v, want an invalid-user InputError naming follower", bad, err)
		}
	}
}

func TestDiffPages(t *testing.T) {
	m := func(id int64, author int64, body string) timeline.Message {
		return timeline.Message{ID: timeline.MessageID(id), Author: timeline.UserID(author), Body: body}
	}
	want := []timeline.Page{{Messages: []timeline.Message{m(3, 1, "c"), m(2, 2, "b")}, Next: "x"}, {Messages: []timeline.Message{m(1, 1, "a")}}}
	same := []timeline.Page{{Messages: []timeline.Message{m(3, 1, "c"), m(2, 2, "b")}, Next: "other cursor"}, {Messages: []timeline.Message{m(1, 1, "a")}}}
	if d := diffPages(want, same); d != "" {
		t.Errorf("equal pages (cursors differ only in value): %s", d)
	}
	for name, got := range map[string][]timeline.Page{
		"id":     {{Messages: []timeline.Message{m(4, 1, "c"), m(2, 2, "b")}, Next: "x"}, {Messages: []timeline.Message{m(1, 1, "a")}}},
		"author": {{Messages: []timeline.Message{m(3, 2, "c"), m(2, 2, "b")}, Next: "x"}, {Messages: []timeline.Message{m(1, 1, "a")}}},
		"body":   {{Messages: []timeline.Message{m(3, 1, "C"), m(2, 2, "b")}, Next: "x"}, {Messages: []timeline.Message{m(1, 1, "a")}}},
		"count":  {{Messages: []timeline.Message{m(3, 1, "c")}, Next: "x"}, {Messages: []timeline.Message{m(1, 1, "a")}}},
		"pages":  {{Messages: []timeline.Message{m(3, 1, "c"), m(2, 2, "b"), m(1, 1, "a")}}},
		"end":    {{Messages: []timeline.Message{m(3, 1, "c"), m(2, 2, "b")}}, {Messages: []timeline.Message{m(1, 1, "a")}}},
	} {
		if diffPages(want, got) == "" {
			t.Errorf("a difference in %s went unnoticed", name)
		}
	}
}
