// Package httpapi serves any timeline.Store over HTTP as the part of
// Mastodon's REST API that home timelines need, so that programs that
// already speak that API (Mastodon client libraries, HTTP load
// generators) can drive any design:
//
//	GET    /api/v1/timelines/home                 a page of the caller's home timeline
//	POST   /api/v1/statuses                       post (form or JSON field "status")
//	GET    /api/v1/statuses/{id}                  one status
//	DELETE /api/v1/statuses/{id}                  delete one of the caller's statuses
//	GET    /api/v1/accounts/{id}/statuses         a page of an account's own statuses
//	POST   /api/v1/accounts/{id}/follow           follow, answering the relationship
//	POST   /api/v1/accounts/{id}/unfollow         unfollow, likewise
//	GET    /api/v1/accounts/{id}                  an account (any positive id exists)
//	GET    /api/v1/accounts/verify_credentials    the caller's account
//	GET    /healthz                               the servers the store uses: up, degraded, down
//	GET    /metrics                               Prometheus metrics
//
// Status and account ids are message and user ids, sent as decimal strings
// as Mastodon sends them. Pages take max_id, since_id, min_id and limit and
// answer with Link headers (rel="next", rel="prev") as Mastodon's
// documentation says; see pageQuery and writePage.
//
// The caller's account is the bearer token: "Authorization: Bearer 42"
// acts as user 42. That is no authentication — anyone can act as anyone —
// which is what a benchmark engine wants and no public service can have,
// so the command line refuses to listen beyond loopback unless told to
// (CheckListen).
//
// Errors are JSON objects {"error": "..."} with Mastodon's status codes:
// 400 for a malformed parameter, 401 for a missing or malformed token, 404
// for a status that does not exist (timeline.ErrNotFound) or a malformed
// id in a path, 422 for a status text the store refuses and other invalid
// input (timeline.ErrInvalidInput), 503 with Retry-After for a server that
// is down (timeline.ErrUnavailable) or a request that ran out of time. An
// error the library does not type is a 500; none that it types is.
package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pushpull/pushpull/timeline"
)

// DefaultRequestTimeout bounds each API request's work in the store when
// Config.RequestTimeout is 0.
const DefaultRequestTimeout = 10 * time.Second

// MaxPageLimit is the largest page a request gets: Mastodon's, twice its
// default of 20. A larger limit is taken as this, as Mastodon does.
const MaxPageLimit = 40

// maxBodyBytes bounds a request's body: a status of 280 characters in a
// form or JSON, with room to spare.
const maxBodyBytes = 64 << 10

// Config describes what a Server serves.
type Config struct {
	// Store is the store served. The Server does not close it.
	Store timeline.Store
	// Model names the store's model, for /healthz.
	Model string
	// Database names the database server (an address, no credentials),
	// for /healthz and the metrics.
	Database string
	// Memcache and Redis name the servers the store was opened with, so
	// that /healthz and the metrics report each (the store names those
	// that are down: timeline.Degraded).
	Memcache []string
	Redis    string
	// RequestTimeout bounds each request's work in the store; a request
	// that runs out of it answers 503. 0 means DefaultRequestTimeout.
	RequestTimeout time.Duration
	// StatusCacheBytes, when positive, keeps the Status entities the
	// server rendered, by message id, in a cache of at most that many
	// bytes, so that a page copies them rather than render them. Every
	// page still reads the store, an entry serves only the message it was
	// rendered from (id, author, body and time compared at each use), and
	// a delete through the server evicts it. 0 renders every status
	// afresh, which costs as little at the benchmark's scale, where a hit
	// reads memory far out of the processor's caches; the cache pays
	// where few statuses are read very often. A negative value is an
	// error.
	StatusCacheBytes int64
	// Registry receives the server's metrics and is served at /metrics;
	// nil means a fresh registry with the Go runtime's and the process's
	// collectors.
	Registry *prometheus.Registry
}

// Server is an http.Handler serving one store. It is safe for concurrent
// use.
type Server struct {
	store   timeline.Store
	cfg     Config
	mux     *http.ServeMux
	metrics *metrics
	cache   *statusCache
}

