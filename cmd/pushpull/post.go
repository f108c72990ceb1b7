package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pushpull/pushpull/timeline"
)

func newPostCmd(getenv func(string) string) *cobra.Command {
	sf := serverFlags{getenv: getenv}
	var model, author string
	cmd := &cobra.Command{
		Use:   "post --model MODEL --author ID BODY...",
		Short: "Post a message and print its id",
		Long: `post stores a message by the user --author and prints the id the store
assigned to it, alone on a line, so scripts can capture it.

The body is the remaining arguments joined by single spaces. It must be valid
UTF-8 of 1 to 280 characters (Unicode code points, not bytes) and is stored
byte for byte.

On push the message is also copied into the mailbox of every current follower
of the author, in the same transaction; on the pull models only the message is
stored. The pull-* models share one database, so a message posted with any of
them is seen by all three.

The model's database and schema are created if missing.`,
		Example: `  pushpull post --model {push} --author 2 "Lunch at the new ramen place?"
  id=$(pushpull post --model {pull} --author 3 Running late, start without me)`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("post needs a message body after the flags")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			m, err := storeModel(model)
			if err != nil {
				return err
			}
			if author == "" {
				return usagef("--author is required: the id of the user who posts")
			}
			id, err := parseUserID("author", author)
			if err != nil {
				return err
			}
			body := strings.Join(args, " ")
			if err := timeline.CheckBody(body); err != nil {
				return err
			}
			s, err := sf.openStore(cmd.Context(), m)
			if err != nil {
				return err
			}
			defer s.Close()
			msg, err := s.Post(cmd.Context(), id, body)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), int64(msg.ID))
			return nil
		},
	}
	cmd.Flags().StringVar(&model, "model", "", "store model, one of: "+strings.Join(persistentNames(), ", "))
	cmd.Flags().StringVar(&author, "author", "", "id of the posting user (a positive integer)")
	sf.register(cmd)
	return cmd
}
