-- Nexmark q10 as Flink's Nexmark suite has it: github.com/nexmark/nexmark,
-- nexmark-flink/src/main/resources/queries/q10.sql (Apache License 2.0); the sink adapted: see below.
-- Run after ddl.sql (the source table and views): weir sql -f FILE with both.
-- -------------------------------------------------------------------------------------------------
-- Query 10: Log to File System (Not in original suite)
-- -------------------------------------------------------------------------------------------------
-- Log all events to file system. Illustrates windows streaming data into partitioned file system.
--
-- Every minute, save all events from the last period into partitioned log files.
-- -------------------------------------------------------------------------------------------------

CREATE TABLE nexmark_q10 (
  auction  BIGINT,
  bidder  BIGINT,
  price  BIGINT,
  `dateTime`  TIMESTAMP(3),
  extra  VARCHAR,
  dt STRING,
  hm STRING
) WITH (
  -- weir: Flink's sink is PARTITIONED BY (dt, hm) with partition-commit and
  -- time-based rolling options; weir's filesystem sink writes one directory
  -- of part files committed at checkpoints (dt and hm stay columns of the
  -- rows), so those options are left out and the path is a local directory.
  'connector' = 'filesystem',
  'path' = '${NEXMARK_DIR}/data/output/bid',
  'format' = 'csv'
);

INSERT INTO nexmark_q10
SELECT auction, bidder, price, `dateTime`, extra, DATE_FORMAT(`dateTime`, 'yyyy-MM-dd'), DATE_FORMAT(`dateTime`, 'HH:mm')
FROM bid;