package all_test

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/registry/registrytest"
	"github.com/pushpull/pushpull/timeline"
)

// everyModel returns the models --help lists and, for every variant, each
// base model Lookup lets it wrap: every registered model and variant, and
// the pairs nobody offers, whose options are checked all the same.
func everyModel(t *testing.T) []registry.Model {
	out := registry.Listed()
	for _, v := range registry.Variants() {
		for _, b := range registry.Models() {
			m, err := registry.Lookup(b.Name + "+" + v.Name)
			if err != nil || slices.ContainsFunc(out, func(x registry.Model) bool { return x.Name == m.Name }) {
				continue
			}
			out = append(out, m)
		}
	}
	if len(out) <= len(registry.Models()) {
		t.Fatalf("%d models, no variant", len(out))
	}
	return out
}

// opens are the ways a library user opens a model, each checking cfg.
var opens = map[string]func(m registry.Model, cfg registry.Config) (timeline.Store, error){
	"Lookup's Open": func(m registry.Model, cfg registry.Config) (timeline.Store, error) {
		return m.Open(context.Background(), cfg)
	},
	"OpenModel": func(m registry.Model, cfg registry.Config) (timeline.Store, error) {
		return registry.OpenModel(context.Background(), m.Name, cfg)
	},
}

// TestMisspelledOption: every model and variant refuses an option it does
// not declare, however it is opened, with an *OptionError that names the
// model and lists the options it declares.
func TestMisspelledOption(t *testing.T) {
	for _, m := range everyModel(t) {
		bad := registrytest.Misspelled(m)
		cfg := config(t, m, "never_made")
		cfg.Options = map[string]string{bad: "20"}
		for how, open := range opens {
			s, err := open(m, cfg)
			if err == nil {
				s.Close()
				t.Errorf("%s: %s opened with %s=20", how, m.Name, bad)
				continue
			}
			var oe *registry.OptionError
			if !errors.As(err, &oe) || !errors.Is(err, registry.ErrUnknownOption) || oe.Option != bad ||
				!reflect.DeepEqual(oe.Models, []string{m.Name}) || !slices.Equal(oe.Valid, m.OptionNames()) {
				t.Errorf("%s: %s with %s=20: %v (%#v), want an *OptionError naming it and listing %v", how, m.Name, bad, err, err, m.OptionNames())
			}
		}
	}
}

// TestMalformedOption: every declared option refuses a malformed or
// out-of-range value of its kind, and an empty one, before the model
// opens.
func TestMalformedOption(t *testing.T) {
	kinds := map[registry.Kind]bool{}
	for _, m := range everyModel(t) {
		for _, o := range m.Options {
			kinds[o.Kind] = true
			for _, v := range registrytest.Malformed(o) {
				cfg := config(t, m, "never_made")
				cfg.Options = map[string]string{o.Name: v}
				for how, open := range opens {
					s, err := open(m, cfg)
					if err == nil {
						s.Close()
						t.Errorf("%s: %s opened with %s=%q", how, m.Name, o.Name, v)
						continue
					}
					var oe *registry.OptionError
					if !errors.As(err, &oe) || !errors.Is(err, registry.ErrBadOption) || oe.Option != o.Name || oe.Value != v || oe.Reason == "" {
						t.Errorf("%s: %s with %s=%q: %v, want an *OptionError matching ErrBadOption", how, m.Name, o.Name, v, err)
					}
				}
			}
		}
	}
	for _, k := range []registry.Kind{registry.KindInt, registry.KindFloat, registry.KindDuration, registry.KindChoice} {
		if !kinds[k] {
			t.Errorf("no model declares an option of kind %s: its malformed values went untested", k)
		}
	}
}

// TestDefaultOptions: every model (those --help lists: every base model,
// and every variant over the bases that offer it) opens with each of its
// options given its declared default, and writes.
func TestDefaultOptions(t *testing.T) {
	for _, m := range registry.Listed() {
		t.Run(m.Name, func(t *testing.T) { // a keyspace each, given back at its end
			cfg := config(t, m, fresh(t, m))
			cfg.Options = map[string]string{}
			for _, o := range m.Options {
				cfg.Options[o.Name] = o.Default
			}
			s, err := m.Open(context.Background(), cfg)
			if err != nil {
				t.Fatalf("%s with the defaults %v: %v", m.Name, cfg.Options, err)
			}
			defer s.Close()
			if err := s.Follow(context.Background(), 1, 2); err != nil {
				t.Errorf("%s: follow: %v", m.Name, err)
			}
		})
	}
}
