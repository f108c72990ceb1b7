package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/pushpull/pushpull/internal/sandbox"
	"github.com/pushpull/pushpull/registry"
	"github.com/pushpull/pushpull/timeline"
)

func newDemoCmd() *cobra.Command {
	var optionFlags []string
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Show every model serving identical timelines, on a throw-away MariaDB",
		Long: fmt.Sprintf(`demo starts a private, throw-away MariaDB and memcached, opens every model
(%s), writes a small social network into them (6 users, follows, 30 posts, a
late follow and an unfollow), and prints:

  - the newest page of three users' home timelines from every model side by
    side, one column of message ids per model;
  - whether all models returned identical timelines for every user
    (same ids, authors and bodies, on the newest page and on a complete walk
    in pages of 3);
  - a walk through one timeline in pages of 3, showing the cursors that
    'pushpull timeline --before' takes.

Every write goes to %s:
one model per database, the one whose writes keep the most state beside
the database (registry.Bench.WriteRank). The other
models share those databases and only read: models of one database differ
in how they compute a timeline, not in what the database holds.

The server uses small, non-durable settings (internal/sandbox.TestSettings)
so that the demo starts fast; they are not the benchmark's settings. The
server and its directory are removed when the demo ends, also on Ctrl-C. It
takes a few seconds. The exit code is 1 if the models disagree.

--option name=value sets a model option of every model that declares it
(pushpull --help lists them); the others keep their defaults, and one that
no model declares is refused.`,
			strings.Join(registry.Names(demoModels()), ", "), strings.Join(registry.Names(demoWriters(demoModels())), ", ")),
		Example: `  pushpull demo
  pushpull demo > demo.txt
  pushpull demo --option cap=3 --option threshold=2`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			options, err := parseOptions(optionFlags)
			if err != nil {
				return err
			}
			if err := registry.CheckShared(demoModels(), options); err != nil {
				return &usageError{fmt.Errorf("--option: %w", err)}
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runDemo(ctx, cmd.OutOrStdout(), cmd.ErrOrStderr(), options)
		},
	}
	cmd.Flags().StringArrayVar(&optionFlags, "option", nil, optionUsage+"; given to every model that declares it")
	return cmd
}

type demoUser struct {
	id   timeline.UserID
	name string
}

var demoUsers = []demoUser{{1, "alice"}, {2, "bob"}, {3, "carol"}, {4, "dave"}, {5, "erin"}, {6, "frank"}}

// demoStep is one write of the demo script.
type demoStep struct {
	op       string // "follow", "unfollow" or "post"
	a, b     timeline.UserID
	body     string
	headline string // printed when the step runs, if set
}

func demoFollow(a, b timeline.UserID) demoStep { return demoStep{op: "follow", a: a, b: b} }
func demoPost(a timeline.UserID, body string) demoStep {
	return demoStep{op: "post", a: a, body: body}
}

