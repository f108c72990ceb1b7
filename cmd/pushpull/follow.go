package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pushpull/pushpull/timeline"
)

// newFollowCmd builds `follow` (follow true) or `unfollow` (follow false).
func newFollowCmd(getenv func(string) string, follow bool) *cobra.Command {
	sf := serverFlags{getenv: getenv}
	var model string
	cmd := &cobra.Command{
		Use:   "follow --model MODEL FOLLOWER FOLLOWEE",
		Short: "Make one user follow another",
		Long: `follow makes the user FOLLOWER follow the user FOLLOWEE. The followee's
earlier messages appear in the follower's home timeline at once: on push they
are copied into the follower's mailbox in the same transaction, on the pull
models the next read simply finds them.

Following someone already followed changes nothing. A user cannot follow
themselves. There is no user registry: any positive id is a user.

The model's database and schema are created if missing.`,
		Example: `  pushpull follow --model {push} 1 2          # user 1 follows user 2
  pushpull follow --model {pull} 1 2`,
	}
	done := "now follows"
	if !follow {
		cmd.Use = "unfollow --model MODEL FOLLOWER FOLLOWEE"
		cmd.Short = "Make one user stop following another"
		cmd.Long = `unfollow makes the user FOLLOWER stop following the user FOLLOWEE. The
followee's messages leave the follower's home timeline at once: on push they
are deleted from the follower's mailbox in the same transaction, on the pull
models the next read no longer looks for them.

Unfollowing someone not followed changes nothing.

The model's database and schema are created if missing.`
		cmd.Example = `  pushpull unfollow --model {push} 1 2        # user 1 stops following user 2`
		done = "no longer follows"
	}
	cmd.Args = exactArgs(2, "FOLLOWER FOLLOWEE, two user ids")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		m, err := storeModel(model)
		if err != nil {
			return err
		}
		follower, err := parseUserID("follower", args[0])
		if err != nil {
			return err
		}
		followee, err := parseUserID("followee", args[1])
		if err != nil {
			return err
		}
		if err := timeline.CheckFollow(follower, followee); err != nil {
			return err
		}
		s, err := sf.openStore(cmd.Context(), m)
		if err != nil {
			return err
		}
		defer s.Close()
		if follow {
			err = s.Follow(cmd.Context(), follower, followee)
		} else {
			err = s.Unfollow(cmd.Context(), follower, followee)
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "user %d %s user %d (%s)\n", follower, done, followee, model)
		return nil
	}
	cmd.Flags().StringVar(&model, "model", "", "store model, one of: "+strings.Join(persistentNames(), ", "))
	sf.register(cmd)
	return cmd
}
