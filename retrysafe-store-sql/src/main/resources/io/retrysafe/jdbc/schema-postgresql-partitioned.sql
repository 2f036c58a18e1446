-- RetrySafe records, PostgreSQL, partitioned by expiry day (UTC).
-- ${table} is the configured table, ${name} its name without a schema.
-- One source for createSchema(), `retrysafe schema print` and the Flyway and Liquibase migrations built from
-- it. Every statement is idempotent, and must stay so: the script runs on every start and again whenever it
-- changes, on a table that may already exist (docs/schema.md).
-- Expired days are dropped as whole partitions instead of deleted row by row; the maintenance job
-- (JdbcPurger / PartitionMaintainer) creates the days ahead.
--
-- PostgreSQL cannot have a unique index on a partitioned table without the partition key, and a
-- key's expiry day changes when it is retried or completed. So (scope, key) is kept unique by the
-- functions below, the only writers: each takes a transaction-scoped advisory lock on a 64-bit hash
-- of (table, scope, key) before it looks the key up across all partitions and then inserts or
-- updates. The lock is held to commit, so every write to one key is serialised, and each statement
-- after it sees what the previous holder committed. Do not write rows with plain INSERTs.
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
    phase_created_at timestamptz
) PARTITION BY RANGE (expires_at);
-- A day the job did not create yet lands here, so no claim is ever refused for want of a partition;
-- the job moves such rows into their day's partition when it creates it.
CREATE TABLE IF NOT EXISTS ${table}_pdefault PARTITION OF ${table} DEFAULT;
-- The lookup of a key in every partition (one index probe each).
CREATE INDEX IF NOT EXISTS ${name}_key_idx ON ${table} (scope, idem_key);
-- purgeExpired(limit) and the job's checks walk this one.
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

-- The claim: insert an absent key, or take over an expired record, a released one or one whose
-- lease expired; otherwise return the record, for the caller to decide (replay, in progress, mismatch).
-- o_attempt is not null when this call claimed the key.
CREATE OR REPLACE FUNCTION ${table}_claim(p_scope varchar, p_key varchar, p_fingerprint bytea, p_token uuid,
        p_lease_ms bigint, p_retention_ms bigint)
    RETURNS TABLE (o_attempt integer, o_fingerprint bytea, o_status varchar, o_response_status smallint,
        o_response_headers text, o_response_body bytea, o_lease_ms bigint)
    LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    t constant timestamptz := statement_timestamp();
    r record;
    claimed integer;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended(length(p_scope) || ':' || p_scope || p_key, hashtext('${table}')));
    -- Two rounds: the purge may delete an expired record between the lookup and the takeover.
    FOR round IN 1..2 LOOP
        SELECT x.fingerprint, x.status, x.lease_expires_at, x.expires_at, x.response_status, x.response_headers,
                x.response_body
            INTO r FROM ${table} x WHERE x.scope = p_scope AND x.idem_key = p_key;
        IF NOT FOUND THEN
            INSERT INTO ${table} (scope, idem_key, fingerprint, status, owner_token, attempt, created_at,
                    lease_expires_at, expires_at)
                VALUES (p_scope, p_key, p_fingerprint, 'IN_PROGRESS', p_token, 1, t,
                    t + p_lease_ms * interval '1 millisecond', t + p_retention_ms * interval '1 millisecond');
            RETURN QUERY SELECT 1, NULL::bytea, NULL::varchar, NULL::smallint, NULL::text, NULL::bytea, NULL::bigint;
            RETURN;
        END IF;
        IF r.expires_at > t AND NOT (r.fingerprint = p_fingerprint
                AND (r.status = 'FAILED' OR (r.status = 'IN_PROGRESS' AND r.lease_expires_at <= t))) THEN
            RETURN QUERY SELECT NULL::integer, r.fingerprint, r.status, r.response_status, r.response_headers,
                r.response_body, CEIL(EXTRACT(EPOCH FROM (r.lease_expires_at - t)) * 1000)::bigint;
            RETURN;
        END IF;
        -- The new expiry may put the row in a later partition: PostgreSQL moves it, under our key lock.
        UPDATE ${table} x SET fingerprint = p_fingerprint, status = 'IN_PROGRESS', owner_token = p_token,
                attempt = CASE WHEN x.expires_at <= t THEN 1 ELSE x.attempt + 1 END,
                created_at = CASE WHEN x.expires_at <= t THEN t ELSE x.created_at END,
                lease_expires_at = t + p_lease_ms * interval '1 millisecond', completed_at = NULL,
                expires_at = t + p_retention_ms * interval '1 millisecond',
                response_status = NULL, response_headers = NULL, response_body = NULL
            WHERE x.scope = p_scope AND x.idem_key = p_key
            RETURNING x.attempt INTO claimed;
        IF FOUND THEN
            RETURN QUERY SELECT claimed, NULL::bytea, NULL::varchar, NULL::smallint, NULL::text, NULL::bytea,
                NULL::bigint;
            RETURN;
        END IF;
    END LOOP;
    RAISE EXCEPTION 'retrysafe: record of a key changed twice under its key lock';
