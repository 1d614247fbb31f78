-- The Nexmark source over a JSON-lines file of `weir nexmark gen` (one
-- event a line, snake_case fields, times in epoch milliseconds), with the
-- computed event time and 4 s watermark of Flink's ddl_gen.sql and the
-- person, auction and bid views of its ddl_views.sql: the fields keep the
-- file's names and the views give them Flink's (email_address AS
-- emailAddress), so the query files run unchanged over either source.
CREATE TABLE nexmark_json (
  event_type INT,
  person ROW<id BIGINT, name VARCHAR, email_address VARCHAR, credit_card VARCHAR, city VARCHAR,
             state VARCHAR, date_time TIMESTAMP(3), extra VARCHAR>,
  auction ROW<id BIGINT, item_name VARCHAR, description VARCHAR, initial_bid BIGINT, reserve BIGINT,
              date_time TIMESTAMP(3), expires TIMESTAMP(3), seller BIGINT, category BIGINT, extra VARCHAR>,
  bid ROW<auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR,
          date_time TIMESTAMP(3), extra VARCHAR>,
  `dateTime` AS CASE WHEN event_type = 0 THEN person.date_time
                     WHEN event_type = 1 THEN auction.date_time
                     ELSE bid.date_time END,
  WATERMARK FOR `dateTime` AS `dateTime` - INTERVAL '4' SECOND
) WITH (
  'connector' = 'filesystem',
  'path' = '${EVENTS_FILE}',
  'format' = 'json'
);

CREATE VIEW person AS
SELECT person.id, person.name, person.email_address AS emailAddress, person.credit_card AS creditCard,
       person.city, person.state, `dateTime`, person.extra
FROM nexmark_json WHERE event_type = 0;

CREATE VIEW auction AS
SELECT auction.id, auction.item_name AS itemName, auction.description, auction.initial_bid AS initialBid,
       auction.reserve, `dateTime`, auction.expires, auction.seller, auction.category, auction.extra
FROM nexmark_json WHERE event_type = 1;

CREATE VIEW bid AS
SELECT bid.auction, bid.bidder, bid.price, bid.channel, bid.url, `dateTime`, bid.extra
FROM nexmark_json WHERE event_type = 2;
