// Package results holds the documents the benchmark's commands save (a run
// as a Result, a Sweep, a Recommendation, a DecisionMap), saves and loads
// them, and renders them as tables, CSV and plots. It stands above the
// designs: no package a service embeds imports it.
//
// A run is measured once but read many times, by people and by programs, long
// after the database that produced it is gone. So a Result carries everything
// needed to interpret its numbers without the machine: the dataset's shape,
// the server and its durability settings, the client's concurrency, the
// harness's own ceiling, and any failure. It is saved as result.json (the
// record of truth), result.csv (for spreadsheets) and result.png (for eyes),
// and rendered as a plain-text table shaped like the one in Kazuho Oku's 2008
// paper, so that our figures can be set against his (see Paper).
//
// Zero is a legitimate measurement and "not measured" is not, so the two are
// kept apart: a phase that did not run has Skipped set (or no operations at
// all) and is rendered as "–", never as 0.
package results

import (
	"os"
	"strings"
	"time"

	"github.com/pushpull/pushpull/registry"
)

// FormatVersion is the version of the result.json format written by Save.
// Load refuses other versions rather than misread them.
//
// Version 2 added each model's roles (family, paper, base, shared_submit),
// which version 1 left to be guessed from the name. Version 3 added each
// phase's cost and each model's mixed traffic (per operation type, closed
// or open loop, with the rate search). Version 4 added the dataset's degree
// distributions (p99 and p50 of followers and followees per user, and
// log-binned histograms), the graph's parameters and the users' activity: a
// version 4 run may have drawn its readers and authors by activity rather
// than uniformly, which a reader of its figures must know. Load reads
// versions 2 and 3 as version 4 without what they lack (see upgrade).
const FormatVersion = 4

// Result is the record of one benchmark run.
type Result struct {
	Version     int         `json:"version"`
	StartedAt   time.Time   `json:"started_at"`
	FinishedAt  time.Time   `json:"finished_at"`
	Command     string      `json:"command"` // the command line that produced it
	Dataset     Dataset     `json:"dataset"`
	Environment Environment `json:"environment"`
	Load        *DataLoad   `json:"load,omitempty"`
	// Vitess describes the run's Vitess cluster, if it had one.
	Vitess *Vitess `json:"vitess,omitempty"`
	// Harness is the rate of a no-op store driven by the same load
	// generator: the harness's own ceiling. A model's rate close to it
	// measures the harness, not the model.
	Harness *Phase `json:"harness,omitempty"`
	// MemcacheGet is the rate of plain memcached gets of one page-sized
	// value, measured in the same run: the ceiling of a cached read.
	MemcacheGet *Phase `json:"memcache_get,omitempty"`
	// Idle is the CPU each process burned while nothing ran, over a
	// short quiet interval with the data loaded and the stores open: the
	// floor under the CPU a rate needs. Absent when the run's costs could
	// not be measured, and from runs that predate it.
	Idle   *ProcessCPU `json:"idle_cpu,omitempty"`
	Models []Model     `json:"models"`
	// Goals are the target figures the run was asked to reach, with what
	// it reached. A missed goal is a finding, not a failure of the run.
	Goals    []Goal   `json:"goals,omitempty"`
	Failures []string `json:"failures,omitempty"` // non-empty = run failed
	// Notes are remarks that qualify the numbers without failing the run,
	// e.g. why a model was skipped.
	Notes []string `json:"notes,omitempty"`
}

