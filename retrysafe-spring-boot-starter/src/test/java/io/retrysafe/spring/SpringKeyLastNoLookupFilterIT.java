package io.retrysafe.spring;

import static org.assertj.core.api.Assertions.assertThat;

import io.retrysafe.jdbc.KeyOrder;
import io.retrysafe.servlet.RetrySafeFilter;
import java.net.http.HttpResponse;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.springframework.test.context.TestPropertySource;

/**
 * {@link SpringKeyLastFilterIT}'s tests with {@code retrysafe.store.key-order=last-no-lookup}: nothing is read
 * before the handler, so a retry after the commit runs it too, inside a transaction that is rolled back, and the
 * client sees the first answer, replayed. Plus what only this order does: a retry whose handler fails this time,
 * or whose body changed, still gets the key's answer.
 */
// Inlined test properties take precedence over the inherited @SpringBootTest's: the rest of its setup stays.
@TestPropertySource(properties = "retrysafe.store.key-order=last-no-lookup")
class SpringKeyLastNoLookupFilterIT extends SpringKeyLastFilterIT {
    @Override
    KeyOrder order() {
        return KeyOrder.LAST_NO_LOOKUP;
    }

    @Override
    int handlerRunsOfARetry() {
        return 1;
    }

    /** The first run's plain insert fails on the expired record and is rolled back; the run again claims first. */
    @Override
    int handlerRunsOverAnExpiredRecord() {
        return 2;
    }

    @Test
    void aRetryWhoseHandlerFailsThisTimeGetsTheFirstAnswer() throws Exception {
        HttpResponse<String> created = post(key);
        probe.whileRunning.set(run -> {
            throw new IllegalStateException("the thing's quota is used up");
        });

        HttpResponse<String> retry = post(key);

        assertThat(created.statusCode()).isEqualTo(201);
        assertThat(retry.statusCode()).isEqualTo(201);
        assertThat(retry.headers().firstValue(RetrySafeFilter.REPLAYED_HEADER)).hasValue("true");
        assertThat(retry.body()).isEqualTo(created.body());
        assertThat(rows()).isEqualTo(1);
    }

    @Test
    void aRetryWithAnotherBodyIsRefusedAndKeepsNothing() throws Exception {
        HttpResponse<String> created = post(key);
        String first = name;
        name = "thing-" + UUID.randomUUID();

        HttpResponse<String> changed = post(key);

        assertThat(created.statusCode()).isEqualTo(201);
        assertThat(changed.statusCode()).isEqualTo(422);
        assertThat(changed.headers().firstValue("Content-Type")).hasValue("application/problem+json");
        assertThat(rows()).as("the changed body's row was rolled back").isZero();
        name = first;
        assertThat(rows()).isEqualTo(1);
    }
}
