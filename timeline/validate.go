package timeline

import (
	"unicode"
	"unicode/utf8"
)

// The validators below are shared by every Store so that all of them reject
// exactly the same input with exactly the same errors. Stores call them before
// touching any state, which is what makes "invalid input writes nothing" hold.

// CheckUser rejects ids that are not positive. field names the argument in the
// error ("author", "follower", ...).
func CheckUser(field string, id UserID) error {
	if id <= 0 {
		return inputError(field, ErrInvalidUser, "got %d, want a positive id", int64(id))
	}
	return nil
}

// CheckBody rejects bodies that are not valid UTF-8, not 1..MaxBodyChars
// characters long, blank (white space only) or holding a control character
// other than a tab, a line feed or a carriage return (which multi-line
// posts carry).
func CheckBody(body string) error {
	if !utf8.ValidString(body) {
		return inputError("body", ErrInvalidBody, "not valid UTF-8")
	}
	n := utf8.RuneCountInString(body)
	switch {
	case n == 0:
		return inputError("body", ErrInvalidBody, "empty")
	case n > MaxBodyChars:
		return inputError("body", ErrInvalidBody, "%d characters, at most %d allowed", n, MaxBodyChars)
	}
	blank := true
	for i, r := range []rune(body) {
		if unicode.IsControl(r) && r != '\t' && r != '\n' && r != '\r' {
			return inputError("body", ErrInvalidBody, "control character %U at character %d", r, i+1)
		}
		blank = blank && unicode.IsSpace(r)
	}
	if blank {
		return inputError("body", ErrInvalidBody, "blank: white space only")
	}
	return nil
}

// CheckPost validates the arguments of Store.Post.
func CheckPost(author UserID, body string) error {
	if err := CheckUser("author", author); err != nil {
		return err
	}
	return CheckBody(body)
}

// CheckMessageID rejects message ids that are not positive.
func CheckMessageID(id MessageID) error {
	if id <= 0 {
		return inputError("id", ErrInvalidMessage, "got %d, want a positive id", int64(id))
	}
	return nil
}

// CheckDelete validates the arguments of Store.Delete.
func CheckDelete(author UserID, id MessageID) error {
	if err := CheckUser("author", author); err != nil {
		return err
	}
	return CheckMessageID(id)
}

// CheckFollowQuery validates the arguments of Store.Followees and
// Store.Followers and resolves the limit.
func CheckFollowQuery(user UserID, q FollowQuery) (limit int, err error) {
	if err := CheckUser("user", user); err != nil {
		return 0, err
	}
	if q.After < 0 {
		return 0, inputError("after", ErrInvalidUser, "got %d, want 0 or a user id", int64(q.After))
	}
	return PageLimit(q.Limit)
}

// MakeFollowPage turns up to limit+1 user ids, ascending, into a page: it
// keeps limit of them and sets Next only when there were more.
func MakeFollowPage(limit int, users []UserID) FollowPage {
	if len(users) <= limit {
		return FollowPage{Users: users}
	}
	users = users[:limit]
	return FollowPage{Users: users, Next: users[limit-1]}
}

// CheckFollows validates the arguments of Store.Follows: two user ids,
// which may be the same (nobody follows themselves).
func CheckFollows(follower, followee UserID) error {
	if err := CheckUser("follower", follower); err != nil {
		return err
	}
	return CheckUser("followee", followee)
}

// CheckFollow validates the arguments of Store.Follow and Store.Unfollow.
func CheckFollow(follower, followee UserID) error {
	if err := CheckUser("follower", follower); err != nil {
		return err
	}
	if err := CheckUser("followee", followee); err != nil {
		return err
	}
	if follower == followee {
		return inputError("followee", ErrSelfFollow, "user %d cannot follow themselves", int64(follower))
	}
	return nil
}

// PageLimit resolves Query.Limit: 0 means DefaultLimit, anything outside
// 1..MaxLimit is an error.
func PageLimit(limit int) (int, error) {
	switch {
	case limit == 0:
		return DefaultLimit, nil
	case limit < 0 || limit > MaxLimit:
		return 0, inputError("limit", ErrInvalidLimit, "got %d, want 1..%d (0 means %d)", limit, MaxLimit, DefaultLimit)
	}
	return limit, nil
}
