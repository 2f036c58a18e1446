package io.retrysafe.jaxrs;

/** On RESTEasy 7 and Undertow. */
class ResteasyIT extends PaymentsOverJaxrs {
    @Override
    String schema() {
        return "jaxrs_resteasy_it";
    }

    @Override
    String implementation() {
        return "org.jboss.resteasy.";
    }
}
