package timeline

import "context"

// query is a validated Query: its limit and the ids of its bounds (0 for
// none).
type query struct {
	owner                UserID
	limit                int
	before, since, after MessageID
}

// parse validates owner and q and decodes q's cursors for owner's
// timeline; field names the owner in errors ("user", "author").
func (c *CursorCodec) parse(field string, owner UserID, q Query) (query, error) {
	if err := CheckUser(field, owner); err != nil {
		return query{}, err
	}
	limit, err := PageLimit(q.Limit)
	if err != nil {
		return query{}, err
	}
	r := query{owner: owner, limit: limit}
	for _, b := range []struct {
		field string
		cur   Cursor
		id    *MessageID
	}{{"cursor", q.Before, &r.before}, {"since", q.Since, &r.since}, {"after", q.After, &r.after}} {
		if b.cur != "" {
			if *b.id, err = c.decode(b.field, owner, b.cur); err != nil {
				return query{}, err
			}
		}
	}
	if r.since != 0 && r.after != 0 {
		return query{}, inputError("after", ErrInvalidCursor, "Since and After exclude each other")
	}
	return r, nil
}

// Serve is the frame of every store's timeline reads (Timeline and
// AuthorTimeline): it validates q for owner's timeline (field names the
// owner in errors), decodes its cursors, reads with read and makes the
// page and its cursors. read only ever reads downward (Request.Before);
// Serve turns that into every query:
//
//   - Before: one read below it.
//   - Since: one read, cut at the bound: the newest Limit above it.
//   - After: reads of MaxLimit down from Before (or the top) until one
//     passes the bound or the timeline ends, keeping the oldest Limit
//     above it: as many reads as there are MaxLimits of messages above
//     the bound, one for a poll.
func (c *CursorCodec) Serve(ctx context.Context, field string, owner UserID, q Query, read Reader) (Page, error) {
	r, err := c.parse(field, owner, q)
	if err != nil {
		return Page{}, err
	}
	floor := max(r.since, r.after)
	if r.before != 0 && r.before <= floor+1 {
		return Page{}, nil // no id lies between the bounds
	}
	if r.after == 0 {
		msgs, err := read(ctx, Request{User: owner, Limit: r.limit, Before: r.before})
		if err != nil {
			return Page{}, err
		}
		older := len(msgs) > r.limit
		msgs = msgs[:min(len(msgs), r.limit)]
		if cut := aboveFloor(msgs, floor); cut < len(msgs) {
			msgs, older = msgs[:cut], true
		}
		return c.makePage(owner, msgs, older), nil
	}
	// After: walk down, keeping the oldest limit above the bound.
	var kept []Message
	below := false // a message at or under the bound exists
	next := Request{User: owner, Limit: MaxLimit, Before: r.before}
	for {
		msgs, err := read(ctx, next)
		if err != nil {
			return Page{}, err
		}
		more := len(msgs) > MaxLimit
		msgs = msgs[:min(len(msgs), MaxLimit)]
		cut := aboveFloor(msgs, floor)
		kept = append(kept, msgs[:cut]...)
		if len(kept) > 2*r.limit {
			kept = append(kept[:0], kept[len(kept)-r.limit:]...)
		}
		if cut < len(msgs) {
			below = true
			break
		}
		if !more || len(msgs) == 0 {
			break
		}
		next.Before = msgs[len(msgs)-1].ID
	}
	if len(kept) > r.limit {
		kept = kept[len(kept)-r.limit:]
	}
	return c.makePage(owner, kept, below), nil
}

// aboveFloor is how many of msgs, newest first, lie above floor (all of
// them when floor is 0).
func aboveFloor(msgs []Message, floor MessageID) int {
	for i, m := range msgs {
		if m.ID <= floor {
			return i
		}
	}
	return len(msgs)
}

// makePage makes the page of msgs, newest first, of owner's timeline:
// Next when older messages remain, Prev when the page has any.
func (c *CursorCodec) makePage(owner UserID, msgs []Message, older bool) Page {
	if len(msgs) == 0 {
		return Page{Messages: msgs}
	}
	p := Page{Messages: msgs, Prev: c.Encode(owner, msgs[0].ID)}
	if older {
		p.Next = c.Encode(owner, msgs[len(msgs)-1].ID)
	}
	return p
}
