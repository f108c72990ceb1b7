package memcached

// SetRecoveryHooks makes c call recovering in the caller that holds a
// server's recovery token, before it replaces the server's fence, and
// awaiting in a caller about to wait for another caller's replacement.
// Either may be nil. Set them before c is called.
func SetRecoveryHooks(c *Client, recovering, awaiting func()) {
	c.hooks.recovering, c.hooks.awaitingRecovery = recovering, awaiting
}

// SetDialingHook makes c call f before it dials a new connection, in the
// calling goroutine. Set it before c is called.
func SetDialingHook(c *Client, f func()) { c.hooks.dialing = f }
