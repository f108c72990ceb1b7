package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

func newDeleteCmd(getenv func(string) string) *cobra.Command {
	sf := serverFlags{getenv: getenv}
	var model, author string
	cmd := &cobra.Command{
		Use:   "delete --model MODEL --author ID MESSAGE-ID",
		Short: "Delete a message by its author",
		Long: `delete deletes the message MESSAGE-ID of the user --author: it leaves every
home timeline, the author's own timeline and every cache the model keeps. On
push it is also deleted from the mailbox of every follower of the author, in
the same transaction; with asynchronous fan-out, from the mailboxes the
fan-out reached, and its fan-out stops.

A message that does not exist, was deleted already or is another user's is
"message not found" (exit 1); a malformed id is refused (exit 2).`,
		Example: `  id=$(pushpull post --model {push} --author 2 "typo in this one")
  pushpull delete --model {push} --author 2 "$id"`,
		Args: exactArgs(1, "MESSAGE-ID, the id post printed"),
		RunE: func(cmd *cobra.Command, args []string) error {
			m, err := storeModel(model)
			if err != nil {
				return err
			}
			if author == "" {
				return usagef("--author is required: the id of the user whose message it is")
			}
			who, err := parseUserID("author", author)
			if err != nil {
				return err
			}
			id, err := parseMessageID("id", args[0])
			if err != nil {
				return err
			}
			s, err := sf.openStore(cmd.Context(), m)
			if err != nil {
				return err
			}
			defer s.Close()
			if err := s.Delete(cmd.Context(), who, id); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "deleted message %d of user %d (%s)\n", id, who, model)
			return nil
		},
	}
	cmd.Flags().StringVar(&model, "model", "", "store model, one of: "+strings.Join(persistentNames(), ", "))
	cmd.Flags().StringVar(&author, "author", "", "id of the user whose message it is")
	sf.register(cmd)
	return cmd
}
