-- The push model's mailbox: one row per (reader, message) written at post
-- time. The primary key is the whole row, so a home timeline page is one
-- backward range scan of the clustered index, and keyset paging is
-- "message_id < cursor" on the same scan.
CREATE TABLE IF NOT EXISTS mailbox (
  user_id    BIGINT UNSIGNED NOT NULL,
  message_id BIGINT UNSIGNED NOT NULL,
  PRIMARY KEY (user_id, message_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- The push-async model's durable fan-out queue: one row per posted message
-- whose mailbox rows are not all written yet, inserted in the post's own
-- transaction. Workers claim a job with SELECT ... FOR UPDATE SKIP LOCKED,
-- write one chunk of followers (those above done_through, in follower id
-- order) with INSERT IGNORE, and advance done_through or delete the job in
-- the same transaction: a chunk applied twice writes nothing twice. The
-- plain push model never writes here.
CREATE TABLE IF NOT EXISTS fanout_jobs (
  message_id    BIGINT UNSIGNED NOT NULL,
  author_id     BIGINT UNSIGNED NOT NULL,
  done_through  BIGINT UNSIGNED NOT NULL DEFAULT 0,
  posted_at     DATETIME(6)     NOT NULL,
  PRIMARY KEY (message_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- The drowning readers of push and push-async (option drowning_follows):
-- readers who follow more authors than the option's count. A post is
-- written to one of them when CRC32('message:reader') % 65536 < keep: never
-- under option drowning=pull (keep 0), whose pages are read by pull, and
-- with probability min(drowning_follows/follows, 1) under drowning=lossy.
CREATE TABLE IF NOT EXISTS drowning_readers (
  user_id BIGINT UNSIGNED NOT NULL,
  keep    INT UNSIGNED    NOT NULL,
  PRIMARY KEY (user_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
