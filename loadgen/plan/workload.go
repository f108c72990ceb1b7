package plan

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/pushpull/pushpull/loadgen/dataset"
	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/results"
)

// InputError reports a workload or a setting a plan cannot be made with,
// before anything is computed.
type InputError struct {
	Field, Value, Reason string
}

func (e *InputError) Error() string {
	if e.Value == "" {
		return fmt.Sprintf("plan: %s: %s", e.Field, e.Reason)
	}
	return fmt.Sprintf("plan: %s %s: %s", e.Field, e.Value, e.Reason)
}

// Node is the machine one server runs on.
type Node struct {
	Cores    float64 // CPU cores
	MemoryGB float64 // memory, GB (10^9 bytes)
	DiskGB   float64 // disk, GB
}

// DefaultNode is the node a plan sizes with unless told: 16 cores, 64 GB
// of memory, 2 TB of disk.
var DefaultNode = Node{Cores: 16, MemoryGB: 64, DiskGB: 2000}

// Workload is what a plan is asked for: a feed at its real size.
type Workload struct {
	// Users is how many users the service has.
	Users int
	// Graph is the follow graph's shape: dataset.GraphUniform,
	// dataset.GraphPowerLaw (InExponent, OutExponent; 0 for the
	// defaults) or dataset.GraphEdges, whose EdgeList is taken as a sample
	// of a graph of Users users (each user of the file standing for
	// Users/its users, with its follower and followee counts).
	Graph                   string
	AvgFollowees            float64
	InExponent, OutExponent float64
	EdgeList                *dataset.EdgeList
	// Activity is who posts and reads (dataset.Activity; its zero value
	// is the graph's default).
	Activity dataset.Activity
	// The planned peak rates, operations per second over all users:
	// newest pages, older pages, posts, and follows and unfollows
	// (half each).
	NewestPerSec, OlderPerSec, PostsPerSec, FollowsPerSec float64
	// ActiveShare is the share of users who read at all; the reads are
	// theirs.
	ActiveShare float64
	// Page is the entries a page shows; OlderDepth the mean depth in
	// pages of an older page.
	Page       int
	OlderDepth float64
	// Retention is how long messages are kept: the store holds
	// PostsPerSec × Retention of them. 0 means MessagesPerUser each.
	Retention       time.Duration
	MessagesPerUser float64
	// SLO is the objective, a p99 latency; Freshness the longest a post
	// may take to reach its followers' timelines (0: no bound).
	SLO, Freshness time.Duration
	// Node is the machine each server runs on; Utilization the share of
	// its cores a plan fills at peak (the rest is headroom that keeps
	// queues short).
	Node        Node
	Utilization float64
	// RTT is one round trip between servers.
	RTT time.Duration
	// Prices are the price per core, per GB of memory and per GB of disk
	// the decision weighs resources by.
	Prices results.Prices
	// Options are model options (name=value), given to every model that
	// declares them.
	Options map[string]string
	// Models are the designs planned; nil means the candidates of
	// package recommend.
	Models []string
}

// Defaults of a Workload's zero fields.
const (
	DefaultPage            = 20
	DefaultOlderDepth      = 3.5
	DefaultMessagesPerUser = 100
	DefaultUtilization     = 0.5
	DefaultRTT             = 200 * time.Microsecond
	DefaultSLO             = 50 * time.Millisecond
)

// WithDefaults fills w's zero fields with the defaults above, the
// graph's default activity, an active share of 1 and DefaultNode.
func (w Workload) WithDefaults() Workload {
	if w.Graph == "" {
		w.Graph = dataset.GraphUniform
	}
	if w.AvgFollowees == 0 && w.EdgeList == nil {
		w.AvgFollowees = dataset.PaperSpec().AvgFollowees
	}
	if w.ActiveShare == 0 {
		w.ActiveShare = 1
	}
	if w.Page == 0 {
		w.Page = DefaultPage
	}
	if w.OlderDepth == 0 {
		w.OlderDepth = DefaultOlderDepth
	}
	if w.Retention == 0 && w.MessagesPerUser == 0 {
		w.MessagesPerUser = DefaultMessagesPerUser
	}
	if w.SLO == 0 {
		w.SLO = DefaultSLO
	}
	if w.Node == (Node{}) {
		w.Node = DefaultNode
	}
	if w.Utilization == 0 {
		w.Utilization = DefaultUtilization
	}
	if w.RTT == 0 {
		w.RTT = DefaultRTT
	}
	if w.Prices == (results.Prices{}) {
		w.Prices = results.DefaultPrices
	}
	return w
}

func fmtFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// Check reports the first field of w (defaults filled in) that a plan
// cannot be made with, as an *InputError.
func (w Workload) Check() error {
	w = w.WithDefaults()
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	rates := []struct {
		name string
		v    float64
	}{{"newest-per-sec", w.NewestPerSec}, {"older-per-sec", w.OlderPerSec}, {"posts-per-sec", w.PostsPerSec}, {"follows-per-sec", w.FollowsPerSec}}
	var total float64
	for _, r := range rates {
		if !finite(r.v) || r.v < 0 {
			return &InputError{r.name, fmtFloat(r.v), "want operations per second, 0 or more"}
		}
		total += r.v
	}
	switch {
	case w.Users < 2 || w.Users > dataset.MaxUsers:
		return &InputError{"users", strconv.Itoa(w.Users), fmt.Sprintf("want 2 to %d", dataset.MaxUsers)}
	case total <= 0:
		return &InputError{Field: "rates", Reason: "no operations planned: give --newest-per-sec, --posts-per-sec, ..."}
	case w.NewestPerSec+w.OlderPerSec+w.PostsPerSec <= 0:
		return &InputError{Field: "rates", Reason: "no reads and no posts: nothing tells the designs apart"}
	case !finite(w.AvgFollowees) || w.AvgFollowees < 0 || w.AvgFollowees > float64(w.Users-1):
		return &InputError{"avg-followees", fmtFloat(w.AvgFollowees), fmt.Sprintf("want 0 to users-1 (%d)", w.Users-1)}
	case !(w.ActiveShare > 0 && w.ActiveShare <= 1):
		return &InputError{"active-share", fmtFloat(w.ActiveShare), "want a share above 0, at most 1"}
	case w.Page < 1 || w.Page > 1000:
		return &InputError{"page", strconv.Itoa(w.Page), "want 1 to 1000 entries"}
	case !finite(w.OlderDepth) || w.OlderDepth < 2:
		return &InputError{"older-depth", fmtFloat(w.OlderDepth), "want a depth of 2 pages or more"}
	case w.Retention < 0:
		return &InputError{"retention", w.Retention.String(), "want a duration above 0"}
	case w.Retention > 0 && w.PostsPerSec <= 0:
		return &InputError{"retention", w.Retention.String(), "keeps posts/s × retention messages: give --posts-per-sec"}
	case !finite(w.MessagesPerUser) || w.MessagesPerUser < 0:
		return &InputError{"messages-per-user", fmtFloat(w.MessagesPerUser), "want 0 or more"}
	case w.SLO <= 0:
		return &InputError{"slo", w.SLO.String(), "want a p99 latency above 0"}
	case w.Freshness < 0:
		return &InputError{"freshness", w.Freshness.String(), "want a duration, 0 for no bound"}
	case !(w.Node.Cores >= 1) || !finite(w.Node.Cores):
		return &InputError{"node-cores", fmtFloat(w.Node.Cores), "want 1 or more"}
	case !(w.Node.MemoryGB > 0) || !finite(w.Node.MemoryGB):
		return &InputError{"node-memory-gb", fmtFloat(w.Node.MemoryGB), "want GB above 0"}
	case !(w.Node.DiskGB > 0) || !finite(w.Node.DiskGB):
		return &InputError{"node-disk-gb", fmtFloat(w.Node.DiskGB), "want GB above 0"}
	case !(w.Utilization > 0 && w.Utilization <= 1):
		return &InputError{"utilization", fmtFloat(w.Utilization), "want a share above 0, at most 1"}
	case w.RTT < 0:
		return &InputError{"rtt", w.RTT.String(), "want a duration, 0 or more"}
	}
	for _, p := range []struct {
		name string
		v    float64
	}{{"price-core", w.Prices.Core}, {"price-memory-gb", w.Prices.MemoryGB}, {"price-disk-gb", w.Prices.DiskGB}} {
		if !finite(p.v) || p.v < 0 {
			return &InputError{p.name, fmtFloat(p.v), "want a price, 0 or more"}
		}
	}
	switch w.Graph {
	case dataset.GraphUniform:
	case dataset.GraphPowerLaw:
		for _, e := range []struct {
			name string
			v    float64
		}{{"in-exponent", w.InExponent}, {"out-exponent", w.OutExponent}} {
			if e.v != 0 && !(e.v >= dataset.MinPowerLawExponent && e.v <= dataset.MaxPowerLawExponent) {
				return &InputError{e.name, fmtFloat(e.v), fmt.Sprintf("want %g to %g", float64(dataset.MinPowerLawExponent), float64(dataset.MaxPowerLawExponent))}
			}
		}
	case dataset.GraphEdges:
		if w.EdgeList == nil {
			return &InputError{Field: "graph", Reason: "an edge list is needed (edges:FILE)"}
		}
	default:
		return &InputError{"graph", w.Graph, fmt.Sprintf("want %s, %s or edges:FILE", dataset.GraphUniform, dataset.GraphPowerLaw)}
	}
	if w.Activity.Mode == dataset.ActivityCelebrity {
		return &InputError{"activity", w.Activity.Mode, "a plan is for a service's whole traffic: want uniform or skewed"}
	}
	if err := (dataset.Spec{Users: 2, AvgFollowees: 1, Activity: w.Activity}).Validate(); err != nil {
		return &InputError{Field: "activity", Reason: err.Error()}
	}
	if len(w.Options) > 0 {
		ms, err := w.models()
		if err != nil {
			return err
		}
		if err := registry.CheckShared(ms, w.Options); err != nil {
			return &InputError{Field: "option", Reason: err.Error()}
		}
	}
	_, err := w.models()
	return err
}

