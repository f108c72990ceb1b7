package httpapi

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/pushpull/pushpull/timeline"
)

// TestStatusOf: every error the library types has a status code other
// than 500, wrapped or not; only an untyped error is a 500.
func TestStatusOf(t *testing.T) {
	input := func(sentinel error) error {
		return &timeline.InputError{Field: "f", Reason: "r", Err: sentinel}
	}
	for _, c := range []struct {
		err  error
		code int
	}{
		{input(timeline.ErrInvalidBody), 422},
		{input(timeline.ErrSelfFollow), 422},
		{input(timeline.ErrInvalidUser), 422},
		{input(timeline.ErrInvalidLimit), 400},
		{input(timeline.ErrInvalidCursor), 400},
		{input(timeline.ErrInvalidMessage), 404},
		{timeline.ErrNotFound, 404},
		{fmt.Errorf("delete: %w", timeline.ErrNotFound), 404},
		{fmt.Errorf("read: %w: dial unix: refused", timeline.ErrUnavailable), 503},
		{context.DeadlineExceeded, 503},
		{fmt.Errorf("query: %w", context.Canceled), 503},
		{&paramError{"limit", "bad"}, 400},
		{&unsupportedError{"poll"}, 422},
		{errors.New("something else"), 500},
	} {
		if code, msg := statusOf(c.err); code != c.code || msg == "" {
			t.Errorf("statusOf(%v) = %d %q, want %d", c.err, code, msg, c.code)
		}
	}
}
