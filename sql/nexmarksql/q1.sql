-- q1: prices in euros (an exact DECIMAL).
SELECT auction, bidder, 0.908 * price AS price, `dateTime`, extra FROM bid;
