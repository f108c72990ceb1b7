package testserver

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// MemcachedProc is a private memcached that a test may kill.
type MemcachedProc struct {
	Addr string // host:port
	Port int
	cmd  *exec.Cmd
	done chan struct{}
}

// FreePort returns a TCP port on 127.0.0.1 that nothing listened on a
// moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// StartMemcached starts a private memcached on port (0: a free one), with
// extra arguments, and stops it when the test ends. It fails the test if
// memcached does not start; with a fixed port it returns nil instead, so
// that a caller can tell a port taken in the meantime.
func StartMemcached(t testing.TB, port int, extra ...string) *MemcachedProc {
	t.Helper()
	bin, err := exec.LookPath("memcached")
	if err != nil {
		t.Skipf("memcached not installed: %v", err)
	}
	tries := 5
	if port != 0 {
		tries = 1
	}
	for range tries {
		p := port
		if p == 0 {
			p = FreePort(t)
		}
		args := append([]string{"-l", "127.0.0.1", "-p", strconv.Itoa(p), "-U", "0", "-m", "16"}, extra...)
		if os.Geteuid() == 0 {
			args = append(args, "-u", "root")
		}
		cmd := exec.Command(bin, args...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		// Kill memcached if the test binary dies; see internal/sandbox.
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
		runtime.LockOSThread()
		err := cmd.Start()
		runtime.UnlockOSThread()
		if err != nil {
			t.Fatalf("start memcached: %v", err)
		}
		mp := &MemcachedProc{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(p)), Port: p, cmd: cmd, done: make(chan struct{})}
		go func() {
			cmd.Wait()
			close(mp.done)
		}()
		t.Cleanup(mp.Kill)
		if mp.waitReady() {
			return mp
		}
		mp.Kill()
		t.Logf("memcached on port %d did not start: %s", p, stderr.String())
	}
	if port != 0 {
		return nil
	}
	t.Fatal("could not start a private memcached")
	return nil
}

func (mp *MemcachedProc) waitReady() bool {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-mp.done:
			return false
		default:
		}
		if c, err := net.DialTimeout("tcp", mp.Addr, time.Second); err == nil {
			c.SetDeadline(time.Now().Add(time.Second))
			fmt.Fprintf(c, "version\r\n")
			line, err := bufio.NewReader(c).ReadString('\n')
			c.Close()
			if err == nil && strings.HasPrefix(line, "VERSION") {
				return true
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

// Kill ends this memcached (by its pid) and waits for it to exit.
func (mp *MemcachedProc) Kill() {
	select {
	case <-mp.done:
		return
	default:
	}
	mp.cmd.Process.Kill()
	<-mp.done
}
