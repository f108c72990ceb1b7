// Package hostcpu reads the machine's CPU time as the kernel counts it
// (/proc/stat): how long all its CPUs together were busy, idle, and
// stolen, the time a hypervisor ran something else on them while this
// machine had work to run.
//
// Stolen time is charged to no process, so a benchmark that reads only
// its processes' CPU cannot see it; yet every operation that wanted a CPU
// meanwhile waited, and a latency objective can fail for the neighbours
// of a virtual machine. A benchmark step reads Times before and after and
// reports the Share stolen beside its figures.
package hostcpu

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Times is the CPU time of all the machine's CPUs together since boot.
type Times struct {
	// Busy is user, nice, system, irq and softirq time (a guest's time
	// is within user and nice).
	Busy time.Duration
	// Idle is idle and iowait time.
	Idle time.Duration
	// Steal is the time a hypervisor gave the CPUs to another machine
	// while this one was runnable; 0 on bare metal.
	Steal time.Duration
}

// All is every CPU's time, busy, idle and stolen: the wall time times the
// CPUs.
func (t Times) All() time.Duration { return t.Busy + t.Idle + t.Steal }

// userHZ is the unit of /proc's CPU times (/proc/stat, /proc/PID/stat):
// USER_HZ ticks, 100 a second on every Linux architecture Go runs on.
const userHZ = 100

// Ticks is n of /proc's CPU time ticks as a duration.
func Ticks(n int64) time.Duration { return time.Duration(n) * time.Second / userHZ }

// statFile is the kernel's file; a variable for the tests.
var statFile = "/proc/stat"

// Read reads the machine's CPU times now. It fails where /proc/stat is
// missing (not Linux) or has no line for all the CPUs.
func Read() (Times, error) {
	b, err := os.ReadFile(statFile)
	if err != nil {
		return Times{}, fmt.Errorf("hostcpu: %w", err)
	}
	return parse(b)
}

// parse reads the first line of a /proc/stat: "cpu" then user, nice,
// system, idle, iowait, irq, softirq and steal ticks (kernels before 2.6.11
// stop before steal, which is then 0).
func parse(b []byte) (Times, error) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || f[0] != "cpu" {
			continue
		}
		if len(f) < 8 {
			return Times{}, fmt.Errorf("hostcpu: the cpu line has %d fields, want at least 7 times", len(f)-1)
		}
		var v [8]int64
		for i := range v {
			if i+1 >= len(f) {
				break
			}
			n, err := strconv.ParseInt(f[i+1], 10, 64)
			if err != nil || n < 0 {
				return Times{}, fmt.Errorf("hostcpu: time %d of the cpu line is %q, want ticks", i+1, f[i+1])
			}
			v[i] = n
		}
		return Times{
			Busy:  Ticks(v[0] + v[1] + v[2] + v[5] + v[6]),
			Idle:  Ticks(v[3] + v[4]),
			Steal: Ticks(v[7]),
		}, nil
	}
	return Times{}, errors.New("hostcpu: no cpu line")
}

// Share is the share of all the CPUs' time between before and after that
// was stolen (0 to 1); false when no time passed between them or a count
// went backward.
func Share(before, after Times) (float64, bool) {
	all := after.All() - before.All()
	steal := after.Steal - before.Steal
	if all <= 0 || steal < 0 || after.Busy < before.Busy || after.Idle < before.Idle {
		return 0, false
	}
	return float64(steal) / float64(all), true
}