var demoScript = []demoStep{
	demoFollow(1, 2), demoFollow(1, 3), demoFollow(1, 4),
	demoFollow(2, 1), demoFollow(2, 3),
	demoFollow(3, 1), demoFollow(3, 2), demoFollow(3, 5), demoFollow(3, 6),
	demoFollow(4, 1), demoFollow(4, 6),
	demoFollow(5, 1), demoFollow(5, 2), demoFollow(5, 3), demoFollow(5, 4), demoFollow(5, 6),
	demoFollow(6, 2),
	demoPost(1, "Morning! Coffee first, then the quarterly report."),
	demoPost(2, "Anyone know a good bike shop near the station?"),
	demoPost(4, "The 8:15 train is late again."),
	demoPost(3, "Finished the first draft of my talk for Thursday."),
	demoPost(6, "Back from the mountains: 40 km in two days, zero blisters."),
	demoPost(5, "Trying a new sourdough recipe this weekend."),
	demoPost(1, "@bob Velo Works on Elm Street, ask for Sam."),
	demoPost(2, "@alice thanks, going there at lunch."),
	demoPost(4, "Still waiting. Third coffee."),
	demoPost(3, "Rehearsed the talk twice, 19 minutes both times."),
	demoPost(6, "Photos from the ridge are up."),
	demoPost(5, "Farmers market opens at 7 now."),
	demoPost(1, "Report sent. Going for a walk."),
	demoPost(2, "New bike! Well, new to me."),
	demoPost(4, "Made it. 40 minutes late."),
	{op: "follow", a: 6, b: 1, headline: "frank follows alice: her earlier posts enter his timeline at once"},
	demoPost(3, "Slides are 80% done, the last 20% takes the other 80%."),
	demoPost(5, "The sourdough did not rise. Tips welcome."),
	demoPost(6, "@erin feed the starter twice the day before."),
	demoPost(1, "Who is coming to the picnic on Saturday?"),
	demoPost(2, "@alice me, bringing lemonade."),
	demoPost(4, "Working from home tomorrow, no more trains this week."),
	{op: "unfollow", a: 1, b: 4, headline: "alice unfollows dave: his posts leave her timeline at once"},
	demoPost(4, "Anyone else hear the thunder?"),
	demoPost(3, "@alice count me in for the picnic."),
	demoPost(5, "Second try rose nicely."),
	demoPost(6, "Rain all weekend, picnic moved indoors?"),
	demoPost(1, "Picnic is on, rain or shine. Bring umbrellas."),
	demoPost(2, "Lemonade is made."),
	demoPost(5, "Shopping list:\n- oat milk\n- lemons\n- flour"),
	demoPost(2, "Café crème at the corner bistro, très bien ☕🥐"),
	demoPost(3, "Talk went well, slides are online."),
}

func demoName(id timeline.UserID) string {
	for _, u := range demoUsers {
		if u.id == id {
			return u.name
		}
	}
	return fmt.Sprint(int64(id))
}

// demoWriters are the models every write goes to, in the order of models:
// each model without a database, and for each database the model of
// lowest WriteRank, whose writes keep the state the others' reads need.
func demoWriters(models []registry.Model) []registry.Model {
	var out []registry.Model
	for _, m := range models {
		i := slices.IndexFunc(out, func(w registry.Model) bool { return w.Persistent() && w.Database == m.Database })
		switch {
		case !m.Persistent() || i < 0:
			out = append(out, m)
		case m.Bench.WriteRank < out[i].Bench.WriteRank:
			out[i] = m
		}
	}
	return out
}

// demoRoles picks the models the demo's cursor walk uses: the reference
// (memory), the paper's pull model, another model of its database, and a
// model of another database.
type demoRoles struct {
	reference, walker, sameDB, otherDB string
}

func pickDemoRoles(models []registry.Model) (demoRoles, error) {
	var r demoRoles
	for _, m := range models {
		if m.Family == registry.FamilyReference && r.reference == "" {
			r.reference = m.Name
		}
		if m.Family == registry.FamilyPull && m.Bench.Paper && r.walker == "" {
			r.walker = m.Name
		}
	}
	walker := slices.IndexFunc(models, func(m registry.Model) bool { return m.Name == r.walker })
	if r.reference == "" || walker < 0 {
		return r, errors.New("demo: the registry lacks the reference model or the paper's pull model")
	}
	for _, m := range models {
		switch {
		case !m.Persistent() || m.Name == r.walker:
		case m.Database == models[walker].Database && r.sameDB == "":
			r.sameDB = m.Name
		case m.Database != models[walker].Database && r.otherDB == "":
			r.otherDB = m.Name
		}
	}
	if r.sameDB == "" || r.otherDB == "" {
		return r, errors.New("demo: the registry lacks a second model on the paper's pull database, or a model on another database")
	}
	return r, nil
}

