package timeline

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
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

// idCursorPrefix starts a cursor made from a message id (IDCursor). It is
// not in base64url's alphabet, so no signed cursor starts with it.
const idCursorPrefix = "id."

// IDCursor is the cursor of message id that any store accepts for any
// timeline: what a service makes of an id a client sent (Mastodon's max_id,
// since_id, min_id). It is not signed: it only names an id, and a page
// bounded by an id shows nothing a page without the bound would not.
func IDCursor(id MessageID) Cursor {
	return Cursor(idCursorPrefix + strconv.FormatInt(int64(id), 10))
}

// Decode checks that cur was issued by this codec for user, or is an
// IDCursor, and returns its id. Any other string gives ErrInvalidCursor.
func (c *CursorCodec) Decode(user UserID, cur Cursor) (MessageID, error) {
	return c.decode("cursor", user, cur)
}

func (c *CursorCodec) decode(field string, user UserID, cur Cursor) (MessageID, error) {
	if strings.HasPrefix(string(cur), idCursorPrefix) {
		id, ok := IDOf(cur)
		if !ok {
			return 0, inputError(field, ErrInvalidCursor, "an id cursor must be %q and a positive id in decimal", idCursorPrefix)
		}
		return id, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(string(cur))
	if err != nil || len(raw) != cursorRawLen || raw[0] != cursorVersion {
		return 0, inputError(field, ErrInvalidCursor, "not a cursor issued by this store")
	}
	id := MessageID(binary.BigEndian.Uint64(raw[1:9]))
	if !hmac.Equal(raw[9:], c.mac(user, id)) {
		return 0, inputError(field, ErrInvalidCursor, "forged, corrupted, or issued for another timeline")
	}
	if id <= 0 {
		return 0, inputError(field, ErrInvalidCursor, "out of range")
	}
	return id, nil
}

// Request is one read of a store's read path: at most Fetch() messages of
// User's timeline below Before, newest first.
type Request struct {
	User   UserID
	Limit  int       // 1..MaxLimit
	Before MessageID // 0 for the newest messages, else only ids below it
}

// Fetch is how many messages a store should fetch for a request: one more
// than the page, so that it knows whether an older message remains.
func (r Request) Fetch() int { return r.Limit + 1 }

// Reader is a store's read path: the messages of r, at most r.Fetch(),
// newest first.
type Reader func(ctx context.Context, r Request) ([]Message, error)

// IDOf returns the message id of a cursor that IDCursor made, and false
// for any other string (a signed cursor, a malformed one). A client of a
// service that pages by message ids (Mastodon's max_id) uses it to turn
// such cursors back into ids.
func IDOf(c Cursor) (MessageID, bool) {
	digits, ok := strings.CutPrefix(string(c), idCursorPrefix)
	if !ok {
		return 0, false
	}
	id, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || id <= 0 || IDCursor(MessageID(id)) != c {
		return 0, false
	}
	return MessageID(id), true
}
