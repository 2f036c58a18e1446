package io.retrysafe.servlet;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** The path routes are matched on: one spelling for every raw form a container dispatches alike. */
class RequestPathTest {

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "/payments|/payments",
            "/p%61yments|/payments",
            "/P%41YMENTS|/PAYMENTS",
            "/payments;jsessionid=1|/payments",
            "/%70ayments;v=2/|/payments/",
            "/./payments|/payments",
            "//payments|/payments",
            "/a/../payments|/payments",
            "/../payments|/payments",
            "/a/%2e%2e/payments|/payments",
            "/payments/|/payments/",
            "/payments/.|/payments/",
            "/|/",
            "''|/",
            "/pay%C3%A9|/payé",
            "/bad%zzescape|/bad%zzescape",
            "/cut%4|/cut%4",
    })
    void normalises(String raw, String normalised) {
        assertThat(RequestPath.normalise(raw)).isEqualTo(normalised);
    }
}
