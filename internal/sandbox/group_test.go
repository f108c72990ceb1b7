package sandbox

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// groupChildEnv makes the test binary act as a process that starts a
// group server and waits to be killed (see TestGroupDiesWithItsStarter).
const groupChildEnv = "PUSHPULL_SANDBOX_GROUP_CHILD"

// TestMain lets the test binary play that process.
func TestMain(m *testing.M) {
	if os.Getenv(groupChildEnv) != "" {
		groupChild()
		return
	}
	os.Exit(m.Run())
}

// groupChild starts, as a sandbox server leading a process group, a shell
// that starts two more processes (as vttestserver starts vtcombo and
// mysqld), prints the group's id and blocks until it is killed.
func groupChild() {
	sb := &Sandbox{Dir: os.Getenv(groupChildEnv)}
	cmd := exec.Command("/bin/sh", "-c", "sleep 1000 & sleep 1000 & wait")
	srv, err := sb.spawnCmd("group", sb.Dir+"/group.log", cmd, true)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	// Wait until the shell has started its children, so that the group
	// outlives its leader if nothing kills it.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if out, _ := exec.Command("pgrep", "-g", strconv.Itoa(srv.cmd.Process.Pid)).Output(); strings.Count(string(out), "\n") >= 3 {
			break
		}
	}
	fmt.Println(srv.cmd.Process.Pid)
	select {}
}

// TestGroupDiesWithItsStarter: when the process that started a group
// server (a benchmark, a test binary) is killed without calling Stop, the
// whole group goes with it, not only its leader: vttestserver's
// children (vtcombo, mysqld_safe, mysqld) must not outlive a killed run.
func TestGroupDiesWithItsStarter(t *testing.T) {
	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), groupChildEnv+"="+t.TempDir())
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer child.Process.Kill()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("the child printed no group id: %v", err)
	}
	pgid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("the child said %q", line)
	}
	if err := syscall.Kill(-pgid, 0); err != nil {
		t.Fatalf("no process group %d: %v", pgid, err)
	}
	child.Process.Kill()
	child.Wait()
	for deadline := time.Now().Add(30 * time.Second); syscall.Kill(-pgid, 0) == nil; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			syscall.Kill(-pgid, syscall.SIGKILL)
			t.Fatalf("process group %d still has members 30s after the process that started it was killed", pgid)
		}
	}
}

// TestStopEndsGroupAndGuard: Stop ends a group server's whole group and
// its guard, leaving no process of either.
func TestStopEndsGroupAndGuard(t *testing.T) {
	sb := &Sandbox{Dir: t.TempDir()}
	srv, err := sb.spawnCmd("group", sb.Dir+"/group.log", exec.Command("/bin/sh", "-c", "sleep 1000 & sleep 1000 & wait"), true)
	if err != nil {
		t.Fatal(err)
	}
	if srv.guard == nil {
		t.Fatal("a group server without a guard")
	}
	pgid, guard := srv.cmd.Process.Pid, srv.guard.Process.Pid
	if err := sb.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, g := range []int{pgid, guard} {
		if err := syscall.Kill(-g, 0); err == nil {
			syscall.Kill(-g, syscall.SIGKILL)
			t.Errorf("process group %d still has members after Stop", g)
		}
	}
}
