package sandbox

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// RedisListpackEntries is the sandbox redis-server's
// zset-max-listpack-entries: a sorted set of up to this many members is
// kept in Redis's compact listpack encoding (7 to 12 bytes a member for
// the sets of ids the models keep) instead of a skiplist (about 95), at
// the price of inserts that scan the set. Redis's default is 128; 1024
// holds nearly every pull-redis index. (push-redis keeps its feeds in
// lists, compact at any length.)
const RedisListpackEntries = 1024

// startRedis starts a redis-server on a free loopback port: no
// persistence (no RDB snapshots, no append-only file), so that a restart
// starts empty as memcached's does, and what it holds is only ever state
// derived from MariaDB; sorted sets of up to RedisListpackEntries members
// are kept compact.
func (sb *Sandbox) startRedis(ctx context.Context) error {
	bin, err := lookPath("redis-server")
	if err != nil {
		return fmt.Errorf("start redis: %w", err)
	}
	args := func(port int) []string {
		return []string{
			"--bind", "127.0.0.1", "--port", strconv.Itoa(port),
			"--save", "", "--appendonly", "no", "--dir", sb.Dir,
			"--daemonize", "no", "--protected-mode", "yes", "--maxclients", "4096",
			"--zset-max-listpack-entries", strconv.Itoa(RedisListpackEntries),
		}
	}
	p, err := sb.startOnFreePort(ctx, "redis-server", bin, filepath.Join(sb.Dir, "redis.log"), args, RedisPid)
	if err != nil {
		return err
	}
	sb.redis = p
	sb.RedisAddr = p.addr
	return nil
}

// Redis returns the handle of the sandbox's redis-server, or nil if it
// started none.
func (sb *Sandbox) Redis() *Proc { return sb.redis }

// RedisPid asks the redis-server at addr for its process id (INFO
// server), waiting at most a second to connect and a second for the
// answer. Fault tests use it to tell which process answers on a port.
func RedisPid(addr string) (int, error) {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Second))
	if _, err := io.WriteString(c, "*2\r\n$4\r\nINFO\r\n$6\r\nserver\r\n"); err != nil {
		return 0, err
	}
	r := bufio.NewReader(c)
	head, err := r.ReadString('\n')
	if err != nil {
		return 0, err
	}
	if !strings.HasPrefix(head, "$") {
		// -LOADING and the like: not ready yet.
		return 0, fmt.Errorf("unexpected answer to INFO: %q", strings.TrimSpace(head))
	}
	n, err := strconv.Atoi(strings.TrimSpace(head[1:]))
	if err != nil || n < 0 {
		return 0, fmt.Errorf("unexpected answer to INFO: %q", strings.TrimSpace(head))
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(body)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "process_id:"); ok {
			return strconv.Atoi(v)
		}
	}
	return 0, errors.New("no process_id in redis INFO server")
}
