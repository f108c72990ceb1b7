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
		model, user, before string
		limit               int
		asJSON              bool
	)
	cmd := &cobra.Command{
		Use:   "timeline --model MODEL --user ID [--limit N] [--before CURSOR] [--json]",
		Short: "Print one page of a user's home timeline",
		Long: `timeline prints one page of the home timeline of --user: the messages of the
users they follow, newest first, never their own.

The output is a table with the columns id, author, created_at (UTC, RFC 3339)
and body. Bodies are printed whole, on one line: backslashes, newlines, tabs
and other non-printable characters are escaped (\\, \n, \t, \xNN, \uNNNN).
The last line is "next: CURSOR" when older messages remain, or "next: (end)".

To read the next page, pass that cursor to --before. Pages are keyset pages
on the message id, so a walk never repeats or skips a message even while new
ones are posted. Cursors are opaque and signed: they are valid only for the
user and the database that issued them (the pull-* models share theirs),
and a forged or foreign cursor is refused.

--json prints {"messages":[{"id":..,"author":..,"body":..,"created_at":..}],
"next":".."} instead; "next" is "" at the end.`,
		Example: `  pushpull timeline --model {push} --user 1
  pushpull timeline --model {pull} --user 1 --limit 5
  pushpull timeline --model {pull} --user 1 --limit 5 --before AQAAAAAAAAAF...
  pushpull timeline --model {pull} --user 1 --json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			m, err := storeModel(model)
			if err != nil {
				return err
			}
			if user == "" {
				return usagef("--user is required: the id of the user whose home timeline to read")
			}
			id, err := parseUserID("user", user)
			if err != nil {
				return err
			}
			if _, err := timeline.PageLimit(limit); err != nil {
				return err
			}
			s, err := sf.openStore(cmd.Context(), m)
			if err != nil {
				return err
			}
			defer s.Close()
			page, err := s.Timeline(cmd.Context(), id, timeline.Query{Limit: limit, Before: timeline.Cursor(before)})
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
	cmd.Flags().IntVar(&limit, "limit", 0, fmt.Sprintf("page size, 1..%d (default %d)", timeline.MaxLimit, timeline.DefaultLimit))
	cmd.Flags().StringVar(&before, "before", "", "cursor printed as \"next:\" by the previous page (default: the newest page)")
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
}

func writePageJSON(w io.Writer, page timeline.Page) error {
	out := jsonPage{Messages: make([]jsonMessage, 0, len(page.Messages)), Next: string(page.Next)}
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
	_, err := fmt.Fprintln(w, "next:", nextString(page.Next))
	return err
}

func nextString(c timeline.Cursor) string {
	if c == "" {
		return "(end)"
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
