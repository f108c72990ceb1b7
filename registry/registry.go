// Package registry is the one list of the timeline models pushpull can open,
// demonstrate and measure.
//
// A model describes itself once, next to its code, in a Model: its name, its
// family, the database it lives in, the servers it needs, a line for --help,
// the options it takes (see Option), what it is (Traits), how to open it,
// and the benchmark policy that is really its own (Bench).
// It registers from its package's init function; a program that wants every
// model imports the package registry/all, which imports each model's package.
// The command line, the benchmark and the results learn everything about
// models from here, so adding a model is one package and one Register call.
//
// A variant wraps other models: package memcache registers the variant
// "memcache", and "push+memcache" is the push model with memcached in front
// of its newest pages. A base model lists the variants it offers (Offers);
// Lookup builds any base+variant pair whose needs the variant can serve.
//
// # Options
//
// A model's options are settings a user gives by name: `--option
// name=value` on the command line, Config.Options in the library. A model
// declares each one in its registration (Model.Options, and a variant in
// Variant.Options): its name, its kind, its default and a line of help,
// and its bounds. The registry checks the options given against the
// declarations before the model opens, whichever way it is opened
// (OpenModel, or the Open of a Model from Lookup, Models or Listed), and
// hands the model's Open the values parsed, through Config's typed
// accessors (Config.Int, Config.Float, Config.Duration, Config.Choice). A
// base+variant model takes the options of both; each side's declarations
// check its own.
//
// The rules are the same for every model:
//
//   - An option the model does not declare is an *OptionError matching
//     ErrUnknownOption, which lists the options the model declares.
//   - A value that does not parse as the option's kind, or lies outside
//     its bounds, is an *OptionError matching ErrBadOption. An empty value
//     is malformed too: leave an option out to get its default.
//   - Integers are decimal ("400"); numbers are decimal or exponent
//     notation ("0.5", "1e3"), finite; durations are Go durations
//     ("168h", "500ms", "0s"), never bare numbers; a choice is one of its
//     values, exactly.
//   - Options given to several models at once, as the benchmark gives its
//     --option to every model it measures, go to each model that declares
//     them (OwnOptions); the others open with their defaults. One that none
//     of the models declares is refused, and a value is checked against
//     every model that declares the option (CheckShared).
//
// What a store can do beyond timeline.Store is a named ability of package
// timeline (Settler, Counting, Primer, ...); what the benchmark's loader
// must know of a store's mailbox is PartialMailbox, here. What a model is
// (asynchronous, with a partial mailbox, with write hooks) is declared in
// its Traits, so that it can be known without opening a store.
package registry

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/pushpull/pushpull/reconcile"
	schema "github.com/pushpull/pushpull/sql"
	"github.com/pushpull/pushpull/timeline"
)

// Family groups models that implement one design of the paper. The
// benchmark sets each family against the paper's figures for it.
type Family string

const (
	// FamilyPush stores one mailbox row per reader of each message
	// (fan-out on write).
	FamilyPush Family = "push"
	// FamilyPull stores only messages and merges on read.
	FamilyPull Family = "pull"
	// FamilyReference keeps everything in process memory: the reference
	// the others are checked against.
	FamilyReference Family = "reference"
	// FamilyHybrid pushes some posts and pulls others.
	FamilyHybrid Family = "hybrid"
)

// Servers is a set of servers a model needs.
type Servers uint8

const (
	// MariaDB (or MySQL): the store keeps its tables there. A model that
	// needs it can be opened by the CLI and bulk-loaded by the benchmark.
	MariaDB Servers = 1 << iota
	// Memcached: Config.Memcache must name servers.
	Memcached
	// Vitess: the store keeps its tables in a keyspace sharded by user
	// behind the vtgate Config.Vtgate names (models named ...@vitess).
	Vitess
	// Redis: Config.Redis must name a redis-server.
	Redis
)

