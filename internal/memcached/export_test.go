package memcached

// SetRecoveryHooks makes c call recovering in the caller that holds a
// server's recovery token, before it replaces the server's fence, and
// awaiting in a caller about to wait for another caller's replacement.
// Either may be nil. Set them before c is called.
func SetRecoveryHooks(c *Client, recovering, awaiting func()) {
	c.recovering, c.awaitingRecovery = recovering, awaiting
}
