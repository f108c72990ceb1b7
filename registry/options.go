package registry

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Kind is what values an option takes.
type Kind string

// The kinds of options.
const (
	// KindInt is a whole number in decimal.
	KindInt Kind = "integer"
	// KindFloat is a finite number.
	KindFloat Kind = "number"
	// KindDuration is a Go duration (time.ParseDuration).
	KindDuration Kind = "duration"
	// KindChoice is one of Option.Choices.
	KindChoice Kind = "choice"
)

// Option declares an option of a model or a variant.
type Option struct {
	// Name is how users give it: lower case letters, digits and '_'.
	Name string
	Kind Kind
	// Default is the value the model uses when the option is not given,
	// written as a user would write it. It parses, within the bounds.
	Default string
	// Help says in a line what the option sets (and what a special
	// value, such as 0 or -1, means).
	Help string
	// Min and Max bound an integer, number or duration, written as its
	// values are: inclusive, "" for no bound. Above excludes Min itself
	// (a number that must be above 0).
	Min, Max string
	Above    bool
	// Zero, if set, says what 0 (or 0s) means: the option takes it
	// besides its bounds, for a setting whose default is derived (from
	// another option, or measured) rather than a number.
	Zero string
	// Choices are the values of a choice.
	Choices []string
}

// Int declares an integer option from min to max (math.MaxInt: no upper
// bound).
func Int(name string, def, min, max int, help string) Option {
	o := Option{Name: name, Kind: KindInt, Default: strconv.Itoa(def), Help: help, Min: strconv.Itoa(min)}
	if max != math.MaxInt {
		o.Max = strconv.Itoa(max)
	}
	return o
}

// Float declares a number option from min to max (-Inf, +Inf: no bound);
// see AboveMin to exclude min.
func Float(name string, def, min, max float64, help string) Option {
	o := Option{Name: name, Kind: KindFloat, Default: formatFloat(def), Help: help}
	if !math.IsInf(min, -1) {
		o.Min = formatFloat(min)
	}
	if !math.IsInf(max, 1) {
		o.Max = formatFloat(max)
	}
	return o
}

// Duration declares a duration option from min to max (math.MaxInt64: no
// upper bound).
func Duration(name string, def, min, max time.Duration, help string) Option {
	o := Option{Name: name, Kind: KindDuration, Default: FormatDuration(def), Help: help, Min: FormatDuration(min)}
	if max != math.MaxInt64 {
		o.Max = FormatDuration(max)
	}
	return o
}

// FormatDuration is d as time.Duration's String writes it, without the
// zero minutes and seconds that follow whole hours or minutes: "168h",
// "1m", "1h30m", "500ms". Duration options are written so.
func FormatDuration(d time.Duration) string {
	s := d.String()
	if t, ok := strings.CutSuffix(s, "m0s"); ok {
		s = t + "m"
	}
	if t, ok := strings.CutSuffix(s, "h0m"); ok {
		s = t + "h"
	}
	return s
}

// Choice declares an option that takes one of choices.
func Choice(name, def string, choices []string, help string) Option {
	return Option{Name: name, Kind: KindChoice, Default: def, Help: help, Choices: slices.Clone(choices)}
}

// AboveMin returns o with its Min excluded: the value must be greater.
func (o Option) AboveMin() Option {
	o.Above = true
	return o
}

// OrZero returns o taking 0 (0s) besides its bounds, meaning meaning.
func (o Option) OrZero(meaning string) Option {
	o.Zero = meaning
	return o
}

func formatFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// Values describes the values o takes, e.g. "an integer from 1 to
// 1000000", "a Go duration from 1µs to 876000h", "invalidate or ttl",
// "0 (measured), or a number above 0".
func (o Option) Values() string {
	if o.Kind == KindChoice {
		return strings.Join(o.Choices, " or ")
	}
	what := map[Kind]string{KindInt: "an integer", KindFloat: "a number", KindDuration: "a Go duration"}[o.Kind]
	switch {
	case o.Above && o.Max != "":
		what = fmt.Sprintf("%s above %s, at most %s", what, o.Min, o.Max)
	case o.Above:
		what = fmt.Sprintf("%s above %s", what, o.Min)
	case o.Min != "" && o.Max != "":
		what = fmt.Sprintf("%s from %s to %s", what, o.Min, o.Max)
	case o.Min != "":
		what = fmt.Sprintf("%s, at least %s", what, o.Min)
	case o.Max != "":
		what = fmt.Sprintf("%s, at most %s", what, o.Max)
	}
	if o.Zero != "" {
		what = fmt.Sprintf("%s (%s), or %s", o.zero(), o.Zero, what)
	}
	return what
}

// zero is how o's zero is written.
func (o Option) zero() string {
	if o.Kind == KindDuration {
		return "0s"
	}
	return "0"
}

// parse returns v as o's kind (int, float64, time.Duration or string), or
// why it cannot be o's value.
func (o Option) parse(v string) (any, error) {
	if v == "" {
		return nil, errors.New("empty; want " + o.Values() + " (leave the option out for its default, " + o.Default + ")")
	}
	switch o.Kind {
	case KindInt:
		return parseBounded(o, v, strconv.Atoi)
	case KindFloat:
		return parseBounded(o, v, parseFinite)
	case KindDuration:
		return parseBounded(o, v, time.ParseDuration)
	case KindChoice:
		if !slices.Contains(o.Choices, v) {
			return nil, errors.New("want " + o.Values())
		}
		return v, nil
	}
	return nil, fmt.Errorf("option of unknown kind %q", o.Kind)
}

// parseFinite is strconv.ParseFloat of a finite number.
func parseFinite(s string) (float64, error) {
	f, err := strconv.ParseFloat(s, 64)
	if err == nil && (math.IsNaN(f) || math.IsInf(f, 0)) {
		err = errors.New("not a finite number")
	}
	return f, err
}

// parseBounded parses v with parse and checks it against o's bounds
// (parsed alike) and o.Zero.
func parseBounded[T int | float64 | time.Duration](o Option, v string, parse func(string) (T, error)) (any, error) {
	bad := errors.New("want " + o.Values())
	x, err := parse(v)
	if err != nil {
		return nil, bad
	}
	if x == 0 && o.Zero != "" {
		return x, nil
	}
	for _, b := range []struct {
		bound   string
		outside func(x, b T) bool
	}{
		{o.Min, func(x, b T) bool { return x < b || x == b && o.Above }},
		{o.Max, func(x, b T) bool { return x > b }},
	} {
		if b.bound == "" {
			continue
		}
		limit, err := parse(b.bound)
		if err != nil {
			return nil, fmt.Errorf("bound %q: %w", b.bound, err)
		}
		if b.outside(x, limit) {
			return nil, bad
		}
	}
	return x, nil
}

// Check reports whether v, a value of o's kind (int, float64,
// time.Duration or string), is one o takes: nil, or an *OptionError of
// model matching ErrBadOption. Packages whose own Config holds an option's
// setting check it with the option's declaration, so that the bounds are
// written once.
func (o Option) Check(model string, v any) error {
	var s string
	var kind Kind
	switch x := v.(type) {
	case int:
		s, kind = strconv.Itoa(x), KindInt
	case float64:
		s, kind = formatFloat(x), KindFloat
	case time.Duration:
		s, kind = FormatDuration(x), KindDuration
	case string:
		s, kind = x, KindChoice
	}
	if kind != o.Kind {
		panic(fmt.Sprintf("registry: option %s, of kind %s, checked with a %T", o.Name, o.Kind, v))
	}
	if _, err := o.parse(s); err != nil {
		return &OptionError{Models: []string{model}, Option: o.Name, Value: s, Reason: err.Error(), Err: ErrBadOption}
	}
	return nil
}