// String lists the servers, e.g. "MariaDB and memcached".
func (s Servers) String() string {
	var names []string
	if s&MariaDB != 0 {
		names = append(names, "MariaDB")
	}
	if s&Memcached != 0 {
		names = append(names, "memcached")
	}
	if s&Vitess != 0 {
		names = append(names, "Vitess")
	}
	if s&Redis != 0 {
		names = append(names, "Redis")
	}
	if len(names) == 0 {
		return "no server"
	}
	return strings.Join(names, " and ")
}

// Config is what opening a model may need. A model ignores what it does not
// use.
type Config struct {
	// DSN is a go-sql-driver DSN of the server; its database name is
	// ignored.
	DSN string
	// Vtgate is a go-sql-driver DSN of a vtgate, for the models that need
	// Vitess; its keyspace is ignored.
	Vtgate string
	// VtgateStatus is the host:port of that vtgate's status pages, where
	// a model on Vitess reads the tablet calls it counts (registry
	// Counting); "" for none.
	VtgateStatus string
	// Database overrides the model's Database (on Vitess, a keyspace).
	Database string
	// MaxConns caps the connection pool; 0 means the store's default.
	MaxConns int
	// Force lets the schema be applied to a database pushpull did not
	// create.
	Force bool
	// Memcache lists memcached servers ("host:port" or a socket path).
	Memcache []string
	// Redis is a redis-server ("host:port") for the models that keep
	// state in Redis.
	Redis string
	// Namespace prefixes memcached and Redis keys, so that several
	// stores or runs can share one server without seeing each other's
	// entries.
	Namespace string
	// Options are model and variant settings by name (for the memcache
	// variant: "policy" and "ttl"; for push-capped: "cap"), as declared in
	// Model.Options and Variant.Options: a name the model does not declare
	// is refused (ErrUnknownOption), and so is a value it does not take
	// (ErrBadOption). The command line takes them from --option
	// name=value.
	Options map[string]string
	// IgnoreWriteHooks has the store write without the write hooks that
	// other stores record in its database, leaving their state in
	// memcached or Redis stale (schema.HookGuard.Ignore). It is for a
	// harness that measures stores one after another on one database and
	// reads none after another wrote (pushpull bench); a service never
	// sets it: its writes then fail with schema.ErrWriteHooks instead.
	IgnoreWriteHooks bool

	// parsed holds, once a Model's Open has checked Options, every option
	// the model declares, parsed: what the accessors (Int, ...) return.
	parsed map[string]any
}

// VitessSuffix ends the name of every model on Vitess ("push@vitess");
// without it, the name is the same design on MariaDB, which the benchmark
// sets it against.
const VitessSuffix = "@vitess"

// Open opens a store of a model.
type Open func(ctx context.Context, cfg Config) (timeline.Store, error)

// Model describes one model.
type Model struct {
	// Name is how users and the benchmark name the model: lower case
	// letters, digits and '-', and VitessSuffix for a model on Vitess (a
	// variant adds "+" and its name).
	Name   string
	Family Family
	// Schema is the data model of its database (push or pull tables);
	// "" for a model without a database.
	Schema schema.Model
	// Database is where the model lives unless Config.Database says
	// otherwise; models with the same Database share one.
	Database string
	// Needs are the servers the model cannot open without.
	Needs Servers
	// Summary is one line for --help: how the model works, in a few
	// words.
	Summary string
	// Options are the options the model takes (see Option); a model of a
	// variant takes its base's and the variant's.
	Options []Option
	// Traits say what the model is beyond its family and servers.
	Traits Traits
	// Open opens a store of the model. The Open of a Model from the
	// registry (Lookup, Models, Listed) checks the Config first
	// (CheckConfig: the servers and the options) and hands the Open
	// registered the options parsed (Config.Int, ...).
	Open Open
	// Bench is how the benchmark measures the model.
	Bench Bench
	// Work is the design's cost model: the work per operation and the
	// footprint its rules imply for a workload (see WorkModel); nil for a
	// model that declares none. A base+variant model's combines its
	// base's with the variant's (Variant.Work).
	Work WorkModel
	// Reconcile makes the checker of a store of the model's derived
	// views (mailboxes, floors, flags, queues, memcached and Redis
	// state) against the record, for package reconcile: the design's
	// rule, declared beside it. nil for a model that keeps nothing
	// beside the record. See Checker.
	Reconcile Reconcile
	// Offers lists the variants the model is offered with, by name, and
	// whether the benchmark measures each by default.
	Offers []Offer
	// Variant names the variant this model is made of ("" for a base
	// model), and Base the model it wraps.
	Variant, Base string

	// open is the Open registered, which Open calls once the Config is
	// checked.
	open Open
}

