-- The checkout's holds (this service only; schema.sql is shared with the reactive example). Run at every
-- start, so every statement is idempotent. A hold sets an amount of an account's balance aside while its
-- checkout calls the payment provider: HELD until the charge is booked (BOOKED, with its payment), declined
-- (RELEASED) or the checkout is cancelled by the completer (CANCELLED, with the refund of its charge if any).
CREATE TABLE IF NOT EXISTS checkout_hold (
    id         uuid         PRIMARY KEY,
    payer      varchar(255) NOT NULL,
    account    varchar(64)  NOT NULL REFERENCES account,
    amount     bigint       NOT NULL CHECK (amount > 0),
    status     varchar(16)  NOT NULL CHECK (status IN ('HELD', 'BOOKED', 'RELEASED', 'CANCELLED')),
    charge     varchar(64),
    refund     varchar(64),
    payment    uuid         UNIQUE REFERENCES payment,
    created_at timestamptz  NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS checkout_hold_account_idx ON checkout_hold (account);
