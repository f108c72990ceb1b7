-- The push-active model: push's tables, with posts fanned out only to
-- followers who read within a window. reader_state keeps, per user:
--
--   active    1: the mailbox holds every message of the timeline with an
--             id at or above floor_id, and posts fan out to it; 0: posts
--             pass the user over, and their next read rebuilds the mailbox
--             first. Only a locked write changes it (a post's fan-out
--             reads it under a shared lock), so the flag, not any clock,
--             decides what is in the mailbox.
--   read_at   the user's last recorded read, in microseconds since 1970
--             (UTC); a user whose read_at falls out of the window is
--             flagged inactive by a short range scan of active_read.
--   floor_id  the mailbox holds nothing below it (0: the whole timeline);
--             older pages come from the follows and messages tables. It
--             never falls.
CREATE TABLE IF NOT EXISTS reader_state (
  user_id  BIGINT UNSIGNED NOT NULL,
  active   TINYINT         NOT NULL DEFAULT 0,
  read_at  BIGINT          NOT NULL DEFAULT 0,
  floor_id BIGINT UNSIGNED NOT NULL DEFAULT 0,
  PRIMARY KEY (user_id),
  KEY active_read (active, read_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
