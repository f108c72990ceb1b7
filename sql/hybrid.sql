-- The hybrid model: push's tables, but the posts of authors with many
-- followers are not fanned out; readers pull them instead. hybrid@vitess
-- adds these two tables to push@vitess's (vitess.sql), each sharded by
-- its first column (vitess_vschema.json).
--
-- pull_authors are the authors at least one of whose messages was not
-- fanned out. An author stays listed once listed: their messages from
-- before are still in no mailbox, so readers keep pulling them.
CREATE TABLE IF NOT EXISTS pull_authors (
  author_id BIGINT UNSIGNED NOT NULL,
  PRIMARY KEY (author_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- pull_follows is the part of follows whose followee is a pull author,
-- by follower: a read finds the authors it must pull with one short range
-- scan of its own rows.
CREATE TABLE IF NOT EXISTS pull_follows (
  user_id   BIGINT UNSIGNED NOT NULL,
  author_id BIGINT UNSIGNED NOT NULL,
  PRIMARY KEY (user_id, author_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
