-- The shop's prices audited in psql (after `python -m examples.shop.demo`).

-- What the shop believed on 5 March about prices on 2 March:
SELECT sku, currency, amount, valid_period
  FROM shop.price_as_of('2026-03-02', '2026-03-05')
 ORDER BY sku, currency;

-- Every version of A1's euro price, superseded ones included:
SELECT version_id, amount, valid_period, known_period, carried_from
  FROM shop.price_history('A1', 'EUR');

-- What the shop learned, superseded or retracted in March and April:
SELECT change, changed_at, version_id, by_version_ids
  FROM shop.price_changes('2026-03-01', '2026-05-01');
