// Package registrytest helps the tests that go over every model's
// declared options (package registry's Option): a name a model does not
// take, and values an option must refuse.
package registrytest

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/pushpull/pushpull/registry"
)

// Misspelled returns a name m does not declare, close to one it does: its
// first option's name with its first two letters swapped ("cap": "acp";
// "h": "hh"), or "cpa" for a model without options.
func Misspelled(m registry.Model) string {
	name := "cpa"
	if len(m.Options) > 0 {
		n := m.Options[0].Name
		if len(n) < 2 || n[0] == n[1] {
			name = n + n
		} else {
			name = n[1:2] + n[:1] + n[2:]
		}
	}
	for {
		if _, ok := m.Option(name); !ok {
			return name
		}
		name += "x"
	}
}

// Malformed returns values o must refuse: empty, of another kind, and
// just outside each of its bounds (skipping the 0 that o.Zero admits).
func Malformed(o registry.Option) []string {
	out := []string{""}
	switch o.Kind {
	case registry.KindInt:
		out = append(out, "x", "1.5", "1e3")
		if o.Min != "" {
			n, _ := strconv.Atoi(o.Min)
			if n-1 == 0 && o.Zero != "" {
				n--
			}
			out = append(out, strconv.Itoa(n-1))
		}
		if o.Max != "" {
			n, _ := strconv.Atoi(o.Max)
			out = append(out, strconv.Itoa(n+1))
		}
	case registry.KindFloat:
		out = append(out, "x", "NaN", "Inf", "1,5")
		if o.Min != "" {
			f, _ := strconv.ParseFloat(o.Min, 64)
			below := math.Nextafter(f, math.Inf(-1))
			if o.Above {
				below = f
			}
			if below == 0 && o.Zero != "" {
				below = -1
			}
			out = append(out, strconv.FormatFloat(below, 'g', -1, 64))
		}
		if o.Max != "" {
			f, _ := strconv.ParseFloat(o.Max, 64)
			out = append(out, strconv.FormatFloat(math.Nextafter(f, math.Inf(1)), 'g', -1, 64))
		}
	case registry.KindDuration:
		out = append(out, "x", "5", "1d")
		if o.Min != "" {
			d, _ := time.ParseDuration(o.Min)
			below := d - time.Nanosecond
			if below == 0 && o.Zero != "" {
				below = -time.Nanosecond
			}
			out = append(out, below.String())
		}
		if o.Max != "" {
			d, _ := time.ParseDuration(o.Max)
			out = append(out, (d + time.Nanosecond).String())
		}
	case registry.KindChoice:
		out = append(out, "x"+o.Default)
		if up := strings.ToUpper(o.Default); up != o.Default {
			out = append(out, up)
		}
	}
	return out
}
