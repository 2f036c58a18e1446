package io.retrysafe.redis;

import static java.nio.charset.StandardCharsets.UTF_8;

import io.retrysafe.Fingerprint;

final class Fingerprints {
    static final Fingerprint ANY = Fingerprint.sha256("POST /payments {\"amount\":100}".getBytes(UTF_8));

    private Fingerprints() {
    }
}