// Dataset describes the generated social graph and message history. The
// paper's dataset is 10,000 users, 1,000,000 messages and 42.9 followees per
// user on average; Scale is our size relative to it (1 = the paper's).
type Dataset struct {
	Users        int     `json:"users"`
	Messages     int     `json:"messages"`
	AvgFollowees float64 `json:"avg_followees"`
	Seed         int64   `json:"seed"`
	Graph        string  `json:"graph"` // how followees were drawn, e.g. "uniform", "zipf(s=1.1)", "powerlaw(in=2.3, out=2.5)"
	// GraphParams are the graph generator's parameters by name (e.g.
	// in_exponent, out_exponent, zipf_s); GraphFile is the edge list a
	// real graph was read from.
	GraphParams map[string]float64 `json:"graph_params,omitempty"`
	GraphFile   string             `json:"graph_file,omitempty"`
	Edges       int64              `json:"edges"` // follow relations
	// The degree figures: most, 99th and 50th percentile (nearest rank)
	// of followees and of followers per user. The percentiles and bins
	// are absent from results converted from version 2.
	MaxFollowees int `json:"max_followees"`
	P99Followees int `json:"p99_followees"`
	P50Followees int `json:"p50_followees"`
	MaxFollowers int `json:"max_followers"`
	P99Followers int `json:"p99_followers"`
	P50Followers int `json:"p50_followers"`
	// FolloweeBins and FollowerBins are the two degree distributions,
	// log-binned (see DegreesOf), for plotting.
	FolloweeBins []DegreeBin `json:"followee_bins,omitempty"`
	FollowerBins []DegreeBin `json:"follower_bins,omitempty"`
	// Activity is how the workload and the dataset chose authors and
	// readers: "uniform" (the paper's) or e.g. "skewed(post=0.5,
	// read=0.5)", rates growing with follower count; ActivityParams its
	// exponents by name.
	Activity       string             `json:"activity"`
	ActivityParams map[string]float64 `json:"activity_params,omitempty"`
	MailboxRows    int64              `json:"mailbox_rows"` // rows the push model fans out to
	// PostAudience is how many followers the author of a workload post
	// has on average, and ReadFollowees how many authors the reader of a
	// workload page follows: the dataset's AvgFollowees when users are
	// drawn uniformly, more when activity follows follower counts. 0 in
	// results that predate them.
	PostAudience  float64 `json:"post_audience,omitempty"`
	ReadFollowees float64 `json:"read_followees,omitempty"`
	Scale         float64 `json:"scale"`
}

// HasDegrees reports whether the dataset records its degree percentiles
// and distributions (results before version 4 do not).
func (d *Dataset) HasDegrees() bool { return len(d.FollowerBins) > 0 || len(d.FolloweeBins) > 0 }

// SetDegrees records the followee (out-degree) and follower (in-degree)
// distributions.
func (d *Dataset) SetDegrees(followees, followers Degrees) {
	d.MaxFollowees, d.P99Followees, d.P50Followees, d.FolloweeBins = followees.Max, followees.P99, followees.P50, followees.Bins
	d.MaxFollowers, d.P99Followers, d.P50Followers, d.FollowerBins = followers.Max, followers.P99, followers.P50, followers.Bins
}

// Durability values for Environment.Durability.
const (
	Durable = "durable" // every commit is flushed to disk, as in the paper
	Relaxed = "relaxed" // commits are flushed about once a second
)

// Environment describes where the run happened. Durability matters most: with
// relaxed flushing, submission rates are bounded by CPU rather than by fsync,
// and are not comparable with durable ones.
type Environment struct {
	ServerVersion string            `json:"server_version"`
	Durability    string            `json:"durability"` // Durable or Relaxed
	InnoDB        map[string]string `json:"innodb,omitempty"`
	CPUs          int               `json:"cpus"`
	// CPUModel is the processor's model name (LocalCPUModel); empty
	// where the system does not say, and in runs that predate it.
	CPUModel  string `json:"cpu_model,omitempty"`
	GoVersion string `json:"go_version"`
	GitCommit string `json:"git_commit"`
	OS        string `json:"os"`
	Arch      string `json:"arch"`
	// Sandbox is set when the server ran in a throwaway sandbox (e.g. a
	// container or tmpfs) whose I/O is unlike a real disk.
	Sandbox      bool    `json:"sandbox"`
	Concurrency  int     `json:"concurrency"`   // client workers per phase
	PhaseSeconds float64 `json:"phase_seconds"` // target length of each timed phase
	// WarmupSeconds is the unmeasured time before each phase, whose
	// operations a design's state saw too; nil in runs that predate it.
	WarmupSeconds *float64 `json:"warmup_seconds,omitempty"`
}

