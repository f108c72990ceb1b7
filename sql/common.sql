-- Tables that both models have. Each model lives in its own database, so
-- these exist once per model and their sizes can be measured apart.
--
-- Ids are BIGINT UNSIGNED: the timeline package promises positive 64-bit
-- ids. Bodies are utf8mb4 with a binary collation: stored byte for byte,
-- never folded or truncated (the connection runs in strict mode).

-- Bookkeeping: which model this database holds, the schema version, and
-- the secret that signs timeline cursors (so cursors survive restarts).
CREATE TABLE IF NOT EXISTS pushpull_meta (
  name  VARCHAR(64)    NOT NULL,
  value VARBINARY(255) NOT NULL,
  PRIMARY KEY (name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- The follow graph, indexed both ways: by follower for reading a home
-- timeline (whom do I follow?) and by followee for fan-out (who follows
-- the author?).
CREATE TABLE IF NOT EXISTS follows (
  follower_id BIGINT UNSIGNED NOT NULL,
  followee_id BIGINT UNSIGNED NOT NULL,
  PRIMARY KEY (follower_id, followee_id),
  KEY followee_follower (followee_id, follower_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Messages. (author_id, id) lets the pull model find an author's newest
-- messages, below any cursor, with one backward index range scan.
CREATE TABLE IF NOT EXISTS messages (
  id         BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
  author_id  BIGINT UNSIGNED NOT NULL,
  body       VARCHAR(280)    NOT NULL,
  created_at DATETIME(6)     NOT NULL,
  PRIMARY KEY (id),
  KEY author_id_id (author_id, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
