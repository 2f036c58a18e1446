package io.retrysafe.examples.paymentsjpa;

import org.springframework.data.jpa.repository.JpaRepository;

public interface OrderPaymentRepository extends JpaRepository<OrderPayment, String> {
}