// LocalCPUModel is this machine's processor model name, as
// /proc/cpuinfo's first "model name" line gives it; empty where there is
// none.
func LocalCPUModel() string {
	data, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	for _, l := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// DataLoad records the bulk load of the dataset into each model's database
// before the timed phases. It is not one of the paper's figures, but a slow
// load is often the first sign of a misconfigured server.
type DataLoad struct {
	Seconds float64     `json:"seconds"` // wall-clock time for the whole load
	Tables  []TableLoad `json:"tables,omitempty"`
	// Flush is the end of a load into a server it may tune (a sandbox):
	// the pages it left dirty in the buffer pool written before the
	// phases measured after it. Nil when the load did not flush.
	Flush *LoadFlush `json:"flush,omitempty"`
}

// LoadFlush is the flush that ends a load: InnoDB keeps the pages a load
// writes dirty in its buffer pool and writes them in the background, at
// a pace of its own, while whatever runs next pays for it (a compressed
// table compresses each page as it is written), unless the load writes
// them first.
type LoadFlush struct {
	// DirtyPages are the buffer pool's dirty pages when the load's rows
	// were in, LeftPages those still dirty when the flush ended (0 unless
	// it stopped making progress), in 16 KiB pages.
	DirtyPages int64 `json:"dirty_pages"`
	LeftPages  int64 `json:"left_pages"`
	// Seconds is how long writing them took, part of the load's.
	Seconds float64 `json:"seconds"`
}

// TableLoad is the load of one table of one model's database.
type TableLoad struct {
	Database   string  `json:"database"` // usually the model name
	Table      string  `json:"table"`
	Rows       int64   `json:"rows"`
	Seconds    float64 `json:"seconds"`
	RowsPerSec float64 `json:"rows_per_sec"`
	// Cache says how the load cache served the table: "restored" (its
	// files were put in place instead of loading the rows), "stored"
	// (loaded, then its files kept for the next load), or "" (loaded,
	// not kept).
	Cache string `json:"cache,omitempty"`
}

// Load cache outcomes of TableLoad.Cache.
const (
	CacheRestored = "restored"
	CacheStored   = "stored"
)

// Model holds the figures of one timeline model, as package registry names
// it, and the roles that tell how to read them.
type Model struct {
	Name string `json:"name"`
	// Family is the design the model implements ("push", "pull": the
	// keys of Paper), which its figures are set against.
	Family registry.Family `json:"family,omitempty"`
	// PaperModel: one of the four models of the paper's own table. The
	// first of each family is that family's reference in the push : pull
	// ratios.
	PaperModel bool `json:"paper,omitempty"`
	// Base is, for a model that puts a cache in front of another, the
	// model behind the cache.
	Base string `json:"base,omitempty"`
	// SharedSubmit: the model posts as every model of its database does
	// (a plain insert), so its submission was measured once for all of
	// them.
	SharedSubmit bool `json:"shared_submit,omitempty"`
	// Options are the model's options as the run opened it: every one it
	// declares (registry.Model.Options) with its value, given or the
	// default (registry.Model.EffectiveOptions). Results written before they
	// were recorded have none; their runs' notes name the options given.
	Options map[string]string `json:"options,omitempty"`
	// DataBytes is data plus index length from information_schema, the
	// measure closest to the paper's data size.
	DataBytes int64 `json:"data_bytes"`
	// DiskBytes is the size of the files on disk; 0 means not measured.
	DiskBytes     int64  `json:"disk_bytes"`
	Submit        Phase  `json:"submit"`         // posting messages
	Retrieve      Phase  `json:"retrieve"`       // newest page of a home timeline
	RetrieveOlder Phase  `json:"retrieve_older"` // a page further back, via cursor
	Mixed         *Phase `json:"mixed,omitempty"`
	// RetrieveHTTP is the newest page read through the HTTP API (bench
	// --http): the Retrieve phase again, through a server of package
	// httpapi in the benchmark's process and its Client.
	RetrieveHTTP *Phase `json:"retrieve_http,omitempty"`
	// Traffic is the mixed traffic of production feeds, when the run
	// measured it (bench --mix, --rate, --find-rate).
	Traffic *Traffic `json:"traffic,omitempty"`
	// Deletes is the delete study, when the run made it (bench
	// --deletes).
	Deletes *Deletes `json:"deletes,omitempty"`
	// Returning is the returning-users study, when the run made it
	// (bench --returning).
	Returning *Returning         `json:"returning,omitempty"`
	Extra     map[string]float64 `json:"extra,omitempty"` // e.g. hit_ratio, rows_per_page
	// Burst is the burst phase, when the run had one (bench --burst).
	Burst *Burst `json:"burst,omitempty"`
}

// Goal is one target figure: Value against Target, both ratios of rates.
type Goal struct {
	Name   string  `json:"name"`   // e.g. "cached retrieval / push retrieval"
	Value  float64 `json:"value"`  // what the run measured
	Target float64 `json:"target"` // at least this
	Met    bool    `json:"met"`
	Detail string  `json:"detail,omitempty"` // which models and rates
}

// Failed reports whether the run failed. Its numbers may still be shown, but
// must not be trusted.
func (r *Result) Failed() bool { return len(r.Failures) > 0 }

// Model returns the model with the given name, or nil if the run has none.
func (r *Result) Model(name string) *Model {
	for i := range r.Models {
		if r.Models[i].Name == name {
			return &r.Models[i]
		}
	}
	return nil
}

// Duration is the wall-clock length of the run, 0 if unknown.
func (r *Result) Duration() time.Duration {
	if r.StartedAt.IsZero() || r.FinishedAt.IsZero() {
		return 0
	}
	return r.FinishedAt.Sub(r.StartedAt)
}
