package io.retrysafe.examples.paymentsquarkus;

import io.quarkus.test.common.WithTestResource;
import io.quarkus.test.junit.QuarkusTest;

/** Transactional mode (application.properties): the key, the payment and the answer commit together. */
@QuarkusTest
@WithTestResource(PaymentsDatabaseResource.class)
class TransactionalTest extends PaymentsOverQuarkus {
}
