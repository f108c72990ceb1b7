-- The pull model's read path as stored procedures, after Oku (2008): one
-- CALL per page instead of one query per followee from the client.
--
--   1. find each followee's newest message id (below the cursor);
--   2. keep the p_limit followees whose newest ids are largest;
--   3. take the p_limit newest messages of each of them;
--   4. return the newest p_limit of those.
--
-- The global top p_limit messages come from at most p_limit authors, each
-- of whose newest message is at least as new as theirs, so steps 2 and 3
-- lose nothing. At most followees + p_limit^2 index entries are read.
--
-- Scratch space is MEMORY temporary tables. A temporary table belongs to
-- one connection and outlives the CALL, and database/sql hands out pooled
-- connections in any order, so every procedure creates its tables if this
-- connection lacks them and empties them before use: results never depend
-- on which connection, or which earlier call, came before.

-- Users whose recently-active-followees index may be in use in memcached
-- (StrategyActive, pull/active.go), and until when: a read that builds an
-- index first sets until past the index's lifetime. A post sends its hint
-- only to the author's followers listed here with until still ahead, so an
-- author whom no heavy follower has read lately posts without touching any
-- index. Times are the stores' clocks (UTC), like an index's age.
CREATE TABLE IF NOT EXISTS index_readers (
  user_id BIGINT UNSIGNED NOT NULL,
  until   DATETIME(6)     NOT NULL,
  PRIMARY KEY (user_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Readers whose home index (recent.Home, pull/recent/home.go) may be in
-- use in memcached, per author they take hints from, and until when. Unlike
-- index_readers it lists edges, not users: a home index takes hints only
-- from the authors it does not pull, so a celebrity whom its readers pull
-- sends hints to none of them once their entries expire.
CREATE TABLE IF NOT EXISTS home_readers (
  author_id BIGINT UNSIGNED NOT NULL,
  user_id   BIGINT UNSIGNED NOT NULL,
  until     DATETIME(6)     NOT NULL,
  PRIMARY KEY (author_id, user_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

DROP PROCEDURE IF EXISTS pull_timeline_newest;
DROP PROCEDURE IF EXISTS pull_timeline_before;
DROP PROCEDURE IF EXISTS pull_collect_page;

DELIMITER //

-- pull_collect_page runs steps 3 and 4 for the authors listed in
-- pull_top_authors, returning the page as the result set.
CREATE PROCEDURE pull_collect_page(IN p_before BIGINT UNSIGNED, IN p_limit INT UNSIGNED)
MODIFIES SQL DATA
BEGIN
  DECLARE v_author BIGINT UNSIGNED;
  DECLARE v_done BOOLEAN DEFAULT FALSE;
  DECLARE top_authors CURSOR FOR SELECT author_id FROM pull_top_authors;
  DECLARE CONTINUE HANDLER FOR NOT FOUND SET v_done = TRUE;

  CREATE TEMPORARY TABLE IF NOT EXISTS pull_page_ids (
    id BIGINT UNSIGNED NOT NULL PRIMARY KEY
  ) ENGINE=MEMORY;
  DELETE FROM pull_page_ids;

  OPEN top_authors;
  collect: LOOP
    FETCH top_authors INTO v_author;
    IF v_done THEN LEAVE collect; END IF;
    INSERT INTO pull_page_ids
      SELECT id FROM messages
      WHERE author_id = v_author AND id < p_before
      ORDER BY id DESC LIMIT p_limit;
  END LOOP;
  CLOSE top_authors;

  SELECT m.id, m.author_id, m.body, m.created_at
  FROM pull_page_ids p JOIN messages m ON m.id = p.id
  ORDER BY p.id DESC LIMIT p_limit;
END //

-- pull_timeline_newest returns the newest page of p_user's home timeline.
-- Step 1 is a correlated subquery per followee: the optimizer turns
-- "ORDER BY id DESC LIMIT 1" on (author_id, id) into one index dive.
CREATE PROCEDURE pull_timeline_newest(IN p_user BIGINT UNSIGNED, IN p_limit INT UNSIGNED)
MODIFIES SQL DATA
BEGIN
  CREATE TEMPORARY TABLE IF NOT EXISTS pull_top_authors (
    author_id BIGINT UNSIGNED NOT NULL PRIMARY KEY
  ) ENGINE=MEMORY;
  DELETE FROM pull_top_authors;

  INSERT INTO pull_top_authors
    SELECT t.followee_id FROM (
      SELECT f.followee_id,
             (SELECT m.id FROM messages m
              WHERE m.author_id = f.followee_id
              ORDER BY m.id DESC LIMIT 1) AS newest_id
      FROM follows f
      WHERE f.follower_id = p_user
    ) t
    WHERE t.newest_id IS NOT NULL
    ORDER BY t.newest_id DESC LIMIT p_limit;

  CALL pull_collect_page(18446744073709551615, p_limit);
END //

-- pull_timeline_before returns the page of p_user's home timeline just
-- below message p_before (keyset paging). As in the paper, step 1 walks the
-- followees one by one: each "newest id below the cursor" is then a single
-- backward index dive however the optimizer would plan the join.
CREATE PROCEDURE pull_timeline_before(IN p_user BIGINT UNSIGNED, IN p_before BIGINT UNSIGNED, IN p_limit INT UNSIGNED)
MODIFIES SQL DATA
BEGIN
  DECLARE v_author BIGINT UNSIGNED;
  DECLARE v_done BOOLEAN DEFAULT FALSE;
  DECLARE followees CURSOR FOR
    SELECT followee_id FROM follows WHERE follower_id = p_user;
  DECLARE CONTINUE HANDLER FOR NOT FOUND SET v_done = TRUE;

  CREATE TEMPORARY TABLE IF NOT EXISTS pull_newest_ids (
    author_id BIGINT UNSIGNED NOT NULL PRIMARY KEY,
    newest_id BIGINT UNSIGNED NOT NULL
  ) ENGINE=MEMORY;
  DELETE FROM pull_newest_ids;
  CREATE TEMPORARY TABLE IF NOT EXISTS pull_top_authors (
    author_id BIGINT UNSIGNED NOT NULL PRIMARY KEY
  ) ENGINE=MEMORY;
  DELETE FROM pull_top_authors;

  OPEN followees;
  newest: LOOP
    FETCH followees INTO v_author;
    IF v_done THEN LEAVE newest; END IF;
    INSERT INTO pull_newest_ids
      SELECT author_id, id FROM messages
      WHERE author_id = v_author AND id < p_before
      ORDER BY id DESC LIMIT 1;
  END LOOP;
  CLOSE followees;

  INSERT INTO pull_top_authors
    SELECT author_id FROM pull_newest_ids
    ORDER BY newest_id DESC LIMIT p_limit;

  CALL pull_collect_page(p_before, p_limit);
END //

DELIMITER ;
