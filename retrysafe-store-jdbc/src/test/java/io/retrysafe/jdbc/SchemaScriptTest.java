package io.retrysafe.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** The schema scripts are split into statements as the database must get them. */
class SchemaScriptTest {

    @Test
    void functionBodiesStayWholeAndCommentsGo() {
        JdbcIdempotencyStore store = JdbcIdempotencyStore.builder(new org.postgresql.ds.PGSimpleDataSource())
                .dialect(JdbcDialect.POSTGRESQL).layout(JdbcLayout.PARTITIONED_BY_EXPIRY_DAY).table("s.records").build();

        String[] statements = JdbcIdempotencyStore.statements(store.schema());

        assertThat(statements).hasSize(10);
        assertThat(statements[0]).startsWith("CREATE TABLE IF NOT EXISTS s.records (").endsWith("PARTITION BY RANGE (expires_at)");
        assertThat(statements[1]).isEqualTo("CREATE TABLE IF NOT EXISTS s.records_pdefault PARTITION OF s.records DEFAULT");
        // The phased operations' columns, added in place by one anonymous block, kept whole.
        assertThat(statements[4]).startsWith("DO $$").endsWith("$$").contains("ADD COLUMN IF NOT EXISTS phase_state")
                .contains("END IF;");
        assertThat(statements[5]).startsWith("CREATE INDEX IF NOT EXISTS records_phased_idx ON s.records");
        assertThat(statements[6]).startsWith("CREATE OR REPLACE FUNCTION s.records_claim(").endsWith("$$")
                .contains("pg_advisory_xact_lock").contains("hashtext('s.records')");
        // Comments outside function bodies are dropped; inside, they are part of the body.
        assertThat(java.util.Arrays.copyOf(statements, 6)).noneMatch(s -> s.contains("--"));
        assertThat(statements).noneMatch(s -> s.startsWith("--"));
    }

    @Test
    void theStandardScriptsAreOneStatementPerCreate() {
        // The table and its index, then the phased operations' columns added in place and their index.
        assertThat(JdbcIdempotencyStore.statements(JdbcIdempotencyStore.builder(new org.postgresql.ds.PGSimpleDataSource())
                .dialect(JdbcDialect.POSTGRESQL).build().schema())).hasSize(4);
        assertThat(JdbcIdempotencyStore.statements(JdbcIdempotencyStore.builder(new org.postgresql.ds.PGSimpleDataSource())
                .dialect(JdbcDialect.MARIADB).build().schema())).hasSize(3);
    }
}
