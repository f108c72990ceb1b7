package sandbox

import (
	"context"
	"testing"
)

func TestRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("starts servers")
	}
	ctx := context.Background()
	sb, err := Start(ctx, Options{Redis: true, BaseDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Stop()
	p := sb.Redis()
	if p == nil || p.Addr() != sb.RedisAddr || !p.Running() {
		t.Fatalf("Redis() %v at RedisAddr %s", p, sb.RedisAddr)
	}
	first := p.Pid()
	if pid, err := RedisPid(sb.RedisAddr); err != nil || pid != first {
		t.Fatalf("redis at %s: pid %d, %v; want %d", sb.RedisAddr, pid, err, first)
	}
	if err := p.Freeze(); err != nil {
		t.Fatal(err)
	}
	if _, err := RedisPid(sb.RedisAddr); err == nil {
		t.Fatal("a frozen redis-server answered")
	}
	if err := p.Thaw(); err != nil {
		t.Fatal(err)
	}
	if err := p.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if pid, err := RedisPid(sb.RedisAddr); err != nil || pid != p.Pid() || pid == first {
		t.Fatalf("restarted redis at %s: pid %d, %v; want %d, not %d", sb.RedisAddr, pid, err, p.Pid(), first)
	}
	if err := sb.Stop(); err != nil {
		t.Fatal(err)
	}
	if p.Running() {
		t.Fatal("redis-server runs after Stop")
	}
}
