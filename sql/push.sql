-- The push model's mailbox: one row per (reader, message) written at post
-- time. The primary key is the whole row, so a home timeline page is one
-- backward range scan of the clustered index, and keyset paging is
-- "message_id < cursor" on the same scan.
CREATE TABLE IF NOT EXISTS mailbox (
  user_id    BIGINT UNSIGNED NOT NULL,
  message_id BIGINT UNSIGNED NOT NULL,
  PRIMARY KEY (user_id, message_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
