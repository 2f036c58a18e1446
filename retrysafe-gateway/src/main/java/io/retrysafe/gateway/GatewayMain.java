package io.retrysafe.gateway;

import java.nio.file.Path;
import java.util.concurrent.CountDownLatch;

/**
 * {@code java -jar retrysafe-gateway.jar --config gateway.yaml}. Prints {@code retrysafe-gateway listening on port N}
 * once it takes requests; a bad configuration prints {@code file:line:column: reason} and exits with status 2.
 * SIGTERM (or Ctrl-C) drains the requests in flight, then exits.
 */
public final class GatewayMain {
    /** Exit status for a configuration the gateway refuses. */
    public static final int CONFIG_ERROR = 2;
    /** Exit status for any other failure to start (a port in use, a store that refuses the schema). */
    public static final int START_ERROR = 1;

    private GatewayMain() {
    }

    public static void main(String[] args) throws InterruptedException {
        Path config = null;
        for (int i = 0; i < args.length; i++) {
            if (args[i].equals("--config") && i + 1 < args.length) {
                config = Path.of(args[++i]);
            } else if (args[i].startsWith("--config=")) {
                config = Path.of(args[i].substring("--config=".length()));
            } else {
                System.err.println("retrysafe-gateway: unknown argument " + args[i] + "; usage: --config FILE");
                System.exit(CONFIG_ERROR);
            }
        }
        if (config == null) {
            System.err.println("retrysafe-gateway: usage: --config FILE");
            System.exit(CONFIG_ERROR);
        }
        Gateway gateway;
        try {
            gateway = Gateway.start(ConfigLoader.load(config, System.getenv()), System.getenv());
        } catch (ConfigException e) {
            System.err.println("retrysafe-gateway: configuration error: " + e.getMessage());
            System.exit(CONFIG_ERROR);
            return;
        } catch (Exception e) {
            System.err.println("retrysafe-gateway: could not start: " + e);
            System.exit(START_ERROR);
            return;
        }
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            gateway.close();
            stopped.countDown();
        }, "gateway-shutdown"));
        System.out.println("retrysafe-gateway listening on port " + gateway.port() + " (admin: /health and /metrics "
                + "on port " + gateway.adminPort() + ")");
        stopped.await();
    }
}
