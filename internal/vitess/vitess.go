// Package vitess builds and locates the Vitess programs pushpull's sandbox
// runs: vttestserver, which starts vtcombo (vtgate, vttablets and vtctld in
// one process with an in-memory topology) over one mysqld that holds every
// shard, and mysqlctl, which vttestserver runs to start that mysqld.
//
// They are built from vitess.io/vitess at Version in a module of their own
// (internal/vitess/tools), so that Vitess's few hundred dependencies stay
// out of pushpull's go.mod, with CGO_ENABLED=0 (Vitess is pure Go). The
// built programs and the config directory Vitess ships in its module are
// kept in Dir, a cache outside the repository, and built again only when
// missing. Install does it; `make deps` runs it ahead of the tests.
//
// Two edits let v0.24.0's vttestserver run on Debian's MariaDB 10.11,
// which Vitess no longer supports officially: config/mycnf/test-suite.cnf
// loses "super-read-only = false", an option MariaDB does not know, and
// config/init_db.sql loses the statements that set super_read_only.
package vitess

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
)

// Version is the Vitess release pushpull builds; internal/vitess/tools
// requires it.
const Version = "v0.24.0"

// Programs are the commands Install builds into Dir()/bin.
var Programs = []string{"vttestserver", "vtcombo", "mysqlctl"}

// ErrNotInstalled means the programs are not built and cannot be built
// here (no Go toolchain, or no source tree of pushpull to build from).
var ErrNotInstalled = errors.New("vitess programs not installed (run `make deps`)")

// Dir is where the programs and their config live: $PUSHPULL_VITESS_DIR,
// else /var/cache/pushpull/vitess-<Version> for root (a directory the
// unprivileged user vttestserver runs as can read, which root's home is
// not), else the user's cache directory.
func Dir() (string, error) {
	if d := os.Getenv("PUSHPULL_VITESS_DIR"); d != "" {
		return filepath.Abs(d)
	}
	name := "vitess-" + Version
	if os.Geteuid() == 0 {
		return filepath.Join("/var/cache/pushpull", name), nil
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("vitess: no cache directory: %w", err)
	}
	return filepath.Join(cache, "pushpull", name), nil
}

// Installed reports whether dir holds every program and the config.
func Installed(dir string) bool {
	for _, p := range Programs {
		if st, err := os.Stat(filepath.Join(dir, "bin", p)); err != nil || st.Mode()&0o111 == 0 {
			return false
		}
	}
	_, err := os.Stat(filepath.Join(dir, "config", "init_db.sql"))
	return err == nil
}

// Install returns Dir(), building the programs there first if they are
// missing. Progress goes to log. Concurrent calls (test packages run in
// parallel) wait for one build under a lock file.
func Install(ctx context.Context, log io.Writer) (string, error) {
	dir, err := Dir()
	if err != nil {
		return "", err
	}
	if Installed(dir) {
		return dir, nil
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", fmt.Errorf("vitess: %w", err)
	}
	lock, err := os.OpenFile(dir+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", fmt.Errorf("vitess: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", fmt.Errorf("vitess: lock %s: %w", lock.Name(), err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	if Installed(dir) { // built while we waited
		return dir, nil
	}
	tools, err := toolsDir()
	if err != nil {
		return "", err
	}
	if err := build(ctx, log, tools, dir); err != nil {
		return "", fmt.Errorf("vitess: build %s: %w", Version, err)
	}
	return dir, nil
}

// toolsDir finds internal/vitess/tools in the source tree this package was
// compiled from.
func toolsDir() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", ErrNotInstalled
	}
	d := filepath.Join(filepath.Dir(file), "tools")
	if _, err := os.Stat(filepath.Join(d, "go.mod")); err != nil {
		return "", fmt.Errorf("%w: no source tree at %s", ErrNotInstalled, d)
	}
	return d, nil
}

