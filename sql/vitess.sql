-- The tables both models add on a Vitess keyspace sharded by user (the
-- VSchema is vitess_vschema.json), over common.sql's.
--
-- Every table is sharded by the user whose rows it holds, so that each of
-- the models' frequent operations is routed to one shard:
--   follows    by follower_id: whom does a reader follow (pull reads);
--   followers  by followee_id: who follows an author (push fan-out), the
--              same graph stored the other way round;
--   messages   by author_id: an author's messages, newest first;
--   mailbox    by user_id: a reader's mailbox (push reads);
--   fanout_jobs (fanout_jobs.sql) by author_id: push-async@vitess's
--              queue, a post's job on its author's shard;
--   pull_authors (hybrid.sql, hybrid@vitess only) by author_id: beside
--              the author's followers, which a post counts;
--   pull_follows (hybrid.sql, hybrid@vitess only) by user_id: beside the
--              reader's mailbox, which a page reads with it.
-- common.sql's AUTO_INCREMENT on messages.id is never used there: vtgate
-- fills the id from the sequence message_seq in the unsharded keyspace
-- (vitess_sequence.sql), so ids still increase with time across shards.

CREATE TABLE IF NOT EXISTS followers (
  followee_id BIGINT UNSIGNED NOT NULL,
  follower_id BIGINT UNSIGNED NOT NULL,
  PRIMARY KEY (followee_id, follower_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- The push model's mailbox on Vitess carries what a page shows: the
-- message's author, body and time, copied into every follower's row. The
-- message lives on its author's shard and the mailbox on its reader's, so
-- with ids alone a page would be one call to the reader's shard and one
-- to each distinct author's (about 1 + 17 calls for a 21-row page at 256
-- shards); with the copies it is the reader's shard alone. Messages never
-- change, and a delete removes the copies with the message. An unfollow
-- removes the followee's messages from one shard by (user_id, author_id).
CREATE TABLE IF NOT EXISTS mailbox (
  user_id    BIGINT UNSIGNED NOT NULL,
  message_id BIGINT UNSIGNED NOT NULL,
  author_id  BIGINT UNSIGNED NOT NULL,
  body       VARCHAR(280)    NOT NULL,
  created_at DATETIME(6)     NOT NULL,
  PRIMARY KEY (user_id, message_id),
  KEY user_author (user_id, author_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