// checkOptions reports what is wrong with the declarations of owner (a
// model or a variant): every one must be well formed, named once, and its
// default must parse within its bounds.
func checkOptions(owner string, opts []Option) error {
	seen := map[string]bool{}
	for _, o := range opts {
		switch {
		case !optionName(o.Name):
			return fmt.Errorf("%s: option name %q: want lower case letters, digits and '_'", owner, o.Name)
		case seen[o.Name]:
			return fmt.Errorf("%s: option %s declared twice", owner, o.Name)
		case o.Help == "":
			return fmt.Errorf("%s: option %s has no Help", owner, o.Name)
		case o.Kind == KindChoice && len(o.Choices) == 0:
			return fmt.Errorf("%s: option %s is a choice among nothing", owner, o.Name)
		}
		seen[o.Name] = true
		if _, err := o.parse(o.Default); err != nil {
			return fmt.Errorf("%s: option %s: default %q: %v", owner, o.Name, o.Default, err)
		}
	}
	return nil
}

func optionName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') {
			return false
		}
	}
	return true
}

// ErrUnknownOption means an option was given to a model that does not
// declare it.
var ErrUnknownOption = errors.New("unknown option")

// ErrBadOption means an option's value is malformed or out of its bounds.
var ErrBadOption = errors.New("bad option value")

// OptionError is an option a model cannot take. Err is ErrUnknownOption
// or ErrBadOption.
type OptionError struct {
	// Models are the model the option was given to, or, for an option
	// given to several at once (the benchmark's), those models.
	Models []string
	Option string
	Value  string
	// Valid lists, for an unknown option, the options the models
	// declare.
	Valid []string
	// Reason says, for a bad value, what is wrong with it.
	Reason string
	Err    error
}

func (e *OptionError) Error() string {
	if e.Err == ErrUnknownOption {
		valid := "valid: " + strings.Join(e.Valid, ", ")
		if len(e.Valid) == 0 {
			valid = "it takes no options"
			if len(e.Models) > 1 {
				valid = "none of them takes options"
			}
		}
		if len(e.Models) == 1 {
			return fmt.Sprintf("model %s: unknown option %q (%s)", e.Models[0], e.Option, valid)
		}
		return fmt.Sprintf("unknown option %q: none of the models %s declares it (%s)", e.Option, strings.Join(e.Models, ", "), valid)
	}
	return fmt.Sprintf("model %s: option %s=%q: %s", strings.Join(e.Models, ", "), e.Option, e.Value, e.Reason)
}

func (e *OptionError) Unwrap() error { return e.Err }

// Option returns m's declaration of the option name.
func (m Model) Option(name string) (Option, bool) {
	i := slices.IndexFunc(m.Options, func(o Option) bool { return o.Name == name })
	if i < 0 {
		return Option{}, false
	}
	return m.Options[i], true
}

// OptionNames returns the names of m's options, sorted.
func (m Model) OptionNames() []string {
	out := make([]string, len(m.Options))
	for i, o := range m.Options {
		out[i] = o.Name
	}
	slices.Sort(out)
	return out
}

// CheckOptions reports whether m takes opts: nil, or an *OptionError for
// the first (by name) that it does not declare or whose value it does not
// take.
func (m Model) CheckOptions(opts map[string]string) error {
	_, err := m.parseOptions(opts)
	return err
}

// parseOptions returns every option m declares, parsed from opts or from
// its default.
func (m Model) parseOptions(opts map[string]string) (map[string]any, error) {
	for _, name := range slices.Sorted(maps.Keys(opts)) {
		if _, ok := m.Option(name); !ok {
			return nil, &OptionError{Models: []string{m.Name}, Option: name, Value: opts[name], Valid: m.OptionNames(), Err: ErrUnknownOption}
		}
	}
	out := make(map[string]any, len(m.Options))
	for _, o := range m.Options {
		v, given := opts[o.Name]
		if !given {
			v = o.Default
		}
		x, err := o.parse(v)
		if err != nil {
			return nil, &OptionError{Models: []string{m.Name}, Option: o.Name, Value: v, Reason: err.Error(), Err: ErrBadOption}
		}
		out[o.Name] = x
	}
	return out, nil
}

