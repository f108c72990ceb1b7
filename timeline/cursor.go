package timeline

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"fmt"
)

// A cursor carries the id of the last message of a page, so the next page is
// "messages with id below it": a keyset page, O(log n) to find, immune to
// new posts shifting offsets. To keep cursors opaque and unforgeable it also
// carries a MAC over the id and the user it was issued for, keyed by a secret
// the store keeps (the SQL stores keep it in their database, so cursors
// survive restarts and work across processes).
//
// Layout before base64url: version(1) | before id(8, big endian) | mac(12).

const (
	cursorVersion = 1
	cursorMACLen  = 12
	cursorRawLen  = 1 + 8 + cursorMACLen
	// CursorKeyLen is the size of the secret that NewCursorCodec wants.
	CursorKeyLen = 32
)

// CursorCodec issues and checks cursors for one store.
type CursorCodec struct {
	key []byte
}

// NewCursorCodec returns a codec keyed by key, which must be CursorKeyLen
// bytes of secret randomness.
func NewCursorCodec(key []byte) (*CursorCodec, error) {
	if len(key) != CursorKeyLen {
		return nil, fmt.Errorf("cursor key: got %d bytes, want %d", len(key), CursorKeyLen)
	}
	return &CursorCodec{key: append([]byte(nil), key...)}, nil
}

// NewCursorKey returns a fresh random key for NewCursorCodec.
func NewCursorKey() []byte {
	k := make([]byte, CursorKeyLen)
	if _, err := rand.Read(k); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return k
}

func (c *CursorCodec) mac(user UserID, before MessageID) []byte {
	var msg [17]byte
	msg[0] = cursorVersion
	binary.BigEndian.PutUint64(msg[1:], uint64(user))
	binary.BigEndian.PutUint64(msg[9:], uint64(before))
	h := hmac.New(sha256.New, c.key)
	h.Write(msg[:])
	return h.Sum(nil)[:cursorMACLen]
}

// Encode returns the cursor for user's timeline that continues below id
// before.
func (c *CursorCodec) Encode(user UserID, before MessageID) Cursor {
	raw := make([]byte, 0, cursorRawLen)
	raw = append(raw, cursorVersion)
	raw = binary.BigEndian.AppendUint64(raw, uint64(before))
	raw = append(raw, c.mac(user, before)...)
	return Cursor(base64.RawURLEncoding.EncodeToString(raw))
}

// Decode checks that cur was issued by this codec for user and returns the id
// the next page starts below. Any other string gives ErrInvalidCursor.
func (c *CursorCodec) Decode(user UserID, cur Cursor) (MessageID, error) {
	raw, err := base64.RawURLEncoding.DecodeString(string(cur))
	if err != nil || len(raw) != cursorRawLen || raw[0] != cursorVersion {
		return 0, inputError("cursor", ErrInvalidCursor, "not a cursor issued by this store")
	}
	before := MessageID(binary.BigEndian.Uint64(raw[1:9]))
	if !hmac.Equal(raw[9:], c.mac(user, before)) {
		return 0, inputError("cursor", ErrInvalidCursor, "forged, corrupted, or issued for another user")
	}
	if before <= 0 {
		return 0, inputError("cursor", ErrInvalidCursor, "out of range")
	}
	return before, nil
}

// Request is a validated Query: what a Store's read path works with.
type Request struct {
	User   UserID
	Limit  int       // 1..MaxLimit
	Before MessageID // 0 for the newest page, else only ids below it
}

// Fetch is how many messages a store should fetch for a request: one more
// than the page, so that it knows whether an older message remains.
func (r Request) Fetch() int { return r.Limit + 1 }

// ParseQuery validates user and q and decodes the cursor. Stores call it
// first in Timeline.
func (c *CursorCodec) ParseQuery(user UserID, q Query) (Request, error) {
	if err := CheckUser("user", user); err != nil {
		return Request{}, err
	}
	limit, err := PageLimit(q.Limit)
	if err != nil {
		return Request{}, err
	}
	r := Request{User: user, Limit: limit}
	if q.Before != "" {
		if r.Before, err = c.Decode(user, q.Before); err != nil {
			return Request{}, err
		}
	}
	return r, nil
}

// MakePage turns up to r.Fetch() messages, newest first, into a page: it
// keeps r.Limit of them and sets Next only when there were more.
func (c *CursorCodec) MakePage(r Request, msgs []Message) Page {
	if len(msgs) <= r.Limit {
		return Page{Messages: msgs}
	}
	msgs = msgs[:r.Limit]
	return Page{Messages: msgs, Next: c.Encode(r.User, msgs[len(msgs)-1].ID)}
}
