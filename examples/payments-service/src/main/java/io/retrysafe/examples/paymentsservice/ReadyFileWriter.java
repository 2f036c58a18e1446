package io.retrysafe.examples.paymentsservice;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import org.springframework.boot.context.event.ApplicationReadyEvent;
import org.springframework.context.ApplicationListener;
import org.springframework.core.env.Environment;
import org.springframework.stereotype.Component;

/**
 * With {@code payments.ready-file=<path>}, writes the HTTP port to that file once the service is
 * ready to serve, atomically: a supervisor (or a test) that started it with {@code --server.port=0}
 * waits for the file, then reads the port.
 */
@Component
class ReadyFileWriter implements ApplicationListener<ApplicationReadyEvent> {
    private final Environment environment;

    ReadyFileWriter(Environment environment) {
        this.environment = environment;
    }

    @Override
    public void onApplicationEvent(ApplicationReadyEvent event) {
        String file = environment.getProperty("payments.ready-file");
        String port = environment.getProperty("local.server.port");
        if (file == null || file.isBlank() || port == null) {
            return;
        }
        Path target = Path.of(file).toAbsolutePath();
        try {
            Path tmp = Files.createTempFile(target.getParent(), target.getFileName().toString(), ".tmp");
            Files.writeString(tmp, port, StandardCharsets.US_ASCII);
            Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } catch (IOException e) {
            throw new UncheckedIOException("could not write payments.ready-file " + target + ": " + e.getMessage(), e);
        }
    }
}
