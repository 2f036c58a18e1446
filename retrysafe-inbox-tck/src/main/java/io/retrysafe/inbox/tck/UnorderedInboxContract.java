package io.retrysafe.inbox.tck;

/**
 * The contract of an adapter whose broker may deliver messages out of their publish order (a
 * JetStream consumer with several acknowledgements pending, a redelivery that comes back later):
 * the common tests only, none of which depends on order.
 */
public abstract non-sealed class UnorderedInboxContract extends InboxContract {
}
