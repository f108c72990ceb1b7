package cost

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"net"
	"strconv"
	"strings"
	"time"
)

// WithRedis makes m's snapshots also take the counters of the
// redis-server at addr ("host:port"): its commands (INFO stats and
// commandstats), bytes and CPU time (INFO cpu).
func (m *Meter) WithRedis(addr string) *Meter {
	m.redis = addr
	return m
}

// RedisStats returns the counters of the redis-server at addr that a
// Snapshot takes, under these names: "scripts" (script runs: the calls
// of EVAL and EVALSHA in INFO commandstats), "commands" (every command it
// ran, a script run and the commands it ran each counting one:
// total_commands_processed), "net_bytes" (total_net_input_bytes plus
// total_net_output_bytes), "cpu_us" (used_cpu_user plus used_cpu_sys, in
// microseconds), "used_memory" (bytes) and "used_memory_dataset" (bytes:
// used_memory less the server's own overhead).
func RedisStats(addr string) (map[string]int64, error) {
	info, err := redisInfo(addr, "all")
	if err != nil {
		return nil, fmt.Errorf("redis INFO from %s: %w", addr, err)
	}
	out := map[string]int64{}
	num := func(k string) (float64, bool) {
		v, ok := info[k]
		if !ok {
			return 0, false
		}
		f, err := strconv.ParseFloat(v, 64)
		return f, err == nil
	}
	for _, k := range []string{"total_commands_processed", "total_net_input_bytes", "total_net_output_bytes", "used_cpu_user", "used_cpu_sys", "used_memory"} {
		if _, ok := num(k); !ok {
			return nil, fmt.Errorf("redis INFO from %s: no %s", addr, k)
		}
	}
	get := func(k string) float64 { v, _ := num(k); return v }
	out["commands"] = int64(get("total_commands_processed"))
	out["net_bytes"] = int64(get("total_net_input_bytes") + get("total_net_output_bytes"))
	out["cpu_us"] = int64(math.Round((get("used_cpu_user") + get("used_cpu_sys")) * 1e6))
	out["used_memory"] = int64(get("used_memory"))
	out["used_memory_dataset"] = int64(get("used_memory_dataset"))
	var scripts int64
	for k, v := range info {
		if k != "cmdstat_eval" && k != "cmdstat_evalsha" {
			continue
		}
		// calls=12,usec=34,usec_per_call=2.83,...
		for field := range strings.SplitSeq(v, ",") {
			if n, ok := strings.CutPrefix(field, "calls="); ok {
				c, _ := strconv.ParseInt(n, 10, 64)
				scripts += c
			}
		}
	}
	out["scripts"] = scripts
	return out, nil
}

// redisInfo sends INFO section to the server at addr and returns its
// fields by name.
func redisInfo(addr, section string) (map[string]string, error) {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := fmt.Fprintf(conn, "*2\r\n$4\r\nINFO\r\n$%d\r\n%s\r\n", len(section), section); err != nil {
		return nil, err
	}
	r := bufio.NewReader(conn)
	head, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	if !strings.HasPrefix(head, "$") {
		return nil, fmt.Errorf("unexpected answer %q", strings.TrimSpace(head))
	}
	n, err := strconv.Atoi(strings.TrimSpace(head[1:]))
	if err != nil || n < 0 {
		return nil, fmt.Errorf("unexpected answer %q", strings.TrimSpace(head))
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for line := range strings.Lines(string(body)) {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok && !strings.HasPrefix(k, "#") {
			out[k] = v
		}
	}
	return out, nil
}
