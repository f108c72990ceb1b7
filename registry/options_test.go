package registry

import (
	"context"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pushpull/pushpull/timeline"
)

// declared are options of every kind, as a model declares them.
var declared = []Option{
	Int("cap", 800, 1, 1000, "entries kept"),
	Int("slack", 0, 1, 1000, "entries past the cap").OrZero("cap/8"),
	Float("ratio", 1, 0, 10, "a ratio").AboveMin(),
	Float("free", 0, math.Inf(-1), math.Inf(1), "any number"),
	Duration("window", 7*24*time.Hour, time.Microsecond, 1000*time.Hour, "a window"),
	Choice("policy", "a", []string{"a", "b"}, "a policy"),
}

// registerScratch registers a model with options that records the
// Config its Open is given.
func registerScratch(t *testing.T, name string, opts []Option, got *Config) Model {
	t.Helper()
	Register(Model{
		Name: name, Family: FamilyReference, Summary: "a test's", Needs: Memcached, Options: opts,
		Open: func(_ context.Context, cfg Config) (timeline.Store, error) {
			*got = cfg
			return timeline.NewMemory(), nil
		},
	})
	t.Cleanup(func() { Unregister(name) })
	m, err := Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestOptionParse(t *testing.T) {
	for _, c := range []struct {
		option, value string
		want          any // nil: refused
	}{
		{"cap", "1", 1}, {"cap", "1000", 1000}, {"cap", "0", nil}, {"cap", "1001", nil}, {"cap", "1.5", nil},
		{"cap", "", nil}, {"cap", " 5", nil}, {"cap", "ten", nil},
		{"slack", "0", 0}, {"slack", "-1", nil}, {"slack", "7", 7},
		{"ratio", "0", nil}, {"ratio", "1e-9", 1e-9}, {"ratio", "10", 10.0}, {"ratio", "10.5", nil}, {"ratio", "NaN", nil},
		{"free", "-1e300", -1e300}, {"free", "Inf", nil}, {"free", "x", nil},
		{"window", "168h", 168 * time.Hour}, {"window", "500ms", 500 * time.Millisecond}, {"window", "1000h", 1000 * time.Hour},
		{"window", "3600", nil}, {"window", "1001h", nil}, {"window", "999ns", nil}, {"window", "0s", nil},
		{"policy", "b", "b"}, {"policy", "B", nil}, {"policy", "c", nil},
	} {
		m := Model{Name: "scratch", Options: declared}
		o, _ := m.Option(c.option)
		got, err := o.parse(c.value)
		switch {
		case c.want == nil && err == nil:
			t.Errorf("%s=%q: took %v", c.option, c.value, got)
		case c.want != nil && (err != nil || got != c.want):
			t.Errorf("%s=%q: %v (%v), want %v", c.option, c.value, got, err, c.want)
		}
	}
}

func TestOptionValues(t *testing.T) {
	for _, c := range []struct{ option, want string }{
		{"cap", "an integer from 1 to 1000"},
		{"slack", "0 (cap/8), or an integer from 1 to 1000"},
		{"ratio", "a number above 0, at most 10"},
		{"free", "a number"},
		{"window", "a Go duration from 1µs to 1000h"},
		{"policy", "a or b"},
	} {
		o, _ := Model{Options: declared}.Option(c.option)
		if got := o.Values(); got != c.want {
			t.Errorf("%s: %q, want %q", c.option, got, c.want)
		}
	}
	if o := Duration("d", 168*time.Hour, time.Minute, math.MaxInt64, "h"); o.Default != "168h" || o.Min != "1m" || o.Max != "" {
		t.Errorf("durations written %q, %q, %q; want 168h, 1m and no bound", o.Default, o.Min, o.Max)
	}
}

// TestEffectiveOptions: every option a model declares, with the value
// given or its default; options it does not declare are left out, and a
// model without options has none.
func TestEffectiveOptions(t *testing.T) {
	got := Model{Options: declared}.EffectiveOptions(map[string]string{"cap": "5", "policy": "b", "other": "x"})
	want := map[string]string{"cap": "5", "slack": "0", "ratio": "1", "free": "0", "window": "168h", "policy": "b"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%v, want %v", got, want)
	}
	if got := (Model{}).EffectiveOptions(map[string]string{"cap": "5"}); got != nil {
		t.Errorf("a model without options: %v, want none", got)
	}
}

// TestCheckedOpen: a Model's Open from the registry checks the servers and
// the options, and hands the Open registered every option parsed.
func TestCheckedOpen(t *testing.T) {
	var got Config
	m := registerScratch(t, "scratch-options", declared, &got)
	ctx := context.Background()
	servers := Config{Memcache: []string{"127.0.0.1:1"}}

	if _, err := m.Open(ctx, Config{Options: map[string]string{"cap": "5"}}); !errors.Is(err, ErrMissingServer) {
		t.Errorf("no memcached: %v, want ErrMissingServer", err)
	}
	cfg := servers
	cfg.Options = map[string]string{"cpa": "20", "cap": "5"}
	_, err := m.Open(ctx, cfg)
	var oe *OptionError
	if !errors.As(err, &oe) || !errors.Is(err, ErrUnknownOption) || oe.Option != "cpa" ||
		!reflect.DeepEqual(oe.Valid, []string{"cap", "free", "policy", "ratio", "slack", "window"}) || oe.Models[0] != m.Name {
		t.Fatalf("misspelled option: %#v", err)
	}
	if want := `model scratch-options: unknown option "cpa" (valid: cap, free, policy, ratio, slack, window)`; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	if _, err := OpenModel(ctx, m.Name, cfg); !errors.Is(err, ErrUnknownOption) {
		t.Errorf("OpenModel: %v", err)
	}
	if err := m.CheckConfig(cfg); !errors.Is(err, ErrUnknownOption) {
		t.Errorf("CheckConfig: %v", err)
	}

	cfg.Options = map[string]string{"cap": "0"}
	if _, err := m.Open(ctx, cfg); !errors.As(err, &oe) || !errors.Is(err, ErrBadOption) || oe.Option != "cap" ||
		err.Error() != `model scratch-options: option cap="0": want an integer from 1 to 1000` {
		t.Errorf("cap out of bounds: %v", err)
	}

	cfg.Options = map[string]string{"cap": "5", "window": "30s", "policy": "b"}
	s, err := m.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if got.Int("cap") != 5 || got.Int("slack") != 0 || got.Float("ratio") != 1 || got.Duration("window") != 30*time.Second || got.Choice("policy") != "b" {
		t.Errorf("parsed %v", got.parsed)
	}
	for _, read := range []func(){func() { got.Int("nothing") }, func() { got.Float("cap") }} {
		func() {
			defer func() {
				if recover() == nil {
					t.Error("reading an option not declared, or of another kind, did not panic")
				}
			}()
			read()
		}()
	}
}

// TestVariantOptions: base+variant takes the options of both, each checked
// by its own declaration, and refuses those of neither.
func TestVariantOptions(t *testing.T) {
	var got Config
	registerScratch(t, "scratch-base", []Option{Int("cap", 8, 1, 100, "a cap")}, &got)
	var wrapped Config
	RegisterVariant(Variant{
		Name: "scratchvariant", Summary: "a test's", Options: []Option{Choice("policy", "a", []string{"a", "b"}, "a policy")},
		Accepts:  func(Model) bool { return true },
		Describe: func(b Model) string { return b.Name + " wrapped" },
		Wrap: func(_ context.Context, _ Model, inner timeline.Store, cfg Config) (timeline.Store, error) {
			wrapped = cfg
			return inner, nil
		},
	})
	m, err := Lookup("scratch-base+scratchvariant")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(m.OptionNames(), []string{"cap", "policy"}) {
		t.Fatalf("options %v", m.OptionNames())
	}
	cfg := Config{Memcache: []string{"127.0.0.1:1"}, Options: map[string]string{"cap": "3", "policy": "b"}}
	s, err := m.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if got.Int("cap") != 3 || wrapped.Choice("policy") != "b" {
		t.Errorf("base got cap %d, variant policy %q", got.Int("cap"), wrapped.Choice("policy"))
	}
	for opts, want := range map[string]error{"cap=300": ErrBadOption, "policy=c": ErrBadOption, "ttl=1s": ErrUnknownOption} {
		k, v, _ := strings.Cut(opts, "=")
		cfg.Options = map[string]string{k: v}
		if _, err := m.Open(context.Background(), cfg); !errors.Is(err, want) {
			t.Errorf("%s: %v, want %v", opts, err, want)
		}
	}
}

// TestCheckShared: options given to several models go to those that
// declare them; one that none declares names them all.
func TestCheckShared(t *testing.T) {
	var got Config
	a := registerScratch(t, "scratch-a", []Option{Int("cap", 8, 1, 100, "a cap")}, &got)
	b := registerScratch(t, "scratch-b", []Option{Int("threshold", 8, 1, 100, "a threshold"), Int("cap", 8, 1, 10, "a smaller cap")}, &got)
	c := registerScratch(t, "scratch-c", nil, &got)
	ms := []Model{a, b, c}
	if err := CheckShared(ms, map[string]string{"cap": "5", "threshold": "50"}); err != nil {
		t.Fatal(err)
	}
	if got := c.OwnOptions(map[string]string{"cap": "5"}); got != nil {
		t.Errorf("a model without options owns %v", got)
	}
	if got := b.OwnOptions(map[string]string{"cap": "5", "x": "1"}); !reflect.DeepEqual(got, map[string]string{"cap": "5"}) {
		t.Errorf("own options %v", got)
	}
	err := CheckShared(ms, map[string]string{"cap": "50"}) // too large for b's
	var oe *OptionError
	if !errors.As(err, &oe) || !errors.Is(err, ErrBadOption) || oe.Models[0] != b.Name {
		t.Errorf("a value one model refuses: %v", err)
	}
	err = CheckShared(ms, map[string]string{"treshold": "50"})
	if want := `unknown option "treshold": none of the models scratch-a, scratch-b, scratch-c declares it (valid: cap, threshold)`; !errors.Is(err, ErrUnknownOption) || err.Error() != want {
		t.Errorf("%v, want %s", err, want)
	}
	err = CheckShared([]Model{c}, map[string]string{"cap": "5"})
	if want := `model scratch-c: unknown option "cap" (it takes no options)`; err == nil || err.Error() != want {
		t.Errorf("%v, want %s", err, want)
	}
	if s := OptionsTaken(ms, map[string]string{"cap": "5", "threshold": "50"}); s != "cap=5 (scratch-a, scratch-b), threshold=50 (scratch-b)" {
		t.Errorf("OptionsTaken: %q", s)
	}
}

// TestMalformedDeclarations: Register refuses an option whose default it
// would not take, or a name declared twice.
func TestMalformedDeclarations(t *testing.T) {
	for name, opts := range map[string][]Option{
		"default out of bounds": {Int("cap", 0, 1, 10, "a cap")},
		"declared twice":        {Int("cap", 1, 1, 10, "a cap"), Int("cap", 2, 1, 10, "a cap")},
		"bad name":              {Int("Cap", 1, 1, 10, "a cap")},
		"no help":               {Int("cap", 1, 1, 10, "")},
		"empty choice":          {Choice("policy", "a", nil, "a policy")},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: registered", name)
					Unregister("scratch-bad")
				}
			}()
			Register(Model{Name: "scratch-bad", Family: FamilyReference, Summary: "bad", Options: opts,
				Open: func(context.Context, Config) (timeline.Store, error) { return nil, nil }})
		}()
	}
}

func TestOptionCheck(t *testing.T) {
	o := Duration("window", time.Hour, time.Microsecond, time.Hour, "a window")
	if err := o.Check("m", 30*time.Minute); err != nil {
		t.Error(err)
	}
	var oe *OptionError
	if err := o.Check("m", 2*time.Hour); !errors.As(err, &oe) || oe.Value != "2h" || !errors.Is(err, ErrBadOption) {
		t.Errorf("2h: %v", err)
	}
}

func TestTraits(t *testing.T) {
	if s := (Async | WriteHooks).String(); s != "asynchronous writes, write hooks" {
		t.Errorf("%q", s)
	}
	if Traits(0).String() != "none" || !(Async | Partial).Has(Partial) || Partial.Has(Async|Partial) {
		t.Error("Traits")
	}
}
