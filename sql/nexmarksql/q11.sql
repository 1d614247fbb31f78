-- q11: bids per bidder per session (a legacy group window).
SELECT B.bidder, COUNT(*) AS bid_count,
  SESSION_START(B.`dateTime`, INTERVAL '10' SECOND) AS starttime,
  SESSION_END(B.`dateTime`, INTERVAL '10' SECOND) AS endtime
FROM bid B
GROUP BY B.bidder, SESSION(B.`dateTime`, INTERVAL '10' SECOND);
