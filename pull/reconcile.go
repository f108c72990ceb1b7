package pull

import (
	"errors"
	"fmt"

	"github.com/pushpull/pushpull/pull/recent"
	"github.com/pushpull/pushpull/reconcile"
	"github.com/pushpull/pushpull/timeline"
)

// errNoLists: the store given to ListsChecker keeps no author lists.
var errNoLists = errors.New("not a pull store with write hooks")

// ListsChecker is the registry.Model.Reconcile of the models whose
// stores keep author lists in memcached (pull-recent, pull-active,
// hybrid-memcached, pull-recent@vitess): the lists against the messages
// (recent.State.Lists) and, for the models whose posts hint indexes
// (pull-active, hybrid-memcached), the indexes and the follow tokens they
// were built under against the follows and messages
// (recent.State.Indexes), joined (reconcile.Join). The hint targets are
// not checked.
func ListsChecker(s timeline.Store) (reconcile.Checker, error) {
	ps, ok := s.(*Store)
	if !ok || ps.hooks == nil {
		return nil, fmt.Errorf("%T: %w", s, errNoLists)
	}
	lists := ps.hooks.Lists(ps.db)
	indexes, ok := ps.hooks.Indexes(ps.db)
	if !ok {
		return lists, nil
	}
	return reconcile.Join(
		reconcile.Part{Checker: lists, Views: []string{recent.ListView}},
		reconcile.Part{Checker: indexes, Views: []string{recent.IndexView, recent.HomeView, recent.TokenView}},
	), nil
}