// runDemo runs the demo, giving each model the options of options it
// declares.
func runDemo(ctx context.Context, out, stderr io.Writer, options map[string]string) (err error) {
	fmt.Fprintln(stderr, "pushpull demo: starting a throw-away MariaDB, memcached and Redis (small, non-durable test settings)...")
	start := time.Now()
	sb, err := sandbox.Start(ctx, sandbox.Options{MariaDB: true, Memcached: true, Redis: true, Settings: sandbox.TestSettings()})
	if err != nil {
		return err
	}
	defer func() {
		if serr := sb.Stop(); serr != nil && err == nil {
			err = serr
		}
	}()
	fmt.Fprintf(stderr, "pushpull demo: MariaDB, memcached and Redis ready in %v\n", time.Since(start).Round(100*time.Millisecond))
	fmt.Fprintf(out, "MariaDB, memcached and Redis sandbox in %s\n", sb.Dir)
	fmt.Fprintf(out, "(small, non-durable test settings: innodb_buffer_pool_size=%s, innodb_flush_log_at_trx_commit=%s; fine for a demo, not for measurements)\n\n",
		sb.Settings["innodb_buffer_pool_size"], sb.Settings["innodb_flush_log_at_trx_commit"])

	models := demoModels()
	names := registry.Names(models)
	roles, err := pickDemoRoles(models)
	if err != nil {
		return err
	}
	writers := registry.Names(demoWriters(models))
	open := map[string]timeline.Store{}
	defer func() {
		for _, s := range open {
			s.Close()
		}
	}()
	// Stores that keep less beside the database open first: one that keeps
	// memcached state records it in its database, and the others would
	// then have to keep it too (see registry.Bench.WriteRank).
	where := map[string][]string{}
	var databases, memcached, redis []string
	for _, m := range registry.OpenOrder(models) {
		s, err := m.Open(ctx, registry.Config{DSN: sb.DSN, MaxConns: 8, Memcache: []string{sb.MemcacheAddr}, Redis: sb.RedisAddr, Options: m.OwnOptions(options)})
		if err != nil {
			return fmt.Errorf("open %s: %w", m.Name, err)
		}
		open[m.Name] = s
		if m.Persistent() {
			if where[m.Database] == nil {
				databases = append(databases, m.Database)
			}
			where[m.Database] = append(where[m.Database], m.Name)
		}
		if m.Needs&registry.Memcached != 0 {
			memcached = append(memcached, m.Name)
		}
		if m.Needs&registry.Redis != 0 {
			redis = append(redis, m.Name)
		}
	}
	var placed []string
	for _, db := range databases {
		placed = append(placed, fmt.Sprintf("%s in database %s", strings.Join(where[db], ", "), db))
	}
	fmt.Fprintf(out, "Opened %s: %s (%s also keep state in memcached at %s", strings.Join(names, ", "), strings.Join(placed, "; "), strings.Join(memcached, " and "), sb.MemcacheAddr)
	if len(redis) > 0 {
		fmt.Fprintf(out, "; %s in Redis at %s", strings.Join(redis, " and "), sb.RedisAddr)
	}
	fmt.Fprintln(out, ").")
	if len(options) > 0 {
		fmt.Fprintf(out, "Options: %s.\n", registry.OptionsTaken(models, options))
	}

	// Write.
	var nFollow, nUnfollow, nPost int
	for _, st := range demoScript {
		if st.headline != "" {
			fmt.Fprintf(out, "  after %d posts, %s\n", nPost, st.headline)
		}
		var ids []timeline.MessageID
		for _, m := range writers {
			s := open[m]
			switch st.op {
			case "follow":
				err = s.Follow(ctx, st.a, st.b)
			case "unfollow":
				err = s.Unfollow(ctx, st.a, st.b)
			case "post":
				var msg timeline.Message
				msg, err = s.Post(ctx, st.a, st.body)
				ids = append(ids, msg.ID)
			}
			if err != nil {
				return fmt.Errorf("%s: %s: %w", m, st.op, err)
			}
		}
		switch st.op {
		case "follow":
			nFollow++
		case "unfollow":
			nUnfollow++
		case "post":
			nPost++
		}
		if len(ids) > 0 && slices.ContainsFunc(ids, func(id timeline.MessageID) bool { return id != ids[0] }) {
			fmt.Fprintf(out, "  note: post %d got different ids: %v (from %s)\n", nPost, ids, strings.Join(writers, ", "))
		}
	}
	fmt.Fprintf(out, "Wrote %d follows, %d posts and %d unfollow among %d users to each of %s.\n\n",
		nFollow, nPost, nUnfollow, len(demoUsers), strings.Join(writers, ", "))

	// Read every user's timeline from every model: the newest page, and a
	// complete walk in pages of 3.
	type reading struct {
		newest timeline.Page
		walk   []timeline.Page
	}
	read := map[string]map[timeline.UserID]reading{}
	for _, m := range names {
		read[m] = map[timeline.UserID]reading{}
		for _, u := range demoUsers {
			var r reading
			if r.newest, err = open[m].Timeline(ctx, u.id, timeline.Query{}); err != nil {
				return fmt.Errorf("%s: timeline of %s: %w", m, u.name, err)
			}
			if r.walk, err = walk(ctx, open[m], u.id, 3); err != nil {
				return fmt.Errorf("%s: timeline of %s: %w", m, u.name, err)
			}
			read[m][u.id] = r
		}
	}

	// Show three users side by side.
	const shown = 6
	for _, u := range []demoUser{demoUsers[0], demoUsers[2], demoUsers[5]} {
		ref := read[roles.reference][u.id].newest.Messages
		fmt.Fprintf(out, "%s (user %d) follows %s. Newest %d messages of their home timeline, message id per model:\n",
			u.name, u.id, followeeNames(u.id), min(shown, len(ref)))
		tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "  \t%s\tauthor\tbody\n", strings.Join(names, "\t"))
		for i := range min(shown, len(ref)) {
			fmt.Fprintf(tw, "  \t")
			for _, m := range names {
				fmt.Fprintf(tw, "%s\t", cell(read[m][u.id].newest.Messages, i, ref[i]))
			}
			fmt.Fprintf(tw, "%s\t%s\n", demoName(ref[i].Author), oneLine(ref[i].Body))
		}
		tw.Flush()
		fmt.Fprintln(out)
	}

	// Compare everything.
	var diffs []string
	for _, m := range names {
		if m == roles.reference {
			continue
		}
		for _, u := range demoUsers {
			want, got := read[roles.reference][u.id], read[m][u.id]
			if d := diffPages([]timeline.Page{want.newest}, []timeline.Page{got.newest}); d != "" {
				diffs = append(diffs, fmt.Sprintf("%s, %s's newest page: %s", m, u.name, d))
			}
			if d := diffPages(want.walk, got.walk); d != "" {
				diffs = append(diffs, fmt.Sprintf("%s, %s's timeline in pages of 3: %s", m, u.name, d))
			}
		}
	}
	agree := len(diffs) == 0
	if agree {
		fmt.Fprintf(out, "Agreement: all %d models returned identical timelines for all %d users\n", len(names), len(demoUsers))
		fmt.Fprintf(out, "(same message ids, authors and bodies, in the same order and pages: the newest %d, and complete walks in pages of 3).\n\n", timeline.DefaultLimit)
	} else {
		fmt.Fprintf(out, "DISAGREEMENT: the models returned different timelines (%s is the reference):\n", roles.reference)
		for _, d := range diffs {
			fmt.Fprintf(out, "  %s\n", d)
		}
		fmt.Fprintln(out)
	}

	// Walk one timeline, showing cursors.
	u := demoUsers[0]
	walker := roles.walker
	pages := read[walker][u.id].walk
	fmt.Fprintf(out, "%s's timeline on %s, 3 messages a page (pushpull timeline --model %s --user %d --limit 3 [--before CURSOR]):\n",
		u.name, walker, walker, u.id)
	for i, p := range pages {
		ids := make([]string, len(p.Messages))
		for j, msg := range p.Messages {
			ids[j] = fmt.Sprint(int64(msg.ID))
		}
		fmt.Fprintf(out, "  page %d  ids %-10s  next: %s\n", i+1, strings.Join(ids, " "), cursorString(p.Next, "(end)"))
	}
	if len(pages) > 1 {
		cur := pages[0].Next
		_, errOther := open[roles.otherDB].Timeline(ctx, u.id, timeline.Query{Limit: 3, Before: cur})
		same := "gives the same page 2"
		if p, err := open[roles.sameDB].Timeline(ctx, u.id, timeline.Query{Limit: 3, Before: cur}); err != nil {
			same = "error: " + err.Error()
		} else if diffPages([]timeline.Page{p}, pages[1:2]) != "" {
			same = "a different page"
		}
		_, errUser := open[walker].Timeline(ctx, demoUsers[1].id, timeline.Query{Limit: 3, Before: cur})
		fmt.Fprintf(out, "Cursors are opaque and signed for one database and one user. Page 1's cursor\n")
		tw := tabwriter.NewWriter(out, 0, 0, 1, ' ', 0)
		fmt.Fprintf(tw, "  on %s (same database as %s):\t%s\n", roles.sameDB, walker, same)
		fmt.Fprintf(tw, "  on %s (another database):\t%s\n", roles.otherDB, refusal(errOther))
		fmt.Fprintf(tw, "  for %s's timeline:\t%s\n", demoUsers[1].name, refusal(errUser))
		tw.Flush()
	}
	fmt.Fprintln(out)

	fmt.Fprintln(stderr, "pushpull demo: stopping the sandbox")
	if !agree {
		return errors.New("the models disagree (see above)")
	}
	return nil
}

