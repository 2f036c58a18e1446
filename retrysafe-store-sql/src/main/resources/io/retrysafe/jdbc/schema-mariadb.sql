-- RetrySafe records, MariaDB 10.6+ (InnoDB).
-- ${table} is the configured table, ${name} its name without a schema.
-- One source for createSchema(), `retrysafe schema print` and the Flyway and Liquibase migrations built from
-- it. Every statement is idempotent, and must stay so: the script runs on every start and again whenever it
-- changes, on a table that may already exist (docs/schema.md).
-- The primary key makes (scope, key) unique in the database itself: the claim relies on it.
-- NO PAD binary collations: keys and scopes are compared byte for byte, so "ABC" and "abc" are two keys, and
-- so are "a" and "a " (the plain _bin collations are PAD SPACE: they ignore trailing spaces).
-- Timestamps are UTC in DATETIME(6) (no session time zone converts them), written from the server's
-- UTC_TIMESTAMP(6), never from a JVM clock.
CREATE TABLE IF NOT EXISTS ${table} (
    scope            VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL,
    idem_key         VARCHAR(255) CHARACTER SET ascii COLLATE ascii_nopad_bin NOT NULL,
    fingerprint      BINARY(32)   NOT NULL,
    status           VARCHAR(11)  CHARACTER SET ascii COLLATE ascii_nopad_bin NOT NULL,
    owner_token      BINARY(16)   NOT NULL,
    attempt          INT          NOT NULL,
    created_at       DATETIME(6)  NOT NULL,
    lease_expires_at DATETIME(6)  NOT NULL,
    completed_at     DATETIME(6)  NULL,
    expires_at       DATETIME(6)  NOT NULL,
    response_status  SMALLINT     NULL,
    response_headers MEDIUMTEXT   CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,
    response_body    LONGBLOB     NULL,
    phase_state      LONGBLOB     NULL,
    phase_created_at DATETIME(6)  NULL,
    PRIMARY KEY (scope, idem_key),
    -- Purge walks this index from its oldest end, a bounded batch at a time.
    INDEX ${name}_expires_at_idx (expires_at),
    CONSTRAINT ${name}_status_chk CHECK (status IN ('IN_PROGRESS', 'COMPLETED', 'FAILED'))
) ENGINE = InnoDB DEFAULT CHARACTER SET = utf8mb4 COLLATE = utf8mb4_bin;
-- Phased operations (docs/phased-operations.md): the saved steps of an operation that calls out, and the
-- created_at of the record's life they belong to (a record that expired and was claimed anew has none).
-- Added in place to a table made before they existed.
ALTER TABLE ${table} ADD COLUMN IF NOT EXISTS phase_state LONGBLOB NULL,
    ADD COLUMN IF NOT EXISTS phase_created_at DATETIME(6) NULL;
-- The completer's search: only operations with saved steps have a value here.
CREATE INDEX IF NOT EXISTS ${name}_phased_idx ON ${table} (phase_created_at);