// Reconcile makes a reconcile.Checker of an opened store of a model: the
// store must be one the model's Open returned.
type Reconcile func(store timeline.Store) (reconcile.Checker, error)

// ErrNoDerivedView: the model keeps no view beside the record, so there
// is nothing to reconcile.
var ErrNoDerivedView = errors.New("the model keeps no derived view")

// Checker returns the reconcile.Checker of store, a store of m (from m's
// Open): the library entry point of reconciliation, with reconcile.Run.
// A model whose Reconcile is nil gives an error matching
// ErrNoDerivedView.
func (m Model) Checker(store timeline.Store) (reconcile.Checker, error) {
	if m.Reconcile == nil {
		return nil, fmt.Errorf("%s: %w", m.Name, ErrNoDerivedView)
	}
	c, err := m.Reconcile(store)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", m.Name, err)
	}
	return c, nil
}

// ReconcileRate is the rows a second a reconcile of a store of m reads at
// most unless told: reconcile.DefaultVitessRate for a model on Vitess,
// where every row read costs vtgate and a tablet besides mysqld,
// reconcile.DefaultRate for the others.
func (m Model) ReconcileRate() float64 {
	if m.OnVitess() {
		return reconcile.DefaultVitessRate
	}
	return reconcile.DefaultRate
}

// Traits are what a model is that its family and servers do not say:
// what a caller would otherwise learn only by opening a store. A test
// opens every model and checks each trait against the store's abilities.
type Traits uint8

const (
	// Async: the model applies part of a write after acknowledging it
	// (asynchronous fan-out); its stores are timeline.Settlers, and a
	// read right after a write may lack it until the store settles.
	Async Traits = 1 << iota
	// Partial: the model's mailbox holds only part of what push's would
	// (a cap, pulled authors or edges, active users only); its stores are
	// PartialMailboxes, which the benchmark's loader asks for the part.
	Partial
	// WriteHooks: a store of the model (with its default options)
	// records, in its database, write hooks that every store writing to
	// that database must then run (state kept in memcached or Redis
	// beside it; see schema.Hooks): a store of another model there fails
	// its writes with schema.ErrWriteHooks, unless it runs them.
	WriteHooks
)

var traitNames = map[Traits]string{Async: "asynchronous writes", Partial: "partial mailbox", WriteHooks: "write hooks"}

// Has reports whether t includes every trait of u.
func (t Traits) Has(u Traits) bool { return t&u == u }

// String lists the traits, e.g. "asynchronous writes, partial mailbox";
// "none" for none.
func (t Traits) String() string {
	var names []string
	for _, u := range []Traits{Async, Partial, WriteHooks} {
		if t.Has(u) {
			names = append(names, traitNames[u])
		}
	}
	return cmp.Or(strings.Join(names, ", "), "none")
}

// Offer is a variant a base model is offered with.
type Offer struct {
	Variant string
	// Bench: the benchmark measures base+variant by default.
	Bench bool
}

