-- The selective model (Feeding Frenzy): push's tables, with every follow
-- edge either pushed (its author's posts are fanned out to the follower)
-- or pulled (the follower's reads fetch them). follows keeps every edge;
-- each edge is also in exactly one of push_edges and pull_edges.

-- push_edges are the pushed edges by author: a post fans out to one
-- range of this table, exactly the followers it is pushed to.
CREATE TABLE IF NOT EXISTS push_edges (
  author_id BIGINT UNSIGNED NOT NULL,
  user_id   BIGINT UNSIGNED NOT NULL,
  PRIMARY KEY (author_id, user_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- pull_edges are the pulled edges by follower: a read finds the authors
-- it must pull with one short range of its own rows, in the statement
-- that reads its mailbox. The author index serves re-deciding the edges
-- of an author whose post rate changed.
CREATE TABLE IF NOT EXISTS pull_edges (
  user_id   BIGINT UNSIGNED NOT NULL,
  author_id BIGINT UNSIGNED NOT NULL,
  PRIMARY KEY (user_id, author_id),
  KEY author_user (author_id, user_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- user_rates are each user's exponentially decayed counts of newest-page
-- reads and of posts, as of as_of (seconds since the Unix epoch): a count
-- c as of a is c * 2^(-(t - a) / half-life) at time t. A user without a
-- row has counted nothing.
CREATE TABLE IF NOT EXISTS user_rates (
  user_id BIGINT UNSIGNED NOT NULL,
  read_rate DOUBLE        NOT NULL,
  post_rate DOUBLE        NOT NULL,
  as_of     DOUBLE        NOT NULL,
  PRIMARY KEY (user_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