// EffectiveOptions returns every option m declares with the value it takes
// under opts: the one opts gives it, else its default (nil when m
// declares none). It is what a benchmark run records of the model it
// opened with opts (results.Model.Options), so that its cost model can be
// evaluated later as it ran (WorkFor).
func (m Model) EffectiveOptions(opts map[string]string) map[string]string {
	var out map[string]string
	for _, o := range m.Options {
		if out == nil {
			out = map[string]string{}
		}
		v, given := opts[o.Name]
		if !given {
			v = o.Default
		}
		out[o.Name] = v
	}
	return out
}

// OwnOptions returns the options of opts that m declares (nil if none).
func (m Model) OwnOptions(opts map[string]string) map[string]string {
	var out map[string]string
	for name, v := range opts {
		if _, ok := m.Option(name); ok {
			if out == nil {
				out = map[string]string{}
			}
			out[name] = v
		}
	}
	return out
}

// CheckShared checks options given to several models at once, as the
// benchmark's --option gives them: each must be declared by at least one
// of ms, and its value taken by every one that declares it. A model that
// does not declare an option is opened without it (OwnOptions). The
// error is an *OptionError: for an option none declares, it names every
// model and lists the options they declare.
func CheckShared(ms []Model, opts map[string]string) error {
	for _, name := range slices.Sorted(maps.Keys(opts)) {
		declared := false
		for _, m := range ms {
			if _, ok := m.Option(name); !ok {
				continue
			}
			declared = true
			if err := m.CheckOptions(map[string]string{name: opts[name]}); err != nil {
				return err
			}
		}
		if !declared {
			valid := map[string]bool{}
			for _, m := range ms {
				for _, o := range m.Options {
					valid[o.Name] = true
				}
			}
			e := &OptionError{Models: Names(ms), Option: name, Value: opts[name], Valid: slices.Sorted(maps.Keys(valid)), Err: ErrUnknownOption}
			if len(ms) == 1 {
				e.Valid = ms[0].OptionNames()
			}
			return e
		}
	}
	return nil
}

// OptionsTaken says which of ms take each of opts (given to all of them,
// as CheckShared checks them), e.g. "cap=400 (push-capped), threshold=500
// (hybrid, hybrid-memcached)".
func OptionsTaken(ms []Model, opts map[string]string) string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(opts)) {
		var took []string
		for _, m := range ms {
			if _, ok := m.Option(name); ok {
				took = append(took, m.Name)
			}
		}
		out = append(out, fmt.Sprintf("%s=%s (%s)", name, opts[name], strings.Join(took, ", ")))
	}
	return strings.Join(out, ", ")
}

// Int returns the integer option name of the model being opened (given,
// or its default). It panics if the model does not declare name as an
// integer, or if cfg did not come through the registry's check: a model's
// Open reads only what it declares, from a Model's checked Open.
func (c Config) Int(name string) int { return option[int](c, name) }

// Float returns the number option name of the model being opened; see Int.
func (c Config) Float(name string) float64 { return option[float64](c, name) }

// Duration returns the duration option name of the model being opened;
// see Int.
func (c Config) Duration(name string) time.Duration { return option[time.Duration](c, name) }

// Choice returns the choice option name of the model being opened; see
// Int.
func (c Config) Choice(name string) string { return option[string](c, name) }

func option[T any](c Config, name string) T {
	v, ok := c.parsed[name]
	if !ok {
		panic(fmt.Sprintf("registry: option %s read, but not declared by the model being opened (or the Config was not checked by its Model's Open)", name))
	}
	x, ok := v.(T)
	if !ok {
		panic(fmt.Sprintf("registry: option %s is a %T, read as a %T", name, v, x))
	}
	return x
}