// Bench is the part of the benchmark that is a model's own.
type Bench struct {
	// Default: a benchmark run measures the model unless told which
	// models to measure.
	Default bool
	// Paper: one of the four models of the paper's own table (push and
	// the three pull variants). Their phases get the full phase length;
	// the others the shorter extra length, so that a default run fits
	// in five minutes. The first Paper model of a family is that
	// family's reference in the push : pull ratios.
	Paper bool
	// Slow: phases are capped at the benchmark's slow-model cap, because
	// each operation scans far more than the others' do.
	Slow bool
	// OlderSample is how many timelines are walked 2 to 5 pages deep for
	// the older-page phase's cursors; 0 means DefaultOlderSample. A slow
	// model walks fewer, or the walk outlasts its phase.
	OlderSample int
	// Phases are the phases measured for the model, in order: reads
	// (newest and older pages) for every model first, while the data is
	// as loaded, then writes (submission and mixed phases).
	Phases []Phase
	// WarmReads: every user's newest page is read once before the reads
	// are measured, so that the figure is a warm cache's, as a running
	// service sees it. (Primer adds what reads alone do not warm.)
	WarmReads bool
	// WarmSearch: every user's newest page is read once before a rate
	// search's first step, for a model whose reads build state a running
	// service keeps but whose reads are measured cold (push-active: an
	// inactive reader's first read rebuilds the mailbox that its later
	// reads find). The phases before a search leave that state partly
	// built at a few thousand users, and the search's first steps would
	// measure its building instead of the rate: at 3,000 users on the
	// power-law graph, 194 rebuilds in a first step of 2 s at 1,026/s,
	// whose p99 of 73 ms failed it, and every step after it searched
	// below (962/s found, where 5,241/s held once the readers were
	// active). A WarmReads model's steps each start warm already.
	WarmSearch bool
	// OwnSubmission: the model's posts write more than its database's
	// plain post (a memcached list, hints, a cache invalidation), so its
	// submission is measured on its own. Models of one database without
	// it post identically: their submission is measured once, through
	// the first of them, and shown for each.
	OwnSubmission bool
	// SubmissionNote says, for OwnSubmission, what else a post writes.
	SubmissionNote string
	// Note is a remark the run records about the model, e.g. why a
	// phase is left out.
	Note string
	// WriteRank orders the write phases of models that share a database:
	// lower first. A model whose memcached state follows only the posts
	// of stores that keep it (lists, indexes) must write before a model
	// that keeps less posts to the same database, or its later reads
	// would miss those posts. The demo writes through the lowest rank of
	// each database for the same reason.
	WriteRank int
}

// WriteOrder returns ms in the order their writes must be measured:
// ascending Bench.WriteRank, ties in the order given.
func WriteOrder(ms []Model) []Model {
	out := slices.Clone(ms)
	slices.SortStableFunc(out, func(x, y Model) int { return x.Bench.WriteRank - y.Bench.WriteRank })
	return out
}

// OpenOrder returns ms in the order their stores must be opened when they
// share databases: descending Bench.WriteRank, so that the stores that
// keep the least beside the database open before a store records the
// write hooks it keeps (see package pull's WriteHooks), ties in the order
// given.
func OpenOrder(ms []Model) []Model {
	out := slices.Clone(ms)
	slices.SortStableFunc(out, func(x, y Model) int { return y.Bench.WriteRank - x.Bench.WriteRank })
	return out
}

// DefaultOlderSample is Bench.OlderSample's default.
const DefaultOlderSample = 400

// Phase names a measured phase.
type Phase string

const (
	// PhaseNewest reads newest pages.
	PhaseNewest Phase = "retrieve"
	// PhaseOlder reads pages 2 to 5 deep through their cursors.
	PhaseOlder Phase = "retrieve-older"
	// PhaseSubmit posts messages.
	PhaseSubmit Phase = "submit"
	// PhaseMixed mixes reads and posts at the run's read ratio (when it
	// asks for one).
	PhaseMixed Phase = "mixed"
	// PhaseCacheMixed mixes reads and posts at the cache read ratio on a
	// cache nobody has filled yet, under the model's exact (invalidate)
	// policy, and a second time under its TTL policy, recording how
	// stale each page served was.
	PhaseCacheMixed Phase = "cache-mixed"
	// PhaseHalfRate posts in an open loop at half the rate the model's
	// submission phase reached, then settles the store: the fan-out lag
	// (registry.Lagging) of a model that is not saturated.
	PhaseHalfRate Phase = "submit-half-rate"
)

// Has reports whether the model's benchmark includes phase p.
func (b Bench) Has(p Phase) bool { return slices.Contains(b.Phases, p) }

