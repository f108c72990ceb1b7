package main

import (
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/pushpull/pushpull/internal/sandbox"
)

// sandboxManaged are mariadbd options the sandbox sets itself; overriding
// them would break it.
var sandboxManaged = []string{"datadir", "socket", "skip_networking", "pid_file", "log_error", "tmpdir", "user", "no_defaults"}

func newSandboxCmd() *cobra.Command {
	var (
		memcachedMB int
		sets        []string
		dir         string
		withVitess  bool
		shards      int
	)
	cmd := &cobra.Command{
		Use:   "sandbox [--memcached-mb N] [--set key=value ...] [--dir DIR] [--vitess [--shards N]]",
		Short: "Run a private MariaDB, memcached and Redis until interrupted",
		Long: `sandbox starts a private MariaDB server, a private memcached and a private
Redis in a new temporary directory, prints how to reach them, and keeps them
running until it gets SIGINT (Ctrl-C) or SIGTERM. Then it stops the servers
and removes the directory with everything in it.

MariaDB listens only on a unix socket inside the directory, as root without a
password; memcached and Redis listen on free ports on 127.0.0.1, and Redis
keeps nothing on disk. Nothing is installed or configured system-wide, and no
system service is touched. The servers come from the mariadb-server,
memcached and redis-server packages ('make deps' installs them).

MariaDB runs with the benchmark's settings (internal/sandbox.DefaultSettings:
a 6G buffer pool, a 2G redo log, durable commits, MariaDB's thread pool:
thread_handling=pool-of-threads); --set overrides one
mariadbd option, and may be repeated. Option names may use '-' or '_'. The
settings in effect are printed at start. If the directory is on tmpfs and
mariadbd fails to start, add --set innodb_flush_method=fsync: some kernels do
not support O_DIRECT there.

With --vitess it also starts a Vitess cluster (vitess.io/vitess, built on first
use or by 'make deps'): vttestserver with a keyspace of --shards shards for each
of the push and pull models on Vitess (the models named ...@vitess), on a
mysqld of its own, run as an unprivileged user, listening on loopback only. It
prints the vtgate's DSN, which those models take as --dsn or $PUSHPULL_VTGATE.

The last lines on standard output are export commands: paste them into another
shell and the other pushpull commands find the servers without --dsn.`,
		Example: `  pushpull sandbox
  pushpull sandbox --set innodb_buffer_pool_size=1G --set innodb_log_file_size=256M
  pushpull sandbox --memcached-mb 1024 --dir /var/tmp
  pushpull sandbox --vitess --shards 4`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if memcachedMB <= 0 {
				return usagef("--memcached-mb must be positive, got %d", memcachedMB)
			}
			if shards < 1 || shards > 256 {
				return usagef("--shards %d: want 1 to 256", shards)
			}
			if cmd.Flags().Changed("shards") && !withVitess {
				return usagef("--shards goes with --vitess")
			}
			settings := sandbox.DefaultSettings()
			overrides, err := parseSettings(sets)
			if err != nil {
				return err
			}
			overridden := map[string]bool{}
			for k, v := range overrides {
				settings[k] = v
				overridden[k] = true
			}

			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			stderr := cmd.ErrOrStderr()
			fmt.Fprintln(stderr, "pushpull sandbox: starting MariaDB, memcached and Redis...")
			if withVitess {
				fmt.Fprintf(stderr, "pushpull sandbox: and a Vitess cluster of %d shards per keyspace (a minute or so; the first time, Vitess is built first)...\n", shards)
			}
			start := time.Now()
			sb, err := sandbox.Start(ctx, sandbox.Options{
				MariaDB:     true,
				Memcached:   true,
				Redis:       true,
				Settings:    settings,
				MemcachedMB: memcachedMB,
				BaseDir:     dir,
				Vitess:      withVitess,
				Shards:      shards,
			})
			if err != nil {
				return err
			}
			defer sb.Stop()
			fmt.Fprintf(stderr, "pushpull sandbox: ready in %v\n", time.Since(start).Round(100*time.Millisecond))

			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "MariaDB DSN:    %s\n", sb.DSN)
			fmt.Fprintf(out, "memcached:      %s (%d MB)\n", sb.MemcacheAddr, memcachedMB)
			fmt.Fprintf(out, "Redis:          %s (no persistence)\n", sb.RedisAddr)
			if withVitess {
				fmt.Fprintf(out, "vtgate DSN:     %s (keyspaces %s, %d shards each; status at http://%s/)\n",
					sb.VtgateDSN, strings.Join(sb.Keyspaces, ", "), sb.Shards, sb.VtgateStatus)
			}
			fmt.Fprintf(out, "directory:      %s (removed on exit)\n", sb.Dir)
			fmt.Fprintln(out, "mariadbd settings in effect:")
			keys := make([]string, 0, len(sb.Settings))
			for k := range sb.Settings {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				note := ""
				if overridden[k] {
					note = "  (--set)"
				}
				fmt.Fprintf(out, "  %-32s %s%s\n", k, sb.Settings[k], note)
			}
			fmt.Fprintln(out)
			fmt.Fprintf(out, "export %s=%s\n", dsnEnv, shellQuote(sb.DSN))
			fmt.Fprintf(out, "export %s=%s\n", memcacheEnv, shellQuote(sb.MemcacheAddr))
			fmt.Fprintf(out, "export %s=%s\n", redisEnv, shellQuote(sb.RedisAddr))
			if withVitess {
				fmt.Fprintf(out, "export %s=%s\n", vtgateEnv, shellQuote(sb.VtgateDSN))
			}
			fmt.Fprintln(stderr, "pushpull sandbox: running; press Ctrl-C to stop the servers and remove the directory")

			<-ctx.Done()
			stop()
			fmt.Fprintln(stderr, "pushpull sandbox: stopping...")
			if err := sb.Stop(); err != nil {
				return err
			}
			fmt.Fprintf(stderr, "pushpull sandbox: stopped; removed %s\n", sb.Dir)
			return nil
		},
	}
	cmd.Flags().IntVar(&memcachedMB, "memcached-mb", 256, "memcached's memory limit in MB")
	cmd.Flags().StringArrayVar(&sets, "set", nil, "override a mariadbd option, as key=value (repeatable)")
	cmd.Flags().BoolVar(&withVitess, "vitess", false, "also start a Vitess cluster for the models on Vitess")
	cmd.Flags().IntVar(&shards, "shards", 2, "shards per keyspace of the Vitess cluster")
	cmd.Flags().StringVar(&dir, "dir", "", "where to make the sandbox directory (default $PUSHPULL_SANDBOX_DIR, else the system temp directory)")
	return cmd
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// parseSettings reads --set key=value options for a sandboxed mariadbd.
func parseSettings(sets []string) (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range sets {
		k, v, ok := strings.Cut(kv, "=")
		k = strings.ReplaceAll(strings.TrimPrefix(strings.TrimSpace(k), "--"), "-", "_")
		if !ok || k == "" {
			return nil, usagef("--set %q: want key=value, e.g. innodb_buffer_pool_size=1G", kv)
		}
		if slices.Contains(sandboxManaged, k) {
			return nil, usagef("--set %s: the sandbox sets this option itself", k)
		}
		out[k] = v
	}
	return out, nil
}
