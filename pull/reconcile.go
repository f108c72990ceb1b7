package pull

import (
	"errors"
	"fmt"

	"github.com/pushpull/pushpull/reconcile"
	"github.com/pushpull/pushpull/timeline"
)

// errNoLists: the store given to ListsChecker keeps no author lists.
var errNoLists = errors.New("not a pull store with write hooks")

// ListsChecker is the registry.Model.Reconcile of the models whose
// stores keep author lists in memcached (pull-recent, pull-active,
// hybrid-memcached): the lists against the messages (recent.State.Lists).
// The other state they keep there (follow tokens, indexes, hint targets)
// is not checked.
func ListsChecker(s timeline.Store) (reconcile.Checker, error) {
	ps, ok := s.(*Store)
	if !ok || ps.hooks == nil {
		return nil, fmt.Errorf("%T: %w", s, errNoLists)
	}
	return ps.hooks.Lists(ps.db), nil
}