// AllPhases are the phases of an ordinary model: its reads, then its
// writes.
var AllPhases = []Phase{PhaseNewest, PhaseOlder, PhaseSubmit, PhaseMixed}

// Variant wraps base models: Wrap gets the opened base store.
type Variant struct {
	// Name is what follows "+" in a model's name.
	Name string
	// Needs are the servers the variant adds to its base's.
	Needs Servers
	// Accepts reports whether base can be wrapped.
	Accepts func(base Model) bool
	// Summary is one line for --help, about the variant in general.
	Summary string
	// Options are the options the variant takes, beside its base's (see
	// Option); no base may declare one of the same name.
	Options []Option
	// Traits are what the variant adds to its base's.
	Traits Traits
	// Wrap opens the variant over an opened base store, whose model is
	// base; on error it must close inner. cfg's accessors (Config.Int,
	// ...) return the variant's options.
	Wrap func(ctx context.Context, base Model, inner timeline.Store, cfg Config) (timeline.Store, error)
	// Bench is the benchmark policy of every model the variant makes.
	Bench Bench
	// Describe is the Summary of base+variant.
	Describe func(base Model) string
	// Note, if set, is Bench.Note of base+variant.
	Note func(base Model) string
	// Work, if set, is the variant's cost model over its base's.
	Work VariantWorkModel
	// Reconcile, if set, makes the checker of a store of base+variant
	// (see Model.Reconcile), given its base model.
	Reconcile func(base Model, store timeline.Store) (reconcile.Checker, error)
}

var (
	mu       sync.RWMutex
	models   []Model // base models, in the order Models gives
	variants = map[string]Variant{}
)

// ErrUnknownModel means Lookup found no model of that name.
var ErrUnknownModel = errors.New("unknown model")

// Register adds a base model. It panics on a duplicate or malformed
// entry (an option declared twice, or whose default it does not take):
// registration happens in init functions, where that is a bug.
func Register(m Model) {
	if err := check(m); err != nil {
		panic("registry: " + err.Error())
	}
	m.Options = slices.Clone(m.Options)
	m.open = m.Open
	m.Open = m.checkedOpen(m.open)
	mu.Lock()
	defer mu.Unlock()
	for _, x := range models {
		if x.Name == m.Name {
			panic(fmt.Sprintf("registry: model %q registered twice", m.Name))
		}
	}
	// Families in a fixed order (the reference, then the paper's push
	// and pull, then any other), models within one in registration order:
	// init order follows import paths, not what reads best. The models on
	// Vitess follow all the others, in the same order.
	i := len(models)
	for i > 0 && rank(models[i-1]) > rank(m) {
		i--
	}
	models = slices.Insert(models, i, m)
}

// rank orders models in lists: by family, those on Vitess last.
func rank(m Model) int {
	if m.OnVitess() {
		return 10 + familyRank(m.Family)
	}
	return familyRank(m.Family)
}

// familyRank orders the families in lists.
func familyRank(f Family) int {
	switch f {
	case FamilyReference:
		return 0
	case FamilyPush:
		return 1
	case FamilyPull:
		return 2
	}
	return 3
}

func check(m Model) error {
	switch {
	case m.Name == "" || strings.ContainsAny(m.Name, "+ ,"):
		return fmt.Errorf("model name %q: want letters, digits and '-'", m.Name)
	case m.Open == nil:
		return fmt.Errorf("model %s: no Open", m.Name)
	case m.Family == "":
		return fmt.Errorf("model %s: no Family", m.Name)
	case m.Summary == "":
		return fmt.Errorf("model %s: no Summary", m.Name)
	case m.Needs&(MariaDB|Vitess) != 0 && (m.Database == "" || m.Schema == ""):
		return fmt.Errorf("model %s: needs a database but names no Database and Schema", m.Name)
	case m.Needs&MariaDB != 0 && m.Needs&Vitess != 0:
		return fmt.Errorf("model %s: needs both MariaDB and Vitess", m.Name)
	case m.OnVitess() != strings.HasSuffix(m.Name, VitessSuffix):
		return fmt.Errorf("model %s: a model on Vitess, and only one, is named ...%s", m.Name, VitessSuffix)
	}
	return checkOptions("model "+m.Name, m.Options)
}

