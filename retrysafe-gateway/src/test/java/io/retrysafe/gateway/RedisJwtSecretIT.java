package io.retrysafe.gateway;

import com.nimbusds.jose.JWSAlgorithm;
import com.nimbusds.jose.JWSHeader;
import com.nimbusds.jose.crypto.MACSigner;
import com.nimbusds.jwt.JWTClaimsSet;
import com.nimbusds.jwt.SignedJWT;
import java.net.http.HttpRequest;
import java.nio.charset.StandardCharsets;
import java.util.Date;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/** The shared standalone Redis, under a key prefix of this run's own; callers named by HMAC-signed JWTs. */
class RedisJwtSecretIT extends GatewayContract {
    private static final String SECRET = "a-test-secret-of-at-least-32-bytes-" + UUID.randomUUID();

    @Override
    String store() {
        return TestStores.redis("gw-it-" + UUID.randomUUID() + ":");
    }

    @Override
    String scope() {
        return "jwt:\n  secret-env: TEST_JWT_SECRET\n  issuer: https://issuer.test\n";
    }

    @Override
    List<String> challenge() {
        return List.of("Bearer realm=\"retrysafe-gateway\"");
    }

    @Override
    Map<String, String> env() {
        return Map.of("TEST_JWT_SECRET", SECRET);
    }

    @Override
    HttpRequest.Builder as(String name, HttpRequest.Builder request) {
        return request.header("Authorization", "Bearer " + token(name, "https://issuer.test", SECRET));
    }

    @Override
    HttpRequest.Builder asNobody(HttpRequest.Builder request) {
        // Signed with another secret.
        request.header("Authorization", "Bearer " + token("alice", "https://issuer.test",
                "another-secret-of-at-least-32-bytes-long"));
        return request;
    }

    static String token(String subject, String issuer, String secret) {
        try {
            SignedJWT jwt = new SignedJWT(new JWSHeader(JWSAlgorithm.HS256), new JWTClaimsSet.Builder().subject(subject)
                    .issuer(issuer).expirationTime(new Date(System.currentTimeMillis() + 600_000)).build());
            jwt.sign(new MACSigner(secret.getBytes(StandardCharsets.UTF_8)));
            return jwt.serialize();
        } catch (com.nimbusds.jose.JOSEException e) {
            throw new IllegalStateException(e);
        }
    }
}
