package io.retrysafe.examples.paymentsjpa;

import io.retrysafe.examples.paymentscommon.PaymentRequest;
import io.retrysafe.spring.Idempotent;
import java.security.Principal;
import java.util.concurrent.atomic.AtomicInteger;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.http.MediaType;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.annotation.Transactional;
import org.springframework.transaction.support.TransactionTemplate;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RestController;

/** Test only: a handler that fails after saving entities, and a caller with entities of its own. */
@TestConfiguration(proxyBeanMethods = false)
class TestBeans {
    /** Marks a {@code POST /payments} whose handler books the payment, then fails. */
    static final String FAIL_AFTER_SAVE = "X-Test-Fail-After-Save";

    @Bean
    MarksRollbackOnly marksRollbackOnly(PlatformTransactionManager manager, AccountRepository accounts,
            PaymentRepository payments) {
        return new MarksRollbackOnly(new TransactionTemplate(manager), accounts, payments);
    }

    @Bean
    Caller caller(AccountRepository accounts, PaymentRepository payments, OrderPayments orders) {
        return new Caller(accounts, payments, orders);
    }

    /**
     * {@code POST /payments} with {@link #FAIL_AFTER_SAVE}: the same route and filter, a handler that throws.
     * A member of this configuration, so registered with it.
     */
    @RestController
    static class FailingPayments {
        private final Payments payments;

        FailingPayments(Payments payments) {
            this.payments = payments;
        }

        @PostMapping(path = "/payments", consumes = MediaType.APPLICATION_JSON_VALUE, headers = FAIL_AFTER_SAVE)
        void create(@RequestBody PaymentRequest request, Principal principal) {
            // Booked and flushed: the account's debit and the payment are in the database, uncommitted.
            payments.pay(principal.getName(), request);
            throw new IllegalStateException("the handler failed after the payment was booked");
        }
    }

    /**
     * Passes the start-up check (no {@code @Transactional} of its own), and marks the JPA transaction
     * rollback-only all the same: its {@code TransactionTemplate} joins it and rolls back on the refusal.
     */
    static class MarksRollbackOnly {
        private final AtomicInteger runs = new AtomicInteger();
        private final TransactionTemplate template;
        private final AccountRepository accounts;
        private final PaymentRepository payments;

        MarksRollbackOnly(TransactionTemplate template, AccountRepository accounts, PaymentRepository payments) {
            this.template = template;
            this.accounts = accounts;
            this.payments = payments;
        }

        /** Through the proxy: the proxy's own fields are not the bean's. */
        public int runs() {
            return runs.get();
        }

        @Idempotent(key = "#order", scope = Idempotent.Scope.SHARED, replayedExceptions = InsufficientFundsException.class)
        public void pay(String order, String account, long amount) {
            runs.incrementAndGet();
            template.executeWithoutResult(status -> {
                payments.save(new Payment("alice", account, amount));
                accounts.lock(account).orElseThrow().debit(amount);
            });
        }
    }

    /** A caller's own transaction around an order payment: its own entity first, then the order. */
    static class Caller {
        private final AccountRepository accounts;
        private final PaymentRepository payments;
        private final OrderPayments orders;

        Caller(AccountRepository accounts, PaymentRepository payments, OrderPayments orders) {
            this.accounts = accounts;
            this.payments = payments;
            this.orders = orders;
        }

        /**
         * Saves a payment of its own (not flushed), then pays the order; a refusal of the order is caught,
         * and the caller's transaction commits what it did itself.
         */
        @Transactional
        public InsufficientFundsException payOwnThenOrder(String payer, String ownAccount, String orderNumber,
                OrderPayments.OrderPaymentRequest order) {
            accounts.lock(ownAccount).orElseThrow().debit(1);
            payments.save(new Payment(payer, ownAccount, 1));
            try {
                orders.pay(payer, orderNumber, order);
                return null;
            } catch (InsufficientFundsException e) {
                return e;
            }
        }
    }
}
