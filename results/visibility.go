package results

import (
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/pushpull/pushpull/internal/cost"
)

// Visibility is what a probe measured of the traffic's posts and deletes
// (package loadgen/workload, Probe): how soon a post showed in its
// author's followers' newest pages, how completely, and how soon a delete
// took effect. Times run from the acknowledgement of the post (or delete)
// to the start of the first read that showed it (or no longer did), to
// within PollMs.
type Visibility struct {
	// How the probe ran: at most a post and a delete watched every
	// EveryMs, FollowersPerProbe pages each, each page read every PollMs
	// for at most TimeoutMs.
	EveryMs           float64 `json:"every_ms"`
	FollowersPerProbe int     `json:"followers_per_probe"`
	PollMs            float64 `json:"poll_ms"`
	TimeoutMs         float64 `json:"timeout_ms"`
	// Total is every probe; Bands by the author's follower count.
	Total VisibleBand   `json:"total"`
	Bands []VisibleBand `json:"bands"`
	// Drowning is the pages of drowning readers (bench --drowning),
	// counted apart from Total and Bands: each watched post with a
	// drowning follower read one of their pages too.
	Drowning *VisibleBand `json:"drowning,omitempty"`
	// Deletes watched, and delete-to-gone over their pages. StillShown
	// counts pages that showed a deleted post after the timeout.
	Deletes    int64   `json:"deletes"`
	GonePages  int64   `json:"gone_pages"`
	GoneP50Ms  float64 `json:"gone_p50_ms"`
	GoneP99Ms  float64 `json:"gone_p99_ms"`
	GoneMaxMs  float64 `json:"gone_max_ms"`
	StillShown int64   `json:"still_shown"`
	// Unwatched writes were offered while too many watches were under
	// way; Errors counts the probe's failed reads.
	Unwatched    int64    `json:"unwatched,omitempty"`
	Errors       int64    `json:"errors"`
	SampleErrors []string `json:"sample_errors,omitempty"`
	// The deletes of the traffic itself (its delete share): how many, and
	// of a sample of them, checked at up to FollowersPerProbe followers
	// each once the store had settled, the pages that still showed one.
	TrafficDeletes int64 `json:"traffic_deletes,omitempty"`
	DeletedChecked int64 `json:"deleted_checked,omitempty"`
	DeletedShown   int64 `json:"deleted_shown,omitempty"`
	DeletedSettled bool  `json:"deleted_settled,omitempty"`
}

// VisibleBand is the post-to-visible figures of the posts by authors with
// a band of follower counts ("1-9", ..., "10,000+").
type VisibleBand struct {
	Followers string `json:"followers"`
	// Posts watched; Pages read for them; Visible of them showed the post
	// within the timeout, Missing did not; Dropped were of readers who had
	// unfollowed the author meanwhile, or of posts deleted before they
	// showed, counted in neither.
	Posts   int64   `json:"posts"`
	Pages   int64   `json:"pages"`
	Visible int64   `json:"visible"`
	Missing int64   `json:"missing"`
	Dropped int64   `json:"dropped,omitempty"`
	P50Ms   float64 `json:"p50_ms"`
	P99Ms   float64 `json:"p99_ms"`
	MaxMs   float64 `json:"max_ms"`
}

// Completeness is the share of watched pages that showed the post in
// time: Visible of Visible and Missing, 1 when none was watched.
func (b VisibleBand) Completeness() float64 {
	if b.Visible+b.Missing == 0 {
		return 1
	}
	return float64(b.Visible) / float64(b.Visible+b.Missing)
}

// DeletedShownShare is the share of checked pages that still showed a
// deleted post: the probes' after the timeout and the traffic's after
// settling together; 0 when none was checked.
func (v *Visibility) DeletedShownShare() float64 {
	n := v.GonePages + v.StillShown + v.DeletedChecked
	if n == 0 {
		return 0
	}
	return float64(v.StillShown+v.DeletedShown) / float64(n)
}

// Deletes is a model's delete study: deletes of messages posted just
// before them, measured in a phase of their own for their cost, then the
// most followed author's post deleted (the celebrity delete).
type Deletes struct {
	// Phase is the deletes, with their latency and cost per delete.
	Phase Phase `json:"phase"`
	// SettleS is how long the store took to settle after them (a store
	// that applies writes later); Checked pages of the deleted messages'
	// authors' followers were read then, and StillShown of them showed
	// one.
	SettleS    float64 `json:"settle_s,omitempty"`
	Checked    int64   `json:"checked"`
	StillShown int64   `json:"still_shown"`
	// Celebrity is the delete of one post by the most followed author.
	Celebrity *CelebrityDelete `json:"celebrity,omitempty"`
	// CelebrityUnderLoad is the same while posts arrive at half the
	// model's submission rate (a design measured at half rate).
	CelebrityUnderLoad *CelebrityDelete `json:"celebrity_under_load,omitempty"`
}

// CelebrityDelete is the delete of one post by the most followed author:
// its latency, the settle after it, and every follower's page read then.
type CelebrityDelete struct {
	Author    int64   `json:"author"`
	Followers int     `json:"followers"`
	DeleteMs  float64 `json:"delete_ms"`
	SettleMs  float64 `json:"settle_ms"`
	// GoneMs bounds the time until the post was gone from every follower's
	// timeline: the delete's latency plus the settle's (the store's
	// contract: gone once settled).
	GoneMs float64 `json:"gone_ms"`
	// Watched followers' pages (a sample) were read from the delete's
	// acknowledgement on until they no longer showed the post: the last
	// was gone after WatchedGoneMaxMs; WatchedStillShown of them still
	// showed it after the probe's timeout.
	Watched           int     `json:"watched"`
	WatchedGoneMaxMs  float64 `json:"watched_gone_max_ms"`
	WatchedStillShown int     `json:"watched_still_shown"`
	// Checked followers' pages were read after the settle; StillShown of
	// them showed the post.
	Checked    int `json:"checked"`
	StillShown int `json:"still_shown"`
	// RowsDeleted is the rows the delete deleted (and the settle after
	// it), when measured alone; 0 under load.
	RowsDeleted float64 `json:"rows_deleted,omitempty"`
}

