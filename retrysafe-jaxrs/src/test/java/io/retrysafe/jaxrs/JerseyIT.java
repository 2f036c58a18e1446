package io.retrysafe.jaxrs;

/** On Jersey 4 and its Grizzly HTTP server container. */
class JerseyIT extends PaymentsOverJaxrs {
    @Override
    String schema() {
        return "jaxrs_jersey_it";
    }

    @Override
    String implementation() {
        return "org.glassfish.jersey.";
    }
}
