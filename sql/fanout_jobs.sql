-- The durable fan-out queue of push-async and push-async@vitess: one row
-- per posted message whose mailbox rows are not all written yet, inserted
-- in the post's own transaction (on Vitess, on the author's shard, where
-- the VSchema places the row by author_id). Workers write the followers
-- above done_through, in follower id order, a chunk at a time with INSERT
-- IGNORE, and advance done_through or delete the job when the chunk is
-- written: a chunk applied twice writes nothing twice. The models that
-- fan out as they post never write here.
CREATE TABLE IF NOT EXISTS fanout_jobs (
  message_id    BIGINT UNSIGNED NOT NULL,
  author_id     BIGINT UNSIGNED NOT NULL,
  done_through  BIGINT UNSIGNED NOT NULL DEFAULT 0,
  posted_at     DATETIME(6)     NOT NULL,
  PRIMARY KEY (message_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