// fmtShare renders a share as a percentage, to two decimals below 100.
func fmtShare(v float64) string {
	if v >= 1 {
		return "100 %"
	}
	return strconv.FormatFloat(math.Floor(v*10000)/100, 'f', -1, 64) + " %"
}

// visibilityRows are the traffic rows of its probe.
func visibilityRows(ms []Model, row func(label string, cell func(m *Model) string)) {
	has := false
	var labels []string
	for i := range ms {
		if t := ms[i].Traffic; t != nil && t.Visibility != nil {
			has = true
			for _, b := range t.Visibility.Bands {
				if !slices.Contains(labels, b.Followers) {
					labels = append(labels, b.Followers)
				}
			}
		}
	}
	if !has {
		return
	}
	vis := func(cell func(v *Visibility) string) func(m *Model) string {
		return func(m *Model) string {
			if m.Traffic == nil || m.Traffic.Visibility == nil {
				return Dash
			}
			return cell(m.Traffic.Visibility)
		}
	}
	band := func(b VisibleBand) string {
		if b.Visible == 0 {
			return "none of " + fmtInt(b.Pages)
		}
		return fmtNum(b.P50Ms) + " / " + fmtNum(b.P99Ms) + " / " + fmtMs(b.MaxMs)
	}
	row("  post-to-visible p50 / p99 / max", vis(func(v *Visibility) string { return band(v.Total) }))
	for _, l := range labels {
		row("    authors of "+l+" followers", vis(func(v *Visibility) string {
			for _, b := range v.Bands {
				if b.Followers == l {
					return band(b)
				}
			}
			return Dash
		}))
	}
	row("  completeness (pages showing the post)", vis(func(v *Visibility) string {
		return fmtShare(v.Total.Completeness()) + " of " + fmtInt(v.Total.Visible+v.Total.Missing)
	}))
	for i := range ms {
		if t := ms[i].Traffic; t != nil && t.Visibility != nil && t.Visibility.Drowning != nil {
			row("  drowning readers: post-to-visible p50 / p99 / max", vis(func(v *Visibility) string {
				if v.Drowning == nil {
					return Dash
				}
				return band(*v.Drowning)
			}))
			row("  drowning readers: completeness", vis(func(v *Visibility) string {
				if v.Drowning == nil {
					return Dash
				}
				return fmtShare(v.Drowning.Completeness()) + " of " + fmtInt(v.Drowning.Visible+v.Drowning.Missing)
			}))
			break
		}
	}
	row("  delete-to-gone p50 / p99 / max", vis(func(v *Visibility) string {
		if v.GonePages == 0 {
			return Dash
		}
		return fmtNum(v.GoneP50Ms) + " / " + fmtNum(v.GoneP99Ms) + " / " + fmtMs(v.GoneMaxMs)
	}))
	row("  deleted posts still shown", vis(func(v *Visibility) string {
		return fmt.Sprintf("%s of %s", fmtInt(v.StillShown+v.DeletedShown), fmtInt(v.GonePages+v.StillShown+v.DeletedChecked))
	}))
}

// deleteRows are the rows of the delete study beyond its phase's.
func deleteRows(ms []Model, row func(label string, cell func(m *Model) string)) {
	del := func(cell func(d *Deletes) string) func(m *Model) string {
		return func(m *Model) string {
			if m.Deletes == nil {
				return Dash
			}
			return cell(m.Deletes)
		}
	}
	row("  rows deleted / written per delete", del(func(d *Deletes) string {
		del, okD := d.Phase.Cost[cost.RowsDeleted]
		wr, okW := d.Phase.Cost[cost.RowsWritten]
		if !okD || !okW {
			return Dash
		}
		return fmtNum(del) + " / " + fmtNum(wr)
	}))
	row("  still shown after settling", del(func(d *Deletes) string {
		return fmtInt(d.StillShown) + " of " + fmtInt(d.Checked)
	}))
	row("  celebrity delete: followers, gone from 20 watched pages, gone by settle", del(func(d *Deletes) string {
		c := d.Celebrity
		if c == nil {
			return Dash
		}
		return fmtInt(int64(c.Followers)) + ", " + fmtMs(c.WatchedGoneMaxMs) + ", " + fmtMs(c.GoneMs)
	}))
	row("    still shown after settling", del(func(d *Deletes) string {
		c := d.Celebrity
		if c == nil {
			return Dash
		}
		return fmtInt(int64(c.StillShown)) + " of " + fmtInt(int64(c.Checked))
	}))
	for i := range ms {
		if ms[i].Deletes != nil && ms[i].Deletes.CelebrityUnderLoad != nil {
			row("  the same at half the post rate: gone from watched pages, by settle, still shown", del(func(d *Deletes) string {
				c := d.CelebrityUnderLoad
				if c == nil {
					return Dash
				}
				return fmtMs(c.WatchedGoneMaxMs) + ", " + fmtMs(c.GoneMs) + ", " + fmtInt(int64(c.StillShown)) + " of " + fmtInt(int64(c.Checked))
			}))
			break
		}
	}
}
