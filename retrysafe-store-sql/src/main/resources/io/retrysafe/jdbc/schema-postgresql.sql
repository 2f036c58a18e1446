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
    phase_state      bytea,
    phase_created_at timestamptz,
    PRIMARY KEY (scope, idem_key)
);
-- Purge walks this index from its oldest end, a bounded batch at a time.
CREATE INDEX IF NOT EXISTS ${name}_expires_at_idx ON ${table} (expires_at);
-- Phased operations (docs/phased-operations.md): the saved steps of an operation that calls out, and the
-- created_at of the record's life they belong to (a record that expired and was claimed anew has none).
-- Added in place to a table made before they existed; checked first, so that a start does not queue for the
-- table's lock when there is nothing to do.
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass('${table}') AND attname = 'phase_state'
            AND NOT attisdropped) THEN
        ALTER TABLE ${table} ADD COLUMN IF NOT EXISTS phase_state bytea,
            ADD COLUMN IF NOT EXISTS phase_created_at timestamptz;
    END IF;
END
$$;
-- The completer's search: operations with saved steps that did not complete, by lease. Records of other
-- operations are never in it, so their writes do not touch it.
CREATE INDEX IF NOT EXISTS ${name}_phased_idx ON ${table} (lease_expires_at)
    WHERE phase_created_at IS NOT NULL AND status <> 'COMPLETED';
