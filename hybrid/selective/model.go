package selective

import (
	"context"
	"strconv"
	"time"

	"github.com/pushpull/pushpull/push"
	"github.com/pushpull/pushpull/registry"
	schema "github.com/pushpull/pushpull/sql"
	"github.com/pushpull/pushpull/timeline"
)

func init() {
	registry.Register(registry.Model{
		Name:     ModelName,
		Family:   registry.FamilyHybrid,
		Schema:   schema.Selective,
		Database: DefaultDatabase,
		Needs:    registry.MariaDB,
		Summary:  "push or pull per follow edge (Feeding Frenzy): pushed when the follower reads at least H/L times as often as the author posts, from decayed rates and measured costs (options h, l, halflife, flush, reads_per_post)",
		Open:     openModel,
		Bench:    registry.Bench{Phases: registry.AllPhases, WriteRank: 2},
	})
}

// openModel opens the model from a registry.Config: its options (Option*)
// set Config's fields; a bad one is a *ConfigError, before anything is
// written.
func openModel(ctx context.Context, cfg registry.Config) (timeline.Store, error) {
	c := Config{Config: push.ConfigFrom(cfg)}
	float := func(name string, dst *float64) error {
		v, ok := cfg.Options[name]
		if !ok || v == "" {
			return nil
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || !(f > 0) {
			return &ConfigError{Field: "option " + name, Value: strconv.Quote(v), Reason: "want a positive number"}
		}
		*dst = f
		return nil
	}
	var halfLife float64
	for name, dst := range map[string]*float64{OptionH: &c.H, OptionL: &c.L, OptionReadsPerPost: &c.ReadsPerPost, OptionHalfLife: &halfLife} {
		if err := float(name, dst); err != nil {
			return nil, err
		}
	}
	c.HalfLife = time.Duration(halfLife * float64(time.Second))
	if v, ok := cfg.Options[OptionFlushEvery]; ok && v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return nil, &ConfigError{Field: "option " + OptionFlushEvery, Value: strconv.Quote(v), Reason: "want a positive integer"}
		}
		c.FlushEvery = n
	}
	s, err := Open(ctx, c)
	if err != nil {
		return nil, err
	}
	return s, nil
}
