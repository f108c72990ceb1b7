package httpapi

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/pushpull/pushpull/timeline"
)

// The metrics at /metrics, besides the Go runtime's and the process's:
//
//	pushpull_http_requests_total{route,code}            requests answered
//	pushpull_http_request_duration_seconds{route,code}  their latency (histogram)
//	pushpull_http_requests_in_flight                    requests being served
//	pushpull_http_untyped_errors_total                  500s: errors the library does not type
//	pushpull_http_status_cache_total{result}            statuses answered from the cache (hit) or rendered (miss)
//	pushpull_store_work_total{counter}                  the store's own counters (timeline.Counting)
//	pushpull_server_up{kind,server}                     1 when a server the store uses answers, else 0
//	pushpull_fanout_lag_seconds                         post to last follower's mailbox (timeline.Lagging)
//
// route is the name of the route ("home", "status_post", ...), code the
// status code answered.
type metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	inFlight prometheus.Gauge
	untyped  prometheus.Counter
	hits     prometheus.Counter // of the status cache
	misses   prometheus.Counter
}

// latencyBuckets span a cached page (a few hundred microseconds) to a
// request that runs out of time.
var latencyBuckets = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

func newMetrics(cfg Config) (*metrics, error) {
	reg := cfg.Registry
	if reg == nil {
		reg = prometheus.NewRegistry()
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	m := &metrics{
		reg: reg,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pushpull_http_requests_total", Help: "HTTP requests answered, by route and status code.",
		}, []string{"route", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "pushpull_http_request_duration_seconds", Help: "Time to answer an HTTP request, by route and status code.",
			Buckets: latencyBuckets,
		}, []string{"route", "code"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "pushpull_http_requests_in_flight", Help: "HTTP requests being served.",
		}),
		untyped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "pushpull_http_untyped_errors_total", Help: "Requests answered 500: the store failed with an error the library does not type.",
		}),
	}
	cache := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pushpull_http_status_cache_total", Help: "Statuses answered from the cache of rendered statuses (hit) or rendered for it (miss).",
	}, []string{"result"})
	m.hits, m.misses = cache.WithLabelValues("hit"), cache.WithLabelValues("miss")
	for _, c := range []prometheus.Collector{m.requests, m.latency, m.inFlight, m.untyped, cache, newStoreCollector(cfg)} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// handler serves the registry's metrics.
func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// cached counts the statuses of an answer that the cache c held (hits)
// and those it rendered (misses); nothing without a cache.
func (m *metrics) cached(c *statusCache, hits, misses int) {
	if c == nil {
		return
	}
	if hits > 0 {
		m.hits.Add(float64(hits))
	}
	if misses > 0 {
		m.misses.Add(float64(misses))
	}
}

// recorder remembers the status code a handler wrote.
type recorder struct {
	http.ResponseWriter
	code int
}

func (r *recorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

// instrument counts and times h's requests under route.
func (m *metrics) instrument(route string, h http.Handler) http.Handler {
	// The label values of a success, resolved once: most requests.
	okCount := m.requests.WithLabelValues(route, "200")
	okLatency := m.latency.WithLabelValues(route, "200")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		m.inFlight.Inc()
		defer m.inFlight.Dec()
		rec := &recorder{ResponseWriter: w}
		h.ServeHTTP(rec, r)
		took := time.Since(start).Seconds()
		if rec.code == 0 || rec.code == http.StatusOK {
			okCount.Inc()
			okLatency.Observe(took)
			return
		}
		code := strconv.Itoa(rec.code)
		m.requests.WithLabelValues(route, code).Inc()
		m.latency.WithLabelValues(route, code).Observe(took)
	})
}

// storeCollector reports, at each scrape, what the store says of itself:
// its counters (timeline.Counting), whether its servers answer (health),
// and the fan-out lag recorded since the last scrape (timeline.Lagging),
// added to a histogram kept since the server started.
type storeCollector struct {
	cfg       Config
	work      *prometheus.Desc
	up        *prometheus.Desc
	lag       *prometheus.Desc
	mu        sync.Mutex
	lagCounts []uint64 // per lagBuckets, not cumulative, plus one for above
	lagSum    float64
	lagTotal  uint64
}

// lagBuckets are the fan-out lag histogram's upper bounds, in seconds.
var lagBuckets = []float64{0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60}

func newStoreCollector(cfg Config) *storeCollector {
	return &storeCollector{
		cfg: cfg,
		work: prometheus.NewDesc("pushpull_store_work_total",
			"The store's own counts of its work since it opened (rows read, cache hits, ...), by counter key.", []string{"counter"}, nil),
		up: prometheus.NewDesc("pushpull_server_up",
			"1 when a server the store uses answers, 0 when it is down (the store works without a memcached or Redis that is down).", []string{"kind", "server"}, nil),
		lag: prometheus.NewDesc("pushpull_fanout_lag_seconds",
			"Asynchronous fan-out: time from a post to its last follower's mailbox row.", nil, nil),
		lagCounts: make([]uint64, len(lagBuckets)+1),
	}
}

// Describe sends nothing: the counters a store reports are known only
// when it is asked (an unchecked collector).
func (c *storeCollector) Describe(chan<- *prometheus.Desc) {}

// Collect reports the store's counters, its servers and its lag.
func (c *storeCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.cfg.Store
	if ct, ok := timeline.As[timeline.Counting](s); ok {
		for k, v := range ct.Counters() {
			ch <- prometheus.MustNewConstMetric(c.work, prometheus.CounterValue, float64(v), k)
		}
	}
	for _, sv := range checkServers(c.cfg) {
		up := 0.0
		if sv.Status == statusUp {
			up = 1
		}
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, up, sv.Kind, sv.Server)
	}
	if l, ok := timeline.As[timeline.Lagging](s); ok {
		ch <- c.takeLag(l)
	}
}

// takeLag adds the lag recorded since the last scrape to the histogram
// and returns it.
func (c *storeCollector) takeLag(l timeline.Lagging) prometheus.Metric {
	c.mu.Lock()
	defer c.mu.Unlock()
	if h := l.TakeLag(); h != nil && h.TotalCount() > 0 {
		for _, bar := range h.Distribution() {
			if bar.Count == 0 {
				continue
			}
			sec := float64(bar.To) / 1e6
			i := 0
			for i < len(lagBuckets) && lagBuckets[i] < sec {
				i++
			}
			c.lagCounts[i] += uint64(bar.Count)
		}
		c.lagSum += h.Mean() * float64(h.TotalCount()) / 1e6
		c.lagTotal += uint64(h.TotalCount())
	}
	buckets := make(map[float64]uint64, len(lagBuckets))
	var cum uint64
	for i, ub := range lagBuckets {
		cum += c.lagCounts[i]
		buckets[ub] = cum
	}
	return prometheus.MustNewConstHistogram(c.lag, c.lagTotal, c.lagSum, buckets)
}