// walk reads user's whole timeline in pages of limit.
func walk(ctx context.Context, s timeline.Store, user timeline.UserID, limit int) ([]timeline.Page, error) {
	var pages []timeline.Page
	for p, err := range timeline.Pages(ctx, s, user, timeline.Query{Limit: limit}) {
		if err != nil {
			return nil, err
		}
		if pages = append(pages, p); len(pages) > 1000 {
			return nil, errors.New("walk did not end after 1000 pages")
		}
	}
	return pages, nil
}

// diffPages describes the first difference between two sequences of pages,
// comparing ids, authors, bodies and where the pages end; "" if none.
func diffPages(want, got []timeline.Page) string {
	if len(want) != len(got) {
		return fmt.Sprintf("%d pages, want %d", len(got), len(want))
	}
	for i := range want {
		w, g := want[i].Messages, got[i].Messages
		if len(w) != len(g) {
			return fmt.Sprintf("page %d has %d messages, want %d", i+1, len(g), len(w))
		}
		for j := range w {
			if w[j].ID != g[j].ID || w[j].Author != g[j].Author || w[j].Body != g[j].Body {
				return fmt.Sprintf("page %d, message %d: got id %d by %s %q, want id %d by %s %q",
					i+1, j+1, g[j].ID, demoName(g[j].Author), g[j].Body, w[j].ID, demoName(w[j].Author), w[j].Body)
			}
		}
		if (want[i].Next == "") != (got[i].Next == "") {
			return fmt.Sprintf("page %d: next cursor %q, want %s", i+1, got[i].Next, map[bool]string{true: "none", false: "one"}[want[i].Next == ""])
		}
	}
	return ""
}

