package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/pushpull/pushpull/timeline"
)

func newTimelineCmd(getenv func(string) string) *cobra.Command {
	sf := serverFlags{getenv: getenv}
	var (
		model, user, author  string
		before, since, after string
		limit                int
		asJSON               bool
	)
	cmd := &cobra.Command{
		Use:   "timeline --model MODEL (--user ID | --author ID) [--limit N] [--before B] [--since S | --after A] [--json]",
		Short: "Print one page of a user's home timeline, or of an author's own messages",
		Long: `timeline prints one page of the home timeline of --user: the messages of the
users they follow, newest first, never their own. With --author instead, it
prints one page of that user's own messages (a profile).

The output is a table with the columns id, author, created_at (UTC, RFC 3339)
and body. Bodies are printed whole, on one line: backslashes, newlines, tabs
and other non-printable characters are escaped (\\, \n, \t, \xNN, \uNNNN).
The last two lines are "next: CURSOR" when older messages remain, or
"next: (end)", and "prev: CURSOR", which asks for what is newer than the
page, or "prev: (none)" on an empty page.

To read the next older page, pass the next cursor to --before. To poll for
newer messages, pass the prev cursor to --after: the oldest --limit newer
than it, so a reader who polls by --after and then the new page's prev sees
every message once, none skipped. --since gives the newest --limit newer
than it instead (a gap may remain below them). --before, --since and
--after also take a message id. Pages are keyset pages on the message id,
so a walk never repeats or skips a message even while new ones are posted.
Cursors are opaque and signed: they are valid only for the timeline and the
database that issued them (the pull-* models share theirs), and a forged or
foreign cursor is refused.

--json prints {"messages":[{"id":..,"author":..,"body":..,"created_at":..}],
"next":"..","prev":".."} instead; each is "" where the table says (end) or
(none).`,
		Example: `  pushpull timeline --model {push} --user 1
  pushpull timeline --model {pull} --user 1 --limit 5
  pushpull timeline --model {pull} --user 1 --limit 5 --before AQAAAAAAAAAF...
  pushpull timeline --model {pull} --user 1 --after 1234      # newer than message 1234
  pushpull timeline --model {pull} --author 2                # user 2's own messages
  pushpull timeline --model {pull} --user 1 --json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			m, err := storeModel(model)
			if err != nil {
				return err
			}
			if (user == "") == (author == "") {
				return usagef("give one of --user (a home timeline) and --author (an author's own messages)")
			}
			field, owner := "user", user
			if author != "" {
				field, owner = "author", author
			}
			id, err := parseUserID(field, owner)
			if err != nil {
				return err
			}
			if _, err := timeline.PageLimit(limit); err != nil {
				return err
			}
			if since != "" && after != "" {
				return usagef("--since and --after exclude each other")
			}
			q := timeline.Query{Limit: limit}
			for _, b := range []struct {
				field, value string
				to           *timeline.Cursor
			}{{"cursor", before, &q.Before}, {"since", since, &q.Since}, {"after", after, &q.After}} {
				if *b.to, err = parseBound(b.field, b.value); err != nil {
					return err
				}
			}
			s, err := sf.openStore(cmd.Context(), m)
			if err != nil {
				return err
			}
			defer s.Close()
			read := s.Timeline
			if author != "" {
				read = s.AuthorTimeline
			}
			page, err := read(cmd.Context(), id, q)
			if err != nil {
				return err
			}
			if asJSON {
				return writePageJSON(cmd.OutOrStdout(), page)
			}
			return writePageTable(cmd.OutOrStdout(), page)
		},
	}
	cmd.Flags().StringVar(&model, "model", "", "store model, one of: "+strings.Join(persistentNames(), ", "))
	cmd.Flags().StringVar(&user, "user", "", "id of the user whose home timeline to read")
	cmd.Flags().StringVar(&author, "author", "", "id of the user whose own messages to read (instead of --user)")
	cmd.Flags().IntVar(&limit, "limit", 0, fmt.Sprintf("page size, 1..%d (default %d)", timeline.MaxLimit, timeline.DefaultLimit))
	cmd.Flags().StringVar(&before, "before", "", "cursor printed as \"next:\" by the previous page, or a message id: only older messages (default: the newest page)")
	cmd.Flags().StringVar(&since, "since", "", "cursor or message id: the newest messages newer than it")
	cmd.Flags().StringVar(&after, "after", "", "cursor printed as \"prev:\", or a message id: the oldest messages newer than it (a poll)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the page as JSON")
	sf.register(cmd)
	return cmd
}

// jsonMessage and jsonPage are the --json output.
type jsonMessage struct {
	ID        int64     `json:"id"`
	Author    int64     `json:"author"`
	Body      string    `json:"body"`
	CreatedAt time.Time `json:"created_at"`
}

type jsonPage struct {
	Messages []jsonMessage `json:"messages"`
	Next     string        `json:"next"`
	Prev     string        `json:"prev"`
}

func writePageJSON(w io.Writer, page timeline.Page) error {
	out := jsonPage{Messages: make([]jsonMessage, 0, len(page.Messages)), Next: string(page.Next), Prev: string(page.Prev)}
	for _, m := range page.Messages {
		out.Messages = append(out.Messages, jsonMessage{ID: int64(m.ID), Author: int64(m.Author), Body: m.Body, CreatedAt: m.CreatedAt.UTC()})
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(out)
}

func writePageTable(w io.Writer, page timeline.Page) error {
	if len(page.Messages) == 0 {
		fmt.Fprintln(w, "(no messages)")
	} else {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "id\tauthor\tcreated_at\tbody")
		for _, m := range page.Messages {
			fmt.Fprintf(tw, "%d\t%d\t%s\t%s\n", m.ID, m.Author, m.CreatedAt.UTC().Format(time.RFC3339), oneLine(m.Body))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if _, err := fmt.Fprintln(w, "next:", cursorString(page.Next, "(end)")); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, "prev:", cursorString(page.Prev, "(none)"))
	return err
}

// cursorString prints c, or none when there is no cursor.
func cursorString(c timeline.Cursor, none string) string {
	if c == "" {
		return none
	}
	return string(c)
}

// oneLine escapes a body so that it prints on one line and can be read back
// unambiguously: backslash, newline, carriage return and tab get the usual
// backslash escapes, other control and non-printable characters \xNN or
// \uNNNN. Printable Unicode (é, emoji) is kept as is.
func oneLine(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x80 && !unicode.IsPrint(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case r == utf8.RuneError || !unicode.IsPrint(r) && !unicode.Is(unicode.Variation_Selector, r) && r != '\u200d':
			if r > 0xffff {
				fmt.Fprintf(&b, `\U%08x`, r)
			} else {
				fmt.Fprintf(&b, `\u%04x`, r)
			}
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
