package io.retrysafe.examples.paymentsservice;

import org.springframework.boot.diagnostics.AbstractFailureAnalyzer;
import org.springframework.boot.diagnostics.FailureAnalysis;

/** Turns the embedded PostgreSQL's refusal to run as root into a short report instead of a stack trace. */
class RunningAsRootFailureAnalyzer extends AbstractFailureAnalyzer<EmbeddedPostgresConfiguration.RunningAsRootException> {

    @Override
    protected FailureAnalysis analyze(Throwable rootFailure, EmbeddedPostgresConfiguration.RunningAsRootException cause) {
        return new FailureAnalysis("No spring.datasource.url (or RETRYSAFE_JDBC_URL) is set, so the service would start "
                + "an embedded PostgreSQL, but PostgreSQL refuses to run as root.",
                "Run as another user, or point RETRYSAFE_JDBC_URL (or spring.datasource.url) at a PostgreSQL server, "
                        + "e.g. RETRYSAFE_JDBC_URL=jdbc:postgresql://127.0.0.1:5432/test", cause);
    }
}
