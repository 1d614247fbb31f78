-- Clicks per ad per minute of event time, from the JSON-lines file that
-- main.go reads with the Go API: the same file, the same counts.
CREATE TABLE clicks (
  ad STRING,
  ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '5' SECOND
) WITH (
  'connector' = 'filesystem',
  'path' = '${path}',
  'format' = 'json'
);

SELECT ad, window_start, window_end, COUNT(*) AS clicks
FROM TABLE(TUMBLE(TABLE clicks, DESCRIPTOR(ts), INTERVAL '1' MINUTE))
GROUP BY ad, window_start, window_end;
