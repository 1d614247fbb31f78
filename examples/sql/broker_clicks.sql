-- Clicks per ad per minute of event time, read from topic 'clicks' of a Kafka
-- broker: weir broker, or any Kafka cluster. Each record is a JSON click,
--   {"ad":"ad-7","user_id":"u-12","ts":"2026-12-05 10:00:03.250"}
-- Run it with the broker's address and how the scan ends:
--   weir sql -f examples/sql/broker_clicks.sql --define BROKERS=127.0.0.1:9092 --define BOUNDED=latest-offset
-- BOUNDED=latest-offset ends the job at the offsets the topic has when the job
-- starts (every window then fires); BOUNDED=unbounded reads until Ctrl-C, a
-- minute's counts printing once the watermark passes the minute's end.
-- weir demo broker runs this file.

CREATE TABLE clicks (
  ad      STRING,
  user_id STRING,
  ts      TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '5' SECOND
) WITH (
  'connector' = 'kafka',
  'topic' = 'clicks',
  'properties.bootstrap.servers' = '${BROKERS}',
  'scan.startup.mode' = 'earliest-offset',
  'scan.bounded.mode' = '${BOUNDED}',
  'format' = 'json'
);

CREATE TABLE clicks_per_minute (
  window_start TIMESTAMP(3),
  window_end   TIMESTAMP(3),
  ad           STRING,
  clicks       BIGINT
) WITH (
  'connector' = 'print'
);

INSERT INTO clicks_per_minute
SELECT window_start, window_end, ad, COUNT(*) AS clicks
FROM TABLE(TUMBLE(TABLE clicks, DESCRIPTOR(ts), INTERVAL '1' MINUTE))
GROUP BY window_start, window_end, ad;