// build compiles the programs into a scratch directory beside dir, copies
// and edits the config, and renames the result into place, so that an
// interrupted build never leaves a dir that Installed accepts.
func build(ctx context.Context, log io.Writer, tools, dir string) error {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return fmt.Errorf("%w: %w", ErrNotInstalled, err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), filepath.Base(dir)+".build-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	run := func(args ...string) ([]byte, error) {
		cmd := exec.CommandContext(ctx, goBin, args...)
		cmd.Dir = tools
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-mod=readonly -buildvcs=false")
		var stderr bytes.Buffer
		cmd.Stderr = io.MultiWriter(&stderr, log)
		out, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, stderr.Bytes())
		}
		return out, nil
	}
	fmt.Fprintf(log, "vitess: building %s from vitess.io/vitess %s (a few minutes the first time)\n", strings.Join(Programs, ", "), Version)
	args := []string{"build", "-o", filepath.Join(tmp, "bin") + "/"}
	for _, p := range Programs {
		args = append(args, "vitess.io/vitess/go/cmd/"+p)
	}
	if _, err := run(args...); err != nil {
		return err
	}
	src, err := run("list", "-m", "-f", "{{.Dir}}", "vitess.io/vitess")
	if err != nil {
		return err
	}
	if err := os.CopyFS(filepath.Join(tmp, "config"), os.DirFS(filepath.Join(strings.TrimSpace(string(src)), "config"))); err != nil {
		return fmt.Errorf("copy config: %w", err)
	}
	if err := editConfig(filepath.Join(tmp, "config")); err != nil {
		return err
	}
	// The module cache is read-only; the copy must be readable by the
	// unprivileged user vttestserver runs as.
	if err := filepath.Walk(tmp, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		mode := os.FileMode(0o644)
		if info.IsDir() || info.Mode()&0o111 != 0 {
			mode = 0o755
		}
		return os.Chmod(p, mode)
	}); err != nil {
		return err
	}
	os.RemoveAll(dir)
	if err := os.Rename(tmp, dir); err != nil {
		return err
	}
	fmt.Fprintf(log, "vitess: installed in %s\n", dir)
	return nil
}

// editConfig makes the config run on MariaDB 10.11 (see the package doc).
func editConfig(config string) error {
	for _, e := range []struct {
		file string
		drop func(line string) bool
	}{
		{"mycnf/test-suite.cnf", func(l string) bool { return strings.HasPrefix(strings.TrimSpace(l), "super-read-only") }},
		{"init_db.sql", func(l string) bool {
			l = strings.TrimSpace(l)
			return strings.HasPrefix(strings.ToUpper(l), "SET ") && strings.Contains(l, "super_read_only")
		}},
	} {
		path := filepath.Join(config, e.file)
		b, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("edit config: %w", err)
		}
		var out []string
		dropped := 0
		for _, l := range strings.Split(string(b), "\n") {
			if e.drop(l) {
				dropped++
				continue
			}
			out = append(out, l)
		}
		if dropped == 0 {
			return fmt.Errorf("edit config: %s: nothing to drop; has Vitess %s changed it?", e.file, Version)
		}
		if err := os.WriteFile(path, []byte(strings.Join(out, "\n")), 0o644); err != nil {
			return fmt.Errorf("edit config: %w", err)
		}
	}
	return nil
}

// RunAs is the user vttestserver runs as. mysqlctl refuses to run as root,
// so root runs it as $PUSHPULL_VITESS_USER, else "nobody"; anyone else
// runs it as themselves (nil).
func RunAs() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	name := os.Getenv("PUSHPULL_VITESS_USER")
	if name == "" {
		name = "nobody"
	}
	u, err := user.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("vitess: mysqlctl does not run as root, and user %q to run it as is missing (set PUSHPULL_VITESS_USER): %w", name, err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(err1, err2); err != nil || uid == 0 {
		return nil, fmt.Errorf("vitess: user %q cannot run mysqlctl (uid %s)", name, u.Uid)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}
