-- RetrySafe records, PostgreSQL.
-- ${table} is the configured table, ${name} its name without a schema.
-- One source for createSchema(), `retrysafe schema print` and the Flyway and Liquibase migrations built from
-- it. Every statement is idempotent, and must stay so: the script runs on every start and again whenever it
-- changes, on a table that may already exist (docs/schema.md).
-- The primary key makes (scope, key) unique in the database itself: the claim relies on it.
CREATE TABLE IF NOT EXISTS ${table} (
    scope            varchar(255) NOT NULL,
    idem_key         varchar(255) NOT NULL,
    fingerprint      bytea        NOT NULL,
    status           varchar(11)  NOT NULL CHECK (status IN ('IN_PROGRESS', 'COMPLETED', 'FAILED')),
    owner_token      uuid         NOT NULL,
    attempt          integer      NOT NULL,
    created_at       timestamptz  NOT NULL,
    lease_expires_at timestamptz  NOT NULL,
    completed_at     timestamptz,
    expires_at       timestamptz  NOT NULL,
    response_status  smallint,
    response_headers text,
    response_body    bytea,
    PRIMARY KEY (scope, idem_key)
);
-- Purge walks this index from its oldest end, a bounded batch at a time.
CREATE INDEX IF NOT EXISTS ${name}_expires_at_idx ON ${table} (expires_at);
