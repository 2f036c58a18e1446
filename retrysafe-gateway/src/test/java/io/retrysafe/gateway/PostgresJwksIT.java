package io.retrysafe.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import com.nimbusds.jose.JOSEException;
import com.nimbusds.jose.JWSAlgorithm;
import com.nimbusds.jose.JWSHeader;
import com.nimbusds.jose.crypto.RSASSASigner;
import com.nimbusds.jose.jwk.JWKSet;
import com.nimbusds.jose.jwk.RSAKey;
import com.nimbusds.jose.jwk.gen.RSAKeyGenerator;
import com.nimbusds.jwt.JWTClaimsSet;
import com.nimbusds.jwt.SignedJWT;
import java.net.http.HttpRequest;
import java.nio.file.Files;
import java.util.Date;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** PostgreSQL; callers named by RS256 JWTs verified against a JWKS file. */
class PostgresJwksIT extends GatewayContract {
    private RSAKey key;
    private RSAKey stranger;

    @Override
    void prepare() throws Exception {
        key = new RSAKeyGenerator(2048).keyID("k1").generate();
        stranger = new RSAKeyGenerator(2048).keyID("k1").generate();
        Files.writeString(dir.resolve("jwks.json"), new JWKSet(key.toPublicJWK()).toString());
    }

    @Override
    String store() {
        return TestStores.postgres(TestStores.table());
    }

    @Override
    Map<String, String> env() {
        return TestStores.postgresEnv();
    }

    @Override
    String scope() {
        return "jwt:\n  jwks-file: jwks.json\n  audience: payments\n";
    }

    @Override
    List<String> challenge() {
        return List.of("Bearer realm=\"retrysafe-gateway\"");
    }

    @Override
    HttpRequest.Builder as(String name, HttpRequest.Builder request) {
        return request.header("Authorization", "Bearer " + token(key, name, "payments", 600_000));
    }

    @Override
    HttpRequest.Builder asNobody(HttpRequest.Builder request) {
        return request.header("Authorization", "Bearer " + token(stranger, "alice", "payments", 600_000));
    }

    @Test
    void anExpiredTokenOrOneForAnotherAudienceNamesNoCaller() throws Exception {
        JwtScope scope = JwtScope.of(new GatewayConfig.JwtScope(java.util.Optional.of(dir.resolve("jwks.json")),
                java.util.Optional.empty(), java.util.Optional.empty(), java.util.Optional.of("payments")), Map.of());

        assertThat(scope.subject(token(key, "alice", "payments", 600_000))).isEqualTo("alice");
        assertThat(scope.subject(token(key, "alice", "payments", -120_000))).as("expired").isNull();
        assertThat(scope.subject(token(key, "alice", "billing", 600_000))).as("another audience").isNull();
        assertThat(scope.subject("not.a.token")).isNull();
    }

    static String token(RSAKey signer, String subject, String audience, long expiresInMillis) {
        try {
            SignedJWT jwt = new SignedJWT(new JWSHeader.Builder(JWSAlgorithm.RS256).keyID(signer.getKeyID()).build(),
                    new JWTClaimsSet.Builder().subject(subject).audience(audience)
                            .expirationTime(new Date(System.currentTimeMillis() + expiresInMillis)).build());
            jwt.sign(new RSASSASigner(signer));
            return jwt.serialize();
        } catch (JOSEException e) {
            throw new IllegalStateException(e);
        }
    }
}