// Messages is how many messages the store holds.
func (w Workload) Messages() float64 {
	w = w.WithDefaults()
	if w.Retention > 0 {
		return w.PostsPerSec * w.Retention.Seconds()
	}
	return w.MessagesPerUser * float64(w.Users)
}

// activity is w's Activity with the graph's defaults.
func (w Workload) activity() dataset.Activity {
	a := w.Activity
	if a.Mode == "" {
		a.Mode = dataset.ActivityUniform
		if w.Graph == dataset.GraphPowerLaw || w.Graph == dataset.GraphEdges {
			a.Mode = dataset.ActivitySkewed
		}
	}
	if a.Mode == dataset.ActivitySkewed {
		if a.PostExponent == 0 {
			a.PostExponent = dataset.DefaultPostExponent
		}
		if a.ReadExponent == 0 {
			a.ReadExponent = dataset.DefaultReadExponent
		}
	}
	return a
}

// classes builds the users' classes of w (checked).
func (w Workload) classes() (demandClasses, error) {
	users := float64(w.Users)
	a := w.activity()
	switch w.Graph {
	case dataset.GraphPowerLaw:
		in, out := cmpOr(w.InExponent, dataset.DefaultInExponent), cmpOr(w.OutExponent, dataset.DefaultOutExponent)
		edges := math.Round(users * w.AvgFollowees)
		followers := powerLawBuckets(w.Users, edges, in, 16, 1.5)
		return independentClasses(users, followers, drawnFolloweeBuckets(w.Users, followers, out, 4, 2, 5), a), nil
	case dataset.GraphEdges:
		return sampleClasses(w.EdgeList, users, 1.5, a), nil
	}
	return independentClasses(users, poissonBuckets(users, w.AvgFollowees, 20), poissonBuckets(users, w.AvgFollowees, 8), a), nil
}

// Demand is w as the designs' work models take it (registry.Demand), with
// its classes.
func (w Workload) demand() (registry.Demand, demandClasses, error) {
	if err := w.Check(); err != nil {
		return registry.Demand{}, demandClasses{}, err
	}
	w = w.WithDefaults()
	dc, err := w.classes()
	if err != nil {
		return registry.Demand{}, demandClasses{}, err
	}
	d := registry.Demand{
		Users: float64(w.Users), Messages: w.Messages(), Page: w.Page, OlderDepth: w.OlderDepth,
		PostsPerSec: w.PostsPerSec, ReadsPerSec: w.NewestPerSec + w.OlderPerSec, OlderPerSec: w.OlderPerSec,
		UnfollowsPerSec: w.FollowsPerSec / 2, ActiveShare: w.ActiveShare, Classes: dc.classes,
	}
	d = d.Prepared()
	if err := d.Check(); err != nil {
		return registry.Demand{}, demandClasses{}, &InputError{Field: "workload", Reason: err.Error()}
	}
	return d, dc, nil
}

// Demand is w as the designs' work models take it.
func (w Workload) Demand() (registry.Demand, error) {
	d, _, err := w.demand()
	return d, err
}