// checkedOpen returns an Open that checks cfg (CheckConfig) and calls
// open with the options parsed.
func (m Model) checkedOpen(open Open) Open {
	return func(ctx context.Context, cfg Config) (timeline.Store, error) {
		if err := m.checkServers(cfg); err != nil {
			return nil, err
		}
		parsed, err := m.parseOptions(cfg.Options)
		if err != nil {
			return nil, err
		}
		cfg.parsed = parsed
		s, err := open(ctx, cfg)
		if err == nil && cfg.IgnoreWriteHooks {
			if g, ok := timeline.As[schema.Guarded](s); ok && g.WriteGuard() != nil {
				g.WriteGuard().Ignore()
			}
		}
		return s, err
	}
}

// RegisterVariant adds a variant. It panics on a duplicate or malformed
// entry.
func RegisterVariant(v Variant) {
	if v.Name == "" || strings.ContainsAny(v.Name, "+ ,") || v.Wrap == nil || v.Accepts == nil || v.Describe == nil {
		panic(fmt.Sprintf("registry: malformed variant %q", v.Name))
	}
	if err := checkOptions("variant "+v.Name, v.Options); err != nil {
		panic("registry: " + err.Error())
	}
	v.Options = slices.Clone(v.Options)
	mu.Lock()
	defer mu.Unlock()
	if _, ok := variants[v.Name]; ok {
		panic(fmt.Sprintf("registry: variant %q registered twice", v.Name))
	}
	variants[v.Name] = v
}

// Lookup returns the model named name: a base model, or base+variant.
func Lookup(name string) (Model, error) {
	mu.RLock()
	defer mu.RUnlock()
	return lookup(name)
}

func lookup(name string) (Model, error) {
	baseName, variantName, decorated := strings.Cut(name, "+")
	var base *Model
	for i := range models {
		if models[i].Name == baseName {
			base = &models[i]
		}
	}
	if base == nil {
		return Model{}, fmt.Errorf("%w %q (want one of %s)", ErrUnknownModel, name, strings.Join(Names(listed()), ", "))
	}
	if !decorated {
		return *base, nil
	}
	v, ok := variants[variantName]
	if !ok {
		return Model{}, fmt.Errorf("%w %q: no variant %q (want one of %s)", ErrUnknownModel, name, variantName, strings.Join(variantNames(), ", "))
	}
	if !v.Accepts(*base) {
		return Model{}, fmt.Errorf("%w %q: the %s variant does not wrap %s", ErrUnknownModel, name, v.Name, base.Name)
	}
	b := *base
	for _, o := range v.Options {
		if _, ok := b.Option(o.Name); ok {
			return Model{}, fmt.Errorf("%w %q: %s and the %s variant both declare option %s", ErrUnknownModel, name, b.Name, v.Name, o.Name)
		}
	}
	m := Model{
		Name: name, Family: b.Family, Schema: b.Schema, Database: b.Database,
		Needs: b.Needs | v.Needs, Summary: v.Describe(b), Bench: v.Bench,
		Options: slices.Concat(b.Options, v.Options), Traits: b.Traits | v.Traits,
		Variant: v.Name, Base: b.Name,
	}
	m.Bench.Default = slices.ContainsFunc(b.Offers, func(o Offer) bool { return o.Variant == v.Name && o.Bench })
	m.Bench.WriteRank = b.Bench.WriteRank
	if v.Reconcile != nil {
		m.Reconcile = func(s timeline.Store) (reconcile.Checker, error) { return v.Reconcile(b, s) }
	}
	if v.Note != nil {
		m.Bench.Note = v.Note(b)
	}
	// Both sides get every option parsed: each reads those it declares.
	m.open = func(ctx context.Context, cfg Config) (timeline.Store, error) {
		inner, err := b.open(ctx, cfg)
		if err != nil {
			return nil, err
		}
		return v.Wrap(ctx, b, inner, cfg)
	}
	m.Open = m.checkedOpen(m.open)
	if b.Work != nil && v.Work != nil {
		m.Work = func(d Demand, cfg Config) (OpWork, Footprint) {
			w, f := b.Work(d, cfg)
			return v.Work(b, w, f, d, cfg)
		}
	}
	return m, nil
}

