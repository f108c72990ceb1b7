// Package all registers every model of pushpull with package registry:
// import it for its side effect where the whole list is wanted (the
// command line, tests that go over every model).
package all

import (
	_ "github.com/pushpull/pushpull/hybrid"           // hybrid, hybrid@vitess
	_ "github.com/pushpull/pushpull/hybrid/selective" // selective
	_ "github.com/pushpull/pushpull/memcache"         // the memcache variant
	_ "github.com/pushpull/pushpull/pull"             // pull-sp, pull-client, ... pull-active
	_ "github.com/pushpull/pushpull/pull/redisindex"  // pull-redis
	_ "github.com/pushpull/pushpull/push"             // push, push-compressed, push@vitess
	_ "github.com/pushpull/pushpull/push/active"      // push-active
	_ "github.com/pushpull/pushpull/push/async"       // push-async
	_ "github.com/pushpull/pushpull/push/capped"      // push-capped
	_ "github.com/pushpull/pushpull/push/redis"       // push-redis
)
