package io.retrysafe.spring;

import com.rabbitmq.client.Delivery;
import com.rabbitmq.client.Envelope;
import io.retrysafe.InProgressException;
import io.retrysafe.Sleeper;
import io.retrysafe.StoreUnavailableException;
import io.retrysafe.inbox.InboxResult;
import io.retrysafe.rabbitmq.RabbitInbox;
import java.lang.System.Logger.Level;
import java.nio.charset.StandardCharsets;
import java.util.function.Supplier;
import org.aopalliance.intercept.MethodInterceptor;
import org.aopalliance.intercept.MethodInvocation;
import org.springframework.amqp.core.Message;
import org.springframework.amqp.core.MessageProperties;
import org.springframework.amqp.rabbit.support.DefaultMessagePropertiesConverter;
import org.springframework.amqp.rabbit.support.ListenerExecutionFailedException;
import org.springframework.aop.ProxyMethodInvocation;

/**
 * The advice Spring AMQP's listener container puts around each call of a listener
 * ({@code setAdviceChain}): the message goes through the {@link RabbitInbox}, whose attempts run in
 * transactions of the application's transaction manager ({@link SpringInboxTransactions}), so the
 * listener's JDBC writes commit with the message id, before the call returns to the container and
 * so before the container acknowledges (acknowledge mode {@code AUTO}).
 *
 * <table class="striped">
 * <caption>What the container sees</caption>
 * <thead><tr><th scope="col">inbox result</th><th scope="col">the call</th></tr></thead>
 * <tbody>
 * <tr><td>processed, replayed (the listener did not run), dead-lettered (confirmed)</td><td>returns: acknowledged</td></tr>
 * <tr><td>retry later (the database failed, another delivery holds the id, the dead letter was not confirmed)</td>
 *     <td>waits the delay, then throws: the container requeues the message</td></tr>
 * </tbody>
 * </table>
 *
 * <p>A failing listener runs again in the same call, up to {@code retrysafe.rabbit.max-attempts}, then
 * the message is dead-lettered; the container's own retry and recoverer never see it.
 */
final class RabbitInboxAdvice implements MethodInterceptor {
    private static final System.Logger LOG = System.getLogger(RabbitInboxAdvice.class.getName());
    private static final DefaultMessagePropertiesConverter PROPERTIES = new DefaultMessagePropertiesConverter();

    private final Supplier<RabbitInbox> inboxSupplier;
    private volatile RabbitInbox inbox;

    /** Resolved at start-up by the check, or on the first message. */
    RabbitInboxAdvice(Supplier<RabbitInbox> inbox) {
        this.inboxSupplier = inbox;
    }

    @Override
    public Object invoke(MethodInvocation invocation) throws Throwable {
        Object[] args = invocation.getArguments();
        // ContainerDelegate.invokeListener(Channel, Object data): data is a Message, or a List for a batch listener.
        if (!"invokeListener".equals(invocation.getMethod().getName()) || args.length < 2) {
            return invocation.proceed();
        }
        if (!(args[1] instanceof Message message)) {
            throw new IllegalStateException("retrysafe.rabbit.enabled covers listeners of one message, but a listener "
                    + "received " + (args[1] == null ? "null" : args[1].getClass().getName())
                    + " (a batch listener); see docs/messaging.md");
        }
        MessageProperties props = message.getMessageProperties();
        String queue = props.getConsumerQueue();
        if (queue == null) {
            throw new IllegalStateException("retrysafe.rabbit.enabled needs the queue a message came from, but the "
                    + "container did not say (consumer queue unset)");
        }
        RabbitInbox in = inbox();
        Delivery delivery = new Delivery(new Envelope(props.getDeliveryTag(), Boolean.TRUE.equals(props.getRedelivered()),
                props.getReceivedExchange(), props.getReceivedRoutingKey()),
                PROPERTIES.fromMessageProperties(props, StandardCharsets.UTF_8.name()), message.getBody());
        InboxResult result = in.process(queue, delivery, (d, connection, attempt) -> {
            MethodInvocation call = invocation instanceof ProxyMethodInvocation proxied ? proxied.invocableClone()
                    : invocation;
            try {
                call.proceed();
            } catch (ListenerExecutionFailedException e) {
                // The listener's own exception, for the dead letter's error header and the retry decision.
                throw e.getCause() instanceof Exception cause ? cause : e;
            } catch (Exception | Error e) {
                throw e;
            } catch (Throwable t) {
                throw new IllegalStateException(t);
            }
        });
        if (result instanceof InboxResult.RetryLater later) {
            LOG.log(Level.INFO, () -> "[" + in.inbox().engine().name() + "] " + queue + ": message requeued after "
                    + later.delay() + " (" + later.reason().tagValue() + "): " + later.detail());
            Sleeper.THREAD_SLEEP.sleep(later.delay());
            throw switch (later.reason()) {
                case IN_PROGRESS -> new InProgressException(later.detail(), later.delay());
                default -> new StoreUnavailableException(in.inbox().engine().store().name(), later.delay(),
                        later.reason().tagValue() + ": " + later.detail(), null);
            };
        }
        return null;
    }

    /** Resolves the inbox now (at start-up), so that a misconfiguration fails there. */
    RabbitInbox resolve() {
        return inbox();
    }

    private RabbitInbox inbox() {
        RabbitInbox in = inbox;
        if (in == null) {
            synchronized (this) {
                if (inbox == null) {
                    inbox = inboxSupplier.get();
                }
                in = inbox;
            }
        }
        return in;
    }
}
