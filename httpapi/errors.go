package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/pushpull/pushpull/timeline"
)

// RetryAfter is the Retry-After, in seconds, of a 503.
const RetryAfter = 5

// statusOf is the HTTP status code and message of an error of the store
// or of the request's parameters. Every error the library types has its
// code; only an untyped one is a 500.
func statusOf(err error) (int, string) {
	var pe *paramError
	var ue *unsupportedError
	var ie *timeline.InputError
	switch {
	case errors.As(err, &pe):
		return http.StatusBadRequest, pe.Error()
	case errors.As(err, &ue):
		return http.StatusUnprocessableEntity, ue.Error()
	case errors.Is(err, timeline.ErrNotFound):
		return http.StatusNotFound, "Record not found"
	case errors.Is(err, timeline.ErrInvalidMessage):
		return http.StatusNotFound, "Record not found"
	case errors.Is(err, timeline.ErrInvalidLimit), errors.Is(err, timeline.ErrInvalidCursor):
		return http.StatusBadRequest, err.Error()
	case errors.As(err, &ie) && errors.Is(err, timeline.ErrInvalidBody):
		return http.StatusUnprocessableEntity, "Validation failed: Text " + ie.Reason
	case errors.Is(err, timeline.ErrInvalidInput):
		return http.StatusUnprocessableEntity, "Validation failed: " + err.Error()
	case errors.Is(err, timeline.ErrUnavailable):
		return http.StatusServiceUnavailable, "There was a temporary problem serving your request, please try again"
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		// The request's own time ran out (a server that stops
		// answering), or its client left.
		return http.StatusServiceUnavailable, "There was a temporary problem serving your request, please try again"
	}
	return http.StatusInternalServerError, "Internal server error"
}

// fail answers err with its status code, and a Retry-After with a 503.
func (s *Server) fail(w http.ResponseWriter, err error) {
	code, msg := statusOf(err)
	if code == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", strconv.Itoa(RetryAfter))
	}
	if code == http.StatusInternalServerError {
		s.metrics.untyped.Inc()
	}
	writeError(w, code, msg)
}
