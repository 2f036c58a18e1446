package io.retrysafe.examples.paymentsquarkus;

import static io.retrysafe.conformance.PaymentsClient.payment;
import static io.retrysafe.examples.paymentstesting.HostileClients.assertProblem;
import static org.assertj.core.api.Assertions.assertThat;

import io.retrysafe.conformance.ConformanceTarget;
import io.retrysafe.conformance.HttpConformance;
import io.retrysafe.examples.paymentstesting.HostileClients;
import io.retrysafe.testservices.RawHttp;
import io.retrysafe.testservices.TcpProxy;
import java.net.http.HttpResponse;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * The service on Quarkus REST behind the extension, over the test PostgreSQL, as a client sees it: the conformance
 * suite every stack passes, what a hostile or broken client sends, and the store out of reach. Each mode's test
 * extends it.
 */
abstract class PaymentsOverQuarkus extends HttpConformance {
    @PaymentsDatabaseResource.Proxy
    TcpProxy proxy;

    private final QuarkusTarget target = new QuarkusTarget();

    @Override
    protected ConformanceTarget target() {
        return target;
    }

    @Test
    void aKeyOverTheMaximumLengthIsRefusedAndRunsNothing() throws Exception {
        HostileClients.aKeyOverTheMaximumLengthIsRefusedAndRunsNothing(target);
    }

    @Test
    void aKeyWithBytesOutsidePrintableAsciiIsRefusedAndRunsNothing() throws Exception {
        HostileClients.aKeyWithBytesOutsidePrintableAsciiIsRefusedAndRunsNothing(target);
    }

    /** Vert.x refuses a control character in a header itself, without a problem body; nothing runs. */
    @Test
    void aKeyWithAControlCharacterRunsNothing() throws Exception {
        String account = target.newAccount(10_000);

        RawHttp.Response response = HostileClients.raw(target, "/payments", "abc\u0001def", "application/json",
                payment(account, 100));

        assertThat(response.status()).as(response.toString()).isEqualTo(400);
        assertThat(target.effects(account)).isZero();
    }

    @Test
    void aChunkedBodyOverTheBoundIs413AndRunsNothing() throws Exception {
        HostileClients.aChunkedBodyOverTheBoundIs413AndRunsNothing(target);
    }

    /**
     * Megabytes over the bound, its length declared: refused before it reaches the resource, as a problem. (A body over
     * Vert.x's own limit, {@code quarkus.http.limits.max-body-size}, is refused by Vert.x, which closes the connection.)
     */
    @Test
    void aHugeBodyIs413AndRunsNothing() throws Exception {
        String account = target.newAccount(10_000);

        HttpResponse<String> refused = client().send(client().postPayment(target.firstUser(),
                UUID.randomUUID().toString(), payment(account, 100) + " ".repeat(5 * 1024 * 1024)));

        assertProblem(refused, 413, "request-too-large");
        assertThat(target.effects(account)).isZero();
    }

    @Test
    void otherSpellingsOfTheProtectedPathNeitherRunAgainNorGoUnprotected() throws Exception {
        HostileClients.otherSpellingsOfTheProtectedPathNeitherRunAgainNorGoUnprotected(target);
    }

    @Test
    void aFormIsFingerprintedByItsFieldsAndReachesTheResourceWhole() throws Exception {
        HostileClients.aFormIsFingerprintedByItsFieldsAndReachesTheResourceWhole(target);
    }

    @Test
    void aResourceThatThrowsIsRolledBackAndItsKeyReleased() throws Exception {
        HostileClients.aResourceThatThrowsIsRolledBackAndItsKeyReleased(target, "/failures", 100);
    }

    @Test
    void theStoreOutOfReachIs503AndTheSameKeyRunsOnceItIsBack() throws Exception {
        HostileClients.theStoreOutOfReachIs503AndTheSameKeyRunsOnceItIsBack(target, proxy);
    }
}
