package loadgen

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/pushpull/pushpull/httpapi"
	"github.com/pushpull/pushpull/loadgen/workload"
	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/results"
	"github.com/pushpull/pushpull/timeline"
)

// readsOverHTTP measures m's newest pages through the HTTP API (see
// BenchConfig.HTTP): the newest-page phase again, with the same users,
// through a server of package httpapi on a loopback port of this process,
// read by httpapi.Client.
func (b *bench) readsOverHTTP(ctx context.Context, m registry.Model, s timeline.Store, dur time.Duration) (results.Phase, error) {
	srv, err := httpapi.New(httpapi.Config{Store: s, Model: m.Name, Memcache: b.memcache, Redis: b.redis})
	if err != nil {
		return results.Phase{}, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return results.Phase{}, err
	}
	sctx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- srv.Run(sctx, ln, time.Minute) }()
	client := httpapi.NewClient(ln.Addr().String())
	p, err := b.phase(ctx, m.Name+"/retrieve-http", dur, workload.NewestPage(client, b.data, b.cfg.Spec.Seed), nil)
	client.Close()
	stop()
	if serr := <-served; err == nil && serr != nil {
		err = fmt.Errorf("the HTTP server of %s: %w", m.Name, serr)
	}
	return p, err
}
