-- The drowning readers of the models that fan out to push's mailbox
-- (option drowning_follows): readers who follow more authors than the
-- option's count. A post is written to one of them when
-- CRC32('message:reader') % 65536 < keep: never under option drowning=pull
-- (keep 0), whose pages are read by pull, and with probability
-- min(drowning_follows/follows, 1) under drowning=lossy.
CREATE TABLE IF NOT EXISTS drowning_readers (
  user_id BIGINT UNSIGNED NOT NULL,
  keep    INT UNSIGNED    NOT NULL,
  PRIMARY KEY (user_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
