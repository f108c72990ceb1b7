package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/pushpull/pushpull/timeline"
)

// The states of a server and of the whole.
const (
	statusUp       = "up"
	statusDegraded = "degraded"
	statusDown     = "down"
)

// pingTimeout bounds /healthz's ping of the database.
const pingTimeout = 2 * time.Second

// serverStatus is one server in /healthz.
type serverStatus struct {
	Kind   string `json:"kind"` // "database", "memcached", "redis"
	Server string `json:"server"`
	Status string `json:"status"` // statusUp or statusDown
}

// health is /healthz's answer.
type health struct {
	Status  string         `json:"status"`
	Model   string         `json:"model,omitempty"`
	Servers []serverStatus `json:"servers"`
}

// checkServers says which of the store's servers answer: its database,
// pinged (timeline.DBHolder), and the memcached and Redis servers it was
// opened with, down when the store names them (timeline.Degraded).
func checkServers(cfg Config) []serverStatus {
	var out []serverStatus
	if h, ok := timeline.As[timeline.DBHolder](cfg.Store); ok {
		ctx, cancel := context.WithTimeout(context.Background(), pingTimeout)
		defer cancel()
		st := statusUp
		if err := h.DB().PingContext(ctx); err != nil {
			st = statusDown
		}
		out = append(out, serverStatus{Kind: "database", Server: cfg.Database, Status: st})
	}
	var down []string
	if d, ok := timeline.As[timeline.Degraded](cfg.Store); ok {
		down = d.DownServers()
	}
	add := func(kind, addr string) {
		st := statusUp
		if slices.Contains(down, addr) {
			st = statusDown
		}
		out = append(out, serverStatus{Kind: kind, Server: addr, Status: st})
	}
	for _, a := range cfg.Memcache {
		add("memcached", a)
	}
	if cfg.Redis != "" {
		add("redis", cfg.Redis)
	}
	return out
}

// healthz serves GET /healthz: "up" when every server answers, "degraded"
// when the database does and a memcached or Redis does not (the store
// works without them, more slowly), "down" when the database does not.
// It answers 200 unless down, 503 then.
func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	h := health{Status: statusUp, Model: s.cfg.Model, Servers: checkServers(s.cfg)}
	for _, sv := range h.Servers {
		switch {
		case sv.Status == statusUp:
		case sv.Kind == "database":
			h.Status = statusDown
		case h.Status == statusUp:
			h.Status = statusDegraded
		}
	}
	code := http.StatusOK
	if h.Status == statusDown {
		code = http.StatusServiceUnavailable
		w.Header().Set("Retry-After", strconv.Itoa(RetryAfter))
	}
	b, _ := json.Marshal(h)
	send(w, code, b)
}