END
$$;

-- The completion, fenced by the owner token. p_held: the caller's transaction holds the key since its
-- claim (transactional mode), so the token alone fences it, and the key lock is already its own; if
-- another transaction holds it, this one did not claim the key. Otherwise a token that is not the
-- committed holder's is refused before the key lock. Either way, as in the standard layout, a
-- completion never waits for a transaction holding a claim it has no part in.
CREATE OR REPLACE FUNCTION ${table}_complete(p_scope varchar, p_key varchar, p_token uuid, p_retention_ms bigint,
        p_status smallint, p_headers text, p_body bytea, p_held boolean)
    RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    t constant timestamptz := statement_timestamp();
    lock_id constant bigint := hashtextextended(length(p_scope) || ':' || p_scope || p_key, hashtext('${table}'));
BEGIN
    IF p_held THEN
        IF NOT pg_try_advisory_xact_lock(lock_id) THEN
            RETURN false;
        END IF;
    ELSE
        IF NOT EXISTS (SELECT 1 FROM ${table} x WHERE x.scope = p_scope AND x.idem_key = p_key
                AND x.owner_token = p_token AND x.status = 'IN_PROGRESS' AND x.expires_at > t) THEN
            RETURN false;
        END IF;
        PERFORM pg_advisory_xact_lock(lock_id);
    END IF;
    UPDATE ${table} x SET status = 'COMPLETED', completed_at = t, expires_at = t + p_retention_ms * interval '1 millisecond',
            response_status = p_status, response_headers = p_headers, response_body = p_body
        WHERE x.scope = p_scope AND x.idem_key = p_key AND x.owner_token = p_token
            AND (p_held OR (x.status = 'IN_PROGRESS' AND x.expires_at > t));
    RETURN FOUND;
END
$$;

-- The holder's release: FAILED, so that a retry runs again, its lease ended now (nobody holds it). Fenced first
-- without the lock, as above.
CREATE OR REPLACE FUNCTION ${table}_release(p_scope varchar, p_key varchar, p_token uuid)
    RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM ${table} x WHERE x.scope = p_scope AND x.idem_key = p_key
            AND x.owner_token = p_token AND x.status = 'IN_PROGRESS' AND x.expires_at > statement_timestamp()) THEN
        RETURN false;
    END IF;
    PERFORM pg_advisory_xact_lock(hashtextextended(length(p_scope) || ':' || p_scope || p_key, hashtext('${table}')));
    UPDATE ${table} x SET status = 'FAILED', lease_expires_at = LEAST(x.lease_expires_at, statement_timestamp())
        WHERE x.scope = p_scope AND x.idem_key = p_key AND x.owner_token = p_token AND x.status = 'IN_PROGRESS'
            AND x.expires_at > statement_timestamp();
    RETURN FOUND;
END
$$;

-- An operator's release of a stuck key, whoever holds it; with p_attempt, only that attempt.
CREATE OR REPLACE FUNCTION ${table}_force_release(p_scope varchar, p_key varchar, p_attempt integer)
    RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended(length(p_scope) || ':' || p_scope || p_key, hashtext('${table}')));
    UPDATE ${table} x SET status = 'FAILED', lease_expires_at = LEAST(x.lease_expires_at, statement_timestamp())
        WHERE x.scope = p_scope AND x.idem_key = p_key AND x.status = 'IN_PROGRESS'
            AND x.expires_at > statement_timestamp() AND (p_attempt IS NULL OR x.attempt = p_attempt);
    RETURN FOUND;
END
$$;