// cell is one model's message id at row i, marked with '*' when it differs
// from the reference message.
func cell(msgs []timeline.Message, i int, ref timeline.Message) string {
	if i >= len(msgs) {
		return "-*"
	}
	m := msgs[i]
	if m.ID != ref.ID || m.Author != ref.Author || m.Body != ref.Body {
		return fmt.Sprintf("%d*", m.ID)
	}
	return fmt.Sprint(int64(m.ID))
}

// followeeNames lists whom user follows at the end of the script. (The Store
// interface has no way to list followees.)
func followeeNames(user timeline.UserID) string {
	follows := map[timeline.UserID]bool{}
	for _, st := range demoScript {
		if st.a != user {
			continue
		}
		switch st.op {
		case "follow":
			follows[st.b] = true
		case "unfollow":
			delete(follows, st.b)
		}
	}
	var names []string
	for _, u := range demoUsers {
		if follows[u.id] {
			names = append(names, u.name)
		}
	}
	if len(names) == 0 {
		return "nobody"
	}
	return strings.Join(names, ", ")
}

func refusal(err error) string {
	switch {
	case err == nil:
		return "accepted (unexpected)"
	case errors.Is(err, timeline.ErrInvalidCursor):
		return "refused (" + err.Error() + ")"
	default:
		return "error: " + err.Error()
	}
}

// demoModels are the models the demo runs: every model but those on Vitess,
// whose cluster takes longer to start than the demo runs (pushpull sandbox
// --vitess starts one).
func demoModels() []registry.Model {
	var out []registry.Model
	for _, m := range registry.Models() {
		if !m.OnVitess() {
			out = append(out, m)
		}
	}
	return out
}
