// Package all registers every model of pushpull with package registry:
// import it for its side effect where the whole list is wanted (the
// command line, tests that go over every model).
package all

import (
	_ "github.com/pushpull/pushpull/hybrid"         // hybrid
	_ "github.com/pushpull/pushpull/hybrid/cached"  // hybrid-memcached
	_ "github.com/pushpull/pushpull/memcache"       // the memcache variant
	_ "github.com/pushpull/pushpull/pull"           // pull-sp, pull-client, ... pull-active
	_ "github.com/pushpull/pushpull/push"           // push
	_ "github.com/pushpull/pushpull/push/async"     // push-async
	_ "github.com/pushpull/pushpull/pushactive"     // push-active
	_ "github.com/pushpull/pushpull/pushcapped"     // push-capped
	_ "github.com/pushpull/pushpull/pushcompressed" // push-compressed
	_ "github.com/pushpull/pushpull/selective"      // selective
)
