package io.retrysafe.gateway;

import com.nimbusds.jose.JOSEException;
import com.nimbusds.jose.JWSAlgorithm;
import com.nimbusds.jose.jwk.JWKSet;
import com.nimbusds.jose.jwk.source.ImmutableJWKSet;
import com.nimbusds.jose.jwk.source.ImmutableSecret;
import com.nimbusds.jose.jwk.source.JWKSource;
import com.nimbusds.jose.proc.BadJOSEException;
import com.nimbusds.jose.proc.JWSVerificationKeySelector;
import com.nimbusds.jose.proc.SecurityContext;
import com.nimbusds.jwt.JWTClaimsSet;
import com.nimbusds.jwt.proc.DefaultJWTClaimsVerifier;
import com.nimbusds.jwt.proc.DefaultJWTProcessor;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.text.ParseException;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;

/**
 * The caller named by a bearer JWT ({@code Authorization: Bearer ...}) whose signature verifies against the
 * configured keys (a JWKS file: RS, PS and ES algorithms; or an HMAC secret: HS256/384/512), that has not expired,
 * and whose {@code iss} and {@code aud} match when configured. The scope is its {@code sub}; a token without one
 * names no caller ({@code 401}).
 */
final class JwtScope implements Callers {
    private final DefaultJWTProcessor<SecurityContext> processor;

    private JwtScope(DefaultJWTProcessor<SecurityContext> processor) {
        this.processor = processor;
    }

    static JwtScope of(GatewayConfig.JwtScope config, Map<String, String> env) {
        JWKSource<SecurityContext> keys;
        Set<JWSAlgorithm> algorithms = new HashSet<>();
        if (config.jwksFile().isPresent()) {
            String file = config.jwksFile().get().toString();
            try {
                keys = new ImmutableJWKSet<>(JWKSet.load(config.jwksFile().get().toFile()));
            } catch (IOException | ParseException e) {
                throw new ConfigException(file, 0, 0, "not a JWKS document: " + e.getMessage());
            }
            algorithms.addAll(JWSAlgorithm.Family.RSA);
            algorithms.addAll(JWSAlgorithm.Family.EC);
        } else {
            String name = config.secretEnv().orElseThrow();
            String secret = env.get(name);
            if (secret == null || secret.getBytes(StandardCharsets.UTF_8).length < 32) {
                throw new ConfigException("environment", 0, 0, "scope.jwt.secret-env names " + name + ", which must "
                        + "hold an HMAC secret of at least 32 bytes, but " + (secret == null ? "is not set" : "is shorter"));
            }
            keys = new ImmutableSecret<>(secret.getBytes(StandardCharsets.UTF_8));
            algorithms.addAll(JWSAlgorithm.Family.HMAC_SHA);
        }
        DefaultJWTProcessor<SecurityContext> processor = new DefaultJWTProcessor<>();
        processor.setJWSKeySelector(new JWSVerificationKeySelector<>(algorithms, keys));
        JWTClaimsSet.Builder exact = new JWTClaimsSet.Builder();
        config.issuer().ifPresent(exact::issuer);
        processor.setJWTClaimsSetVerifier(new DefaultJWTClaimsVerifier<>(config.audience().orElse(null), exact.build(),
                Set.of("sub", "exp")));
        return new JwtScope(processor);
    }

    @Override
    public String caller(Headers headers) {
        String authorization = headers.get("Authorization");
        if (authorization == null || !authorization.regionMatches(true, 0, "Bearer ", 0, 7)) {
            return null;
        }
        return subject(authorization.substring(7).strip());
    }

    @Override
    public String scope(String caller) {
        return "sub:" + caller;
    }

    @Override
    public String challenge() {
        return "Bearer realm=\"" + REALM + "\"";
    }

    /** The verified token's subject; null when it does not verify or has none. */
    String subject(String token) {
        try {
            String sub = processor.process(token, null).getSubject();
            return sub == null || sub.isBlank() ? null : sub;
        } catch (ParseException | BadJOSEException | JOSEException e) {
            return null;
        }
    }
}
