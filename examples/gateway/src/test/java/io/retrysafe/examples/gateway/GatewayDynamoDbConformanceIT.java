package io.retrysafe.examples.gateway;

/**
 * The suite with the gateway's keys in DynamoDB: the test server ({@code RETRYSAFE_DYNAMODB_URL}, or a
 * private dynalite), in a table the gateway creates and the class deletes.
 */
class GatewayDynamoDbConformanceIT extends GatewayConformance {
    @Override
    Gateway.Store store() {
        return Gateway.Store.DYNAMODB;
    }
}
