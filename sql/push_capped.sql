-- The push-capped model: push's tables, with each user's mailbox cut to
-- their newest entries. mailbox_state keeps, per user, what the cut needs:
--
--   floor_id  the mailbox holds every message of the timeline with an id
--             at or above it (0: the whole timeline); older pages come
--             from the follows and messages tables below it.
--   entries   the mailbox rows the user has, counted by the writes that
--             add or remove them.
--   due       entries passed the cap plus its slack: the mailbox waits to
--             be trimmed. Indexed, so that finding the mailboxes due is
--             one short index range; the flag changes (and its index
--             entry moves) once per trim, not on every post.
CREATE TABLE IF NOT EXISTS mailbox_state (
  user_id  BIGINT UNSIGNED NOT NULL,
  floor_id BIGINT UNSIGNED NOT NULL DEFAULT 0,
  entries  INT UNSIGNED    NOT NULL DEFAULT 0,
  due      TINYINT         NOT NULL DEFAULT 0,
  PRIMARY KEY (user_id),
  KEY due_user (due, user_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
