// Package clientbench measures the two maintained Go clients of Redis,
// go-redis and rueidis, on the two calls push-redis makes most: a post's
// fan-out (one pipeline of ZADD to 40 feeds) and a page read (one
// ZREVRANGEBYSCORE with a cursor bound and a limit). It is a module of its
// own so that pushpull depends on the client it chose only.
//
//	cd internal/redisclient/clientbench && go test -bench . -benchtime 3s
//
// TestMain starts a private redis-server on a free loopback port, without
// persistence, and stops it by its pid when the benchmarks end.
package clientbench

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
)

var addr string

func TestMain(m *testing.M) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	cmd := exec.Command("redis-server", "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", os.TempDir())
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "redis-server:", err)
		os.Exit(1)
	}
	code := 1
	for range 200 {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			code = m.Run()
			break
		}
		time.Sleep(25 * time.Millisecond)
	}
	cmd.Process.Kill()
	cmd.Wait()
	os.Exit(code)
}

// feeds is how many followers' feeds one post's fan-out writes to: about
// the paper's 42.9 followees per user.
const feeds = 40

// page is the page read: a feed of 800 ids, the newest 20 below a cursor.
const (
	feedLen = 800
	page    = 20
)

func BenchmarkFanOut(b *testing.B) {
	ctx := context.Background()
	b.Run("go-redis", func(b *testing.B) {
		c := goredis.NewClient(&goredis.Options{Addr: addr})
		defer c.Close()
		c.FlushAll(ctx)
		var next atomic.Int64
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				id := int(next.Add(1))
				p := c.Pipeline()
				for i := range feeds {
					p.ZAdd(ctx, "f:"+strconv.Itoa(i), goredis.Z{Score: float64(id), Member: id})
				}
				if _, err := p.Exec(ctx); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	b.Run("rueidis", func(b *testing.B) {
		c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true})
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		c.Do(ctx, c.B().Flushall().Build())
		var next atomic.Int64
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			cmds := make(rueidis.Commands, feeds)
			for pb.Next() {
				id := int(next.Add(1))
				for i := range feeds {
					cmds[i] = c.B().Zadd().Key("f:"+strconv.Itoa(i)).ScoreMember().ScoreMember(float64(id), strconv.Itoa(id)).Build()
				}
				for _, r := range c.DoMulti(ctx, cmds...) {
					if err := r.Error(); err != nil {
						b.Error(err)
						return
					}
				}
			}
		})
	})
}

func BenchmarkPage(b *testing.B) {
	ctx := context.Background()
	fill := func(add func(key string, id int)) {
		for i := range feeds {
			for id := 1; id <= feedLen; id++ {
				add("p:"+strconv.Itoa(i), id)
			}
		}
	}
	b.Run("go-redis", func(b *testing.B) {
		c := goredis.NewClient(&goredis.Options{Addr: addr})
		defer c.Close()
		c.FlushAll(ctx)
		fill(func(key string, id int) { c.ZAdd(ctx, key, goredis.Z{Score: float64(id), Member: id}) })
		var next atomic.Int64
		b.ResetTimer()
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				n := int(next.Add(1))
				ids, err := c.ZRevRangeByScore(ctx, "p:"+strconv.Itoa(n%feeds), &goredis.ZRangeBy{
					Max: "(" + strconv.Itoa(feedLen/2), Min: "-inf", Count: page}).Result()
				if err != nil || len(ids) != page {
					b.Error(err, len(ids))
					return
				}
			}
		})
	})
	b.Run("rueidis", func(b *testing.B) {
		c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true})
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		c.Do(ctx, c.B().Flushall().Build())
		fill(func(key string, id int) {
			c.Do(ctx, c.B().Zadd().Key(key).ScoreMember().ScoreMember(float64(id), strconv.Itoa(id)).Build())
		})
		var next atomic.Int64
		b.ResetTimer()
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				n := int(next.Add(1))
				ids, err := c.Do(ctx, c.B().Zrevrangebyscore().Key("p:"+strconv.Itoa(n%feeds)).
					Max("("+strconv.Itoa(feedLen/2)).Min("-inf").Limit(0, page).Build()).AsStrSlice()
				if err != nil || len(ids) != page {
					b.Error(err, len(ids))
					return
				}
			}
		})
	})
}
