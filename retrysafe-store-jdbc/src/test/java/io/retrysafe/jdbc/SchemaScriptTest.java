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

        assertThat(statements).hasSize(8);
        assertThat(statements[0]).startsWith("CREATE TABLE IF NOT EXISTS s.records (").endsWith("PARTITION BY RANGE (expires_at)");
        assertThat(statements[1]).isEqualTo("CREATE TABLE IF NOT EXISTS s.records_pdefault PARTITION OF s.records DEFAULT");
        assertThat(statements[4]).startsWith("CREATE OR REPLACE FUNCTION s.records_claim(").endsWith("$$")
                .contains("pg_advisory_xact_lock").contains("hashtext('s.records')");
        // Comments outside function bodies are dropped; inside, they are part of the body.
        assertThat(java.util.Arrays.copyOf(statements, 4)).noneMatch(s -> s.contains("--"));
        assertThat(statements).noneMatch(s -> s.startsWith("--"));
    }

    @Test
    void theStandardScriptsAreOneStatementPerCreate() {
        assertThat(JdbcIdempotencyStore.statements(JdbcIdempotencyStore.builder(new org.postgresql.ds.PGSimpleDataSource())
                .dialect(JdbcDialect.POSTGRESQL).build().schema())).hasSize(2);
        assertThat(JdbcIdempotencyStore.statements(JdbcIdempotencyStore.builder(new org.postgresql.ds.PGSimpleDataSource())
                .dialect(JdbcDialect.MARIADB).build().schema())).hasSize(1);
    }
}
