-- q2: a selection.
SELECT auction, price FROM bid WHERE MOD(auction, 123) = 0;
