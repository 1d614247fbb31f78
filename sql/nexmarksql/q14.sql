-- Nexmark q14 as Flink's Nexmark suite has it: github.com/nexmark/nexmark,
-- nexmark-flink/src/main/resources/queries/q14.sql (Apache License 2.0); the UDF replaced: see below.
-- Run after ddl.sql (the source table and views): weir sql -f FILE with both.
-- -------------------------------------------------------------------------------------------------
-- Query 14: Calculation (Not in original suite)
-- -------------------------------------------------------------------------------------------------
-- Convert bid timestamp into types and find bids with specific price.
-- Illustrates duplicate expressions and usage of user-defined-functions.
-- -------------------------------------------------------------------------------------------------

-- weir: Flink's file registers a Java UDF,
--   CREATE FUNCTION count_char AS 'com.github.nexmark.flink.udf.CountChar';
-- weir runs no code shipped as a class name, and count_char is not a Flink
-- built-in, so the call is written as what it computes, the number of
-- 'c' characters in extra, in standard functions (which Flink runs too):
--   CHAR_LENGTH(extra) - CHAR_LENGTH(REPLACE(extra, 'c', '')).

CREATE TABLE nexmark_q14 (
    auction BIGINT,
    bidder BIGINT,
    price  DECIMAL(23, 3),
    bidTimeType VARCHAR,
    `dateTime` TIMESTAMP(3),
    extra VARCHAR,
    c_counts BIGINT
) WITH (
  'connector' = 'blackhole'
);

INSERT INTO nexmark_q14
SELECT 
    auction,
    bidder,
    0.908 * price as price,
    CASE
        WHEN HOUR(`dateTime`) >= 8 AND HOUR(`dateTime`) <= 18 THEN 'dayTime'
        WHEN HOUR(`dateTime`) <= 6 OR HOUR(`dateTime`) >= 20 THEN 'nightTime'
        ELSE 'otherTime'
    END AS bidTimeType,
    `dateTime`,
    extra,
    CHAR_LENGTH(extra) - CHAR_LENGTH(REPLACE(extra, 'c', '')) AS c_counts
FROM bid
WHERE 0.908 * price > 1000000 AND 0.908 * price < 50000000;