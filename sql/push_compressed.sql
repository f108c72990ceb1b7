-- The push-compressed model: push's mailbox, stored in compressed pages.
-- PAGE_COMPRESSED=1 (MariaDB, innodb_file_per_table) compresses each 16 KB
-- page with innodb_compression_algorithm (zlib by default) when it is
-- written and punches the freed part of it out of the file: the table's
-- data_length stays what it was, the blocks it takes on disk shrink. Rows
-- of sorted id pairs compress to about a third; ROW_FORMAT=COMPRESSED
-- (KEY_BLOCK_SIZE=8) kept half, and keeps compressed and uncompressed
-- copies of pages in the buffer pool.
CREATE TABLE IF NOT EXISTS mailbox (
  user_id    BIGINT UNSIGNED NOT NULL,
  message_id BIGINT UNSIGNED NOT NULL,
  PRIMARY KEY (user_id, message_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin PAGE_COMPRESSED=1;
