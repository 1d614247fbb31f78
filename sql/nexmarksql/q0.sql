-- q0: pass-through.
SELECT auction, bidder, price, `dateTime`, extra FROM bid;
