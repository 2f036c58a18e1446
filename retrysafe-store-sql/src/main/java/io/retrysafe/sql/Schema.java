package io.retrysafe.sql;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;

/**
 * The shipped DDL of the records table, by database and layout: the resources that {@code createSchema()},
 * the CLI's {@code schema} command and the Flyway and Liquibase migrations are all made from.
 */
public enum Schema {
    POSTGRESQL("/io/retrysafe/jdbc/schema-postgresql.sql"),
    POSTGRESQL_PARTITIONED("/io/retrysafe/jdbc/schema-postgresql-partitioned.sql"),
    MARIADB("/io/retrysafe/jdbc/schema-mariadb.sql");

    private final String resource;

    Schema(String resource) {
        this.resource = resource;
    }

    /** The DDL for {@code table} (optionally schema-qualified, already checked by {@link TableNames#checked}). */
    public String forTable(String table) {
        try (InputStream in = Schema.class.getResourceAsStream(resource)) {
            if (in == null) {
                throw new IllegalStateException("schema resource missing: " + resource);
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8).replace("${table}", table)
                    .replace("${name}", table.substring(table.indexOf('.') + 1));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