func variantNames() []string {
	var out []string
	for n := range variants {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// Models returns the base models: the reference, push models, pull models,
// then others, each family in registration order; then the models on
// Vitess in the same order.
func Models() []Model {
	mu.RLock()
	defer mu.RUnlock()
	return slices.Clone(models)
}

// Listed returns the base models and, after them, the variants they offer:
// the models --help and --models list.
func Listed() []Model {
	mu.RLock()
	defer mu.RUnlock()
	return listed()
}

func listed() []Model {
	out := slices.Clone(models)
	for _, b := range models {
		for _, o := range b.Offers {
			if m, err := lookup(b.Name + "+" + o.Variant); err == nil {
				out = append(out, m)
			}
		}
	}
	return out
}

// Names returns the models' names.
func Names(ms []Model) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Name
	}
	return out
}

// OpenModel looks name up and opens it, checking first that cfg names the
// servers it needs and holds only options it takes (as the Open of every
// Model from the registry does).
func OpenModel(ctx context.Context, name string, cfg Config) (timeline.Store, error) {
	m, err := Lookup(name)
	if err != nil {
		return nil, err
	}
	return m.Open(ctx, cfg)
}

// ErrMissingServer means a model was opened without a server it needs.
var ErrMissingServer = errors.New("missing server")

// CheckConfig reports whether cfg names the servers m needs (an error
// matching ErrMissingServer) and holds only options m takes (an
// *OptionError, see CheckOptions). A Model's Open checks it first.
func (m Model) CheckConfig(cfg Config) error {
	if err := m.checkServers(cfg); err != nil {
		return err
	}
	return m.CheckOptions(cfg.Options)
}

func (m Model) checkServers(cfg Config) error {
	if m.Needs&Memcached != 0 && len(cfg.Memcache) == 0 {
		return fmt.Errorf("model %s: %w: it needs memcached servers (Config.Memcache, --memcache)", m.Name, ErrMissingServer)
	}
	if m.Needs&MariaDB != 0 && cfg.DSN == "" {
		return fmt.Errorf("model %s: %w: it needs a MariaDB or MySQL server (Config.DSN, --dsn)", m.Name, ErrMissingServer)
	}
	if m.Needs&Redis != 0 && cfg.Redis == "" {
		return fmt.Errorf("model %s: %w: it needs a redis-server (Config.Redis, --redis)", m.Name, ErrMissingServer)
	}
	if m.Needs&Vitess != 0 && cfg.Vtgate == "" {
		return fmt.Errorf("model %s: %w: it needs a vtgate (Config.Vtgate, --vtgate)", m.Name, ErrMissingServer)
	}
	return nil
}

// Persistent reports whether the model keeps its data on a server, so that
// a command that exits and a later one see the same timelines.
func (m Model) Persistent() bool { return m.Needs&(MariaDB|Vitess) != 0 }

// OnVitess reports whether the model keeps its data on Vitess.
func (m Model) OnVitess() bool { return m.Needs&Vitess != 0 }

// Unregister removes a base model; tests that register a throwaway model
// call it in their cleanup.
func Unregister(name string) {
	mu.Lock()
	defer mu.Unlock()
	models = slices.DeleteFunc(models, func(m Model) bool { return m.Name == name })
}

// Variants returns the registered variants by name.
func Variants() []Variant {
	mu.RLock()
	defer mu.RUnlock()
	var out []Variant
	for _, n := range variantNames() {
		out = append(out, variants[n])
	}
	return out
}

// Offered returns the models made of a variant that their bases offer.
func Offered(variant string) []Model {
	var out []Model
	for _, m := range Listed() {
		if m.Variant == variant {
			out = append(out, m)
		}
	}
	return out
}
