-- The sequence that numbers messages on Vitess, in an unsharded keyspace
-- of its own (SequenceKeyspace). The primary tablet of that keyspace hands
-- out its values in increasing order to every vtgate, reserving cache of
-- them at a time with one UPDATE of this row, so message ids increase with
-- time across all shards, as keyset paging needs. Several sharded
-- keyspaces may share it: ids need only be unique and increasing.
CREATE TABLE IF NOT EXISTS message_seq (
  id      INT    NOT NULL,
  next_id BIGINT NOT NULL,
  cache   BIGINT NOT NULL,
  PRIMARY KEY (id)
) ENGINE=InnoDB COMMENT 'vitess_sequence';

INSERT IGNORE INTO message_seq (id, next_id, cache) VALUES (0, 1, 1000);
