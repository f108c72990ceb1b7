package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/pushpull/pushpull/httpapi"
	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/timeline"
)

// maxStatusCacheMB bounds --status-cache-mb: 64 GiB.
const maxStatusCacheMB = 64 << 10

func newServeCmd(getenv func(string) string) *cobra.Command {
	sf := serverFlags{getenv: getenv}
	var (
		model, listen        string
		allowRemote          bool
		maxConns, cacheMB    int
		requestTimeout, wait time.Duration
	)
	cmd := &cobra.Command{
		Use:   "serve --model MODEL [--listen HOST:PORT] [--allow-remote] [server flags]",
		Short: "Serve a model over HTTP as Mastodon's API for home timelines",
		Long: fmt.Sprintf(`serve serves one model over HTTP as the part of Mastodon's REST API that
home timelines need, so that Mastodon clients and HTTP load generators can
drive any design:

  GET    /api/v1/timelines/home               the caller's home timeline
  POST   /api/v1/statuses                     post: the form or JSON field "status"
  GET    /api/v1/statuses/ID                  one status
  DELETE /api/v1/statuses/ID                  delete one of the caller's statuses
  GET    /api/v1/accounts/ID/statuses         an account's own statuses
  POST   /api/v1/accounts/ID/follow           follow (answers the relationship)
  POST   /api/v1/accounts/ID/unfollow         unfollow
  GET    /api/v1/accounts/ID                  an account
  GET    /api/v1/accounts/verify_credentials  the caller's account
  GET    /healthz                             up, degraded (a memcached or Redis
                                              down) or down (the database; 503)
  GET    /metrics                             Prometheus metrics

Status ids are message ids and account ids user ids, as decimal strings.
Timelines take max_id (older than), since_id (the newest newer than),
min_id (immediately newer than; since_id is then ignored) and limit
(default 20, at most %d), and answer with a Link header as Mastodon does:
rel="next" with max_id when older statuses remain, rel="prev" with min_id
on a page that has statuses.

The bearer token is the caller's user id: "Authorization: Bearer 42" acts
as user 42. THIS IS NOT AUTHENTICATION: anyone who reaches the server can
act as any user. So serve listens on loopback only and refuses another
address unless --allow-remote.

Errors are JSON {"error": "..."}: 400 a malformed parameter, 401 no token,
404 an unknown status (or another account's, to delete), 422 a status the
store refuses, 503 with Retry-After when the database is down or a request
runs out of --request-timeout.

/metrics has, besides the Go runtime's and the process's:
pushpull_http_requests_total{route,code} and
pushpull_http_request_duration_seconds{route,code} (a histogram),
pushpull_http_requests_in_flight, pushpull_http_untyped_errors_total (500s),
pushpull_store_work_total{counter} (the store's own counters),
pushpull_server_up{kind,server} (1 or 0 for the database, each memcached
and Redis) and, for an asynchronous model, pushpull_fanout_lag_seconds.

--status-cache-mb N keeps rendered statuses by id in a cache of N MiB
(default 0: none), so that a page copies the statuses it shows rather
than render them; every page still reads the store, and an entry serves
only the message it was rendered from. The oldest unused entries go
first; a delete evicts at once. It pays only where few statuses are read
very often: a hit costs about what rendering costs. Hits and misses are
pushpull_http_status_cache_total{result}.

SIGTERM or Ctrl-C shuts down gracefully: no new connection is accepted,
the requests in flight finish (for at most --grace), an asynchronous model
applies what it acknowledged, and the store closes.

The model's database and schema are created if missing, as for the other
commands; --model memory keeps everything in this process only.`, httpapi.MaxPageLimit),
		Example: `  pushpull serve --model {push}
  pushpull serve --model {pull} --listen 127.0.0.1:9000
  curl -H 'Authorization: Bearer 1' 'http://127.0.0.1:8080/api/v1/timelines/home?limit=5'
  curl -H 'Authorization: Bearer 2' -d status=hello http://127.0.0.1:8080/api/v1/statuses`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if model == "" {
				return usagef("--model is required: one of %s", strings.Join(registry.Names(registry.Listed()), ", "))
			}
			m, err := registry.Lookup(model)
			if err != nil {
				return usagef("unknown model %q: want one of %s", model, strings.Join(registry.Names(registry.Listed()), ", "))
			}
			if err := httpapi.CheckListen(listen, allowRemote); err != nil {
				if errors.Is(err, httpapi.ErrRemoteListen) {
					return usagef("--listen: %v (--allow-remote)", err)
				}
				return usagef("--listen: %v", err)
			}
			if maxConns < 1 || maxConns > 10000 {
				return usagef("--max-conns %d: want 1..10000", maxConns)
			}
			if cacheMB < 0 || cacheMB > maxStatusCacheMB {
				return usagef("--status-cache-mb %d: want 0 (no cache) to %d", cacheMB, maxStatusCacheMB)
			}
			if requestTimeout <= 0 || wait <= 0 {
				return usagef("--request-timeout and --grace must be positive")
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			sf.maxConns = maxConns
			var s timeline.Store
			hc := httpapi.Config{Model: m.Name, RequestTimeout: requestTimeout, StatusCacheBytes: int64(cacheMB) << 20}
			if m.Persistent() {
				if s, err = sf.openStore(ctx, m); err != nil {
					return err
				}
				if m.Needs&registry.Memcached != 0 {
					hc.Memcache, _ = sf.resolveMemcache(m)
				}
				if m.Needs&registry.Redis != 0 {
					hc.Redis, _ = sf.resolveRedis(m)
				}
				env, start := dsnEnv, "`pushpull sandbox`"
				if m.OnVitess() {
					env, start = vtgateEnv, "`pushpull sandbox --vitess`"
				}
				if dsn, err := sf.resolveServer(env, start); err == nil {
					hc.Database = serverAddr(dsn)
				}
			} else {
				if s, err = m.Open(ctx, registry.Config{}); err != nil {
					return err
				}
			}
			defer s.Close()
			hc.Store = s
			srv, err := httpapi.New(hc)
			if err != nil {
				return err
			}
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return err
			}
			stderr := cmd.ErrOrStderr()
			fmt.Fprintf(stderr, "serving %s on http://%s (the bearer token is a user id, not authentication)\n", m.Name, ln.Addr())
			err = srv.Run(ctx, ln, wait)
			if err != nil {
				return err
			}
			fmt.Fprintf(stderr, "stopped: requests finished, store settled\n")
			return s.Close()
		},
	}
	cmd.Flags().StringVar(&model, "model", "", "model to serve, one of: "+strings.Join(registry.Names(registry.Listed()), ", "))
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:8080", "address to listen on, host:port (loopback unless --allow-remote; port 0 picks a free one)")
	cmd.Flags().BoolVar(&allowRemote, "allow-remote", false, "listen beyond loopback although the token is no authentication")
	cmd.Flags().IntVar(&maxConns, "max-conns", 64, "most connections to the database")
	cmd.Flags().IntVar(&cacheMB, "status-cache-mb", 0, "memory for a cache of rendered statuses, in MiB (0: none, render every status afresh)")
	cmd.Flags().DurationVar(&requestTimeout, "request-timeout", httpapi.DefaultRequestTimeout, "most time a request may spend in the store; past it the answer is 503")
	cmd.Flags().DurationVar(&wait, "grace", 30*time.Second, "at shutdown, most time for the requests in flight to finish, and again for the store to settle")
	sf.register(cmd)
	return cmd
}