// ErrConfig is what New says of a Config it refuses.
var ErrConfig = errors.New("httpapi: invalid configuration")

// New returns a server for cfg.Store. It fails when cfg has no store or
// a StatusCacheBytes it does not know (ErrConfig), and when the metrics
// cannot be registered (a Registry that has them already).
func New(cfg Config) (*Server, error) {
	if cfg.Store == nil {
		return nil, fmt.Errorf("%w: no store", ErrConfig)
	}
	if cfg.StatusCacheBytes < 0 {
		return nil, fmt.Errorf("%w: StatusCacheBytes %d: want a size in bytes, or 0 for no cache", ErrConfig, cfg.StatusCacheBytes)
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = DefaultRequestTimeout
	}
	s := &Server{store: cfg.Store, cfg: cfg, mux: http.NewServeMux(), cache: newStatusCache(cfg.StatusCacheBytes)}
	m, err := newMetrics(cfg)
	if err != nil {
		return nil, err
	}
	s.metrics = m
	s.route("GET /api/v1/timelines/home", "home", s.home)
	s.route("POST /api/v1/statuses", "status_post", s.post)
	s.route("GET /api/v1/statuses/{id}", "status_get", s.status)
	s.route("DELETE /api/v1/statuses/{id}", "status_delete", s.delete)
	s.route("GET /api/v1/accounts/{id}/statuses", "account_statuses", s.accountStatuses)
	s.route("POST /api/v1/accounts/{id}/follow", "follow", s.follow)
	s.route("POST /api/v1/accounts/{id}/unfollow", "unfollow", s.unfollow)
	s.route("GET /api/v1/accounts/{id}", "account", s.account)
	s.route("GET /api/v1/accounts/verify_credentials", "verify_credentials", s.verifyCredentials)
	s.route("GET /healthz", "healthz", s.healthz)
	s.mux.Handle("GET /metrics", s.metrics.instrument("metrics", s.metrics.handler()))
	s.route("/", "unknown", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "Not found")
	})
	return s, nil
}

// route registers h under pattern, measured under the route label name,
// with the request's work in the store bounded by the request timeout.
func (s *Server) route(pattern, name string, h http.HandlerFunc) {
	timed := func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), s.cfg.RequestTimeout)
		defer cancel()
		h(w, r.WithContext(ctx))
	}
	s.mux.Handle(pattern, s.metrics.instrument(name, http.HandlerFunc(timed)))
}

// ServeHTTP serves the API.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mux.ServeHTTP(w, r)
}

// Run serves on ln until ctx ends, then shuts down gracefully: it stops
// accepting connections, lets the requests in flight finish (for at most
// grace), and settles the store (timeline.Settler: what an asynchronous
// model acknowledged is applied), again for at most grace. The caller
// closes the store after Run returns. It returns nil after a shutdown
// that finished in time, and the error that ended serving otherwise.
func (s *Server) Run(ctx context.Context, ln net.Listener, grace time.Duration) error {
	srv := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return err // the listener failed
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), grace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
		return fmt.Errorf("shutdown: requests still in flight after %v: %w", grace, err)
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	if st, ok := timeline.As[timeline.Settler](s.store); ok {
		settle, cancel := context.WithTimeout(context.WithoutCancel(ctx), grace)
		defer cancel()
		if err := st.Settle(settle); err != nil {
			return fmt.Errorf("shutdown: settle the store: %w", err)
		}
	}
	return nil
}

// ErrRemoteListen is what CheckListen says of an address beyond loopback
// without permission.
var ErrRemoteListen = errors.New("the bearer token is a user id, not authentication: listening beyond loopback needs explicit permission")

// CheckListen checks a listen address (host:port): its host must be a
// loopback address or "localhost" unless remote is true, since anyone
// who reaches the server can act as any user. An empty host (every
// interface) is beyond loopback.
func CheckListen(addr string, remote bool) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("listen address %q: %w", addr, err)
	}
	if _, err := net.LookupPort("tcp", port); err != nil {
		return fmt.Errorf("listen address %q: port: %w", addr, err)
	}
	if remote {
		return nil
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("listen address %q: %w", addr, ErrRemoteListen)
}
