-- The business tables of the payments services, servlet and reactive (PostgreSQL). Run at every start
-- (spring.sql.init.mode=always), so every statement is idempotent. RetrySafe's own table, retrysafe_record, is created by the starter
-- (retrysafe.store.initialize-schema=true); a production service ships it in its migrations instead.

CREATE TABLE IF NOT EXISTS account (
    id      varchar(64)  PRIMARY KEY,
    label   varchar(100) NOT NULL,
    balance bigint       NOT NULL CHECK (balance >= 0),
    -- The resource version: ETag "v<version>", the key of an update (If-Match).
    version bigint       NOT NULL DEFAULT 1
);

CREATE TABLE IF NOT EXISTS payment (
    id         uuid         PRIMARY KEY,
    payer      varchar(255) NOT NULL,
    account    varchar(64)  NOT NULL REFERENCES account,
    amount     bigint       NOT NULL CHECK (amount > 0),
    created_at timestamptz  NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS payment_account_idx ON payment (account);

CREATE TABLE IF NOT EXISTS ledger (
    id      bigserial   PRIMARY KEY,
    payment uuid        NOT NULL REFERENCES payment,
    account varchar(64) NOT NULL REFERENCES account,
    delta   bigint      NOT NULL,
    balance bigint      NOT NULL
);
CREATE INDEX IF NOT EXISTS ledger_account_idx ON ledger (account);

-- One payment per order, whatever happens above: the database is the last guard.
CREATE TABLE IF NOT EXISTS order_payment (
    order_number varchar(255) PRIMARY KEY,
    payment      uuid         NOT NULL UNIQUE REFERENCES payment
);

INSERT INTO account (id, label, balance) VALUES
    ('acc-1', 'Current account', 100000),
    ('acc-2', 'Shared account', 100000),
    ('acc-3', 'Savings', 500)
ON CONFLICT (id) DO NOTHING;
