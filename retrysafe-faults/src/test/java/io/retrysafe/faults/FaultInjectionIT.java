package io.retrysafe.faults;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.retrysafe.examples.paymentsservice.provider.FlatJson;
import io.retrysafe.examples.paymentsservice.provider.ProviderAdmin;
import io.retrysafe.faults.PaymentClient.Kind;
import io.retrysafe.faults.Workload.Log;
import io.retrysafe.testservices.TcpProxy;
import io.retrysafe.testservices.TestRedis;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.Callable;
import java.util.concurrent.locks.ReadWriteLock;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import org.awaitility.core.ConditionTimeoutException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.opentest4j.TestAbortedException;

/**
 * The payments service (transactional mode on PostgreSQL, Redis fast filter on, its checkouts charging
 * cards at a payment provider that runs as a process of its own), three instances on one database whose
 * clients send each request to the next instance, under a workload of retrying clients,
 * while a driver injects faults at random points from a seeded RNG; then {@link FaultChecker} proves the
 * invariants. docs/faults.md describes the faults, the invariants and how to replay a seed.
 *
 * <p>{@code -Dretrysafe.faults.duration=PT1H} runs it for an hour; {@code -Dretrysafe.faults.instances=N} runs N
 * instances; {@code -Dretrysafe.faults.seed=N}
 * replays run N's schedule of faults (which fault, after how long, for how long) and the clients'
 * choices; thread timing is the machine's, so the interleavings differ.
 */
class FaultInjectionIT {
    private static final int CLIENTS = 8;
    /** Instances of the service on one database, each client's requests going to each in turn. */
    private static final int INSTANCES = Integer.parseInt(property("retrysafe.faults.instances", "3"));
    /**
     * The keys' lease, shorter than the service's default (30 s) so that an owner paused past it is taken over
     * within the run; an owner alive renews it while it works.
     */
    private static final Duration LEASE = Duration.ofSeconds(6);
    /** Clients that send checkouts ({@code POST /checkouts}), besides the ones that pay. */
    private static final int CHECKOUT_CLIENTS = 2;
    private static final double DUPLICATE_RATE = 0.05;
    /**
     * Each account's opening balance, in cents. Intents pay 1, 2, 3, … cents, so n intents take n²/2:
     * 10^15 lasts 44 million intents per account, far beyond an hour (10^9 ran dry after 44,721,
     * about halfway through the first hour-long run, and every later intent was a 402).
     */
    private static final long OPENING_BALANCE = 1_000_000_000_000_000L;
    /** Once the faults stop, how long the clients have to get every intent answered. */
    private static final long RECOVERY_MILLIS = 120_000;
    /**
     * Shorter than the longest stall and than the service's lock timeout (5 s): a client gives up on
     * an attempt that the service will still commit, and its retry meets the key held or completed.
     */
    private static final Duration REQUEST_TIMEOUT = Duration.ofSeconds(3);
    /**
     * The completer of checkouts nobody finished: it runs every {@code COMPLETER_INTERVAL} and takes over a
     * checkout nobody has held for {@code COMPLETER_IDLE_FOR} (longer than a client's backoff, so that it
     * mostly finds the ones whose client gave up, and sometimes races a late retry).
     */
    private static final Duration COMPLETER_INTERVAL = Duration.ofSeconds(2);
    private static final Duration COMPLETER_IDLE_FOR = Duration.ofSeconds(5);
    /**
     * Once the clients are done, how long the completer has to finish every checkout: a checkout whose service
     * died holds its key for the lease, then idles for {@code COMPLETER_IDLE_FOR}; a call to the provider
     * may take its timeout (10 s); and a run may meet the provider with a key still in flight and try again.
     */
    private static final Duration COMPLETER_BOUND = Duration.ofSeconds(120);
    /** How long the Sentinels wait for a master that does not answer before they fail it over. */
    static final Duration SENTINEL_DOWN_AFTER = Duration.ofSeconds(1);

    enum Fault {
        /** SIGKILL of one instance, started again on the same port. */
        SERVICE_KILL,
        /**
         * One instance frozen (SIGSTOP) for 1 to 4 s past the lease, as a long GC pause or a suspended VM freezes
         * an owner: another instance or the completer takes its keys over; then it runs on (SIGCONT) and tries to
         * finish what it held, which fencing must refuse.
         */
        OWNER_PAUSED,
        /**
         * A rolling restart: each instance in turn stopped with SIGTERM (graceful shutdown: requests in flight
         * finish) and started again, while the others serve.
         */
        ROLLING_RESTART,
        /** PostgreSQL stopped cleanly ({@code pg_ctl stop -m fast}) and started again. */
        POSTGRES_RESTART,
        /** PostgreSQL crashed ({@code pg_ctl stop -m immediate}) and started again: WAL recovery. */
        POSTGRES_CRASH,
        /** Every connection between the service and PostgreSQL reset by the proxy. */
        CONNECTIONS_DROPPED,
        /** No byte passes between the service and PostgreSQL for 0.5 to 7.5 s. */
        CONNECTIONS_STALLED,
        /** The fast filter's Redis killed, started again (empty) 1 to 8 s later. */
        REDIS_KILLED,
        /**
         * The payment provider, for the next 1 to 4 charges, fails ({@code 500}), hangs (charges, then holds the
         * answer) or is slow (holds the request, then charges), for 1 to 12 s; its faults cleared 1 to 8 s later.
         */
        PROVIDER_FAULT
    }

    @TempDir
    Path dir;

    @Test
    void everyIntentTakesEffectOnceAndEveryRetryGetsTheSameAnswerUnderFaults() throws Exception {
        Duration duration = Duration.parse(property("retrysafe.faults.duration", "PT2M"));
        String seedProperty = property("retrysafe.faults.seed", "");
        long seed = seedProperty.isEmpty() ? new SecureRandom().nextLong() : Long.parseLong(seedProperty);
        say("seed " + seed + " (replay with -Dretrysafe.faults.seed=" + seed + "), duration " + duration);

        List<Fault> kinds = new ArrayList<>(List.of(Fault.values()));
        TestRedis.Server redis = null;
        try {
            // CI=true: a missing redis-server fails the test here instead.
            redis = TestRedis.startServer(Files.createDirectories(dir.resolve("redis")));
        } catch (TestAbortedException e) {
            kinds.remove(Fault.REDIS_KILLED);
            say("fault " + Fault.REDIS_KILLED + " skipped, and the fast filter off: " + e.getMessage());
        }

        Map<Fault, Integer> injected = new EnumMap<>(Fault.class);
        kinds.forEach(k -> injected.put(k, 0));
        List<Log> intents;
        FaultChecker checker = new FaultChecker();
        // The service's logs (one per incarnation) outlive the run, for what the summary cannot tell.
        Path logs = Files.createDirectories(Path.of("target", "faults-logs", "seed-" + seed));
        say("the service and the payment provider log to " + logs.toAbsolutePath());
        try (SuitePostgres pg = SuitePostgres.start(dir); TcpProxy proxy = new TcpProxy(pg.port());
                ServiceNode providerNode = ServiceNode.provider(logs, SuitePostgres.freePort())) {
            providerNode.start();
            ProviderAdmin provider = new ProviderAdmin(providerNode.url());
            List<String> args = serviceArgs(proxy.port(), provider);
            if (redis != null) {
                args.add("--retrysafe.fast-filter.enabled=true");
                args.add("--retrysafe.fast-filter.redis-uri=redis://127.0.0.1:" + redis.port());
            } else {
                args.add("--retrysafe.fast-filter.enabled=false");
            }
            List<ServiceNode> services = new ArrayList<>();
            try {
                for (int i = 0; i < INSTANCES; i++) {
                    ServiceNode service = new ServiceNode(logs, "service-" + i, SuitePostgres.freePort(), args);
                    services.add(service);
                    service.start(); // the first creates the tables
                }
                Map<String, Kind> accounts;
                try (Connection c = pg.connect()) {
                    accounts = openAccounts(c);
                }
                Workload workload = new Workload(new PaymentClient(services.stream().map(ServiceNode::port).toList(),
                        REQUEST_TIMEOUT), accounts, seed, DUPLICATE_RATE);
                workload.start();
                drive(seed, kinds, duration, injected, services, pg, proxy, redis, provider);
                say("faults stopped; the clients finish their intents (at most " + RECOVERY_MILLIS / 1000 + " s)");
                workload.finish(RECOVERY_MILLIS);
                intents = workload.logs();
                awaitCompleter(services, pg::connect);
                Map<String, Long> opening = new LinkedHashMap<>();
                accounts.keySet().forEach(a -> opening.put(a, OPENING_BALANCE));
                try (Connection db = pg.connect()) {
                    checker.check(db, intents, opening, provider.charges());
                }
            } finally {
                for (ServiceNode service : services) {
                    service.close();
                }
            }
        } finally {
            if (redis != null) {
                redis.close();
            }
        }
        summary(injected, intents, checker, leasesLost(logs));
        assertThat(intents).as("intents").hasSizeGreaterThan(CLIENTS);
        assertThat(checker.violations()).as("violations (seed " + seed + ")").isEmpty();
    }

    /**
     * The payments service (one instance: the fault is the database's) on a PostgreSQL primary with a synchronous
     * standby, under the same clients; every 6 to 12 s the primary crashes, the standby is promoted, the proxy in
     * front of the database moves to it (as a virtual address or a DNS name follows a promotion), and a new standby
     * is copied from the new primary. A synchronous standby has every commit the primary acknowledged, so the
     * invariants hold as on one server. {@code -Dretrysafe.faults.replication=async} runs it with asynchronous
     * replication instead, to measure what a promotion loses: it reports the violations and does not fail on them.
     */
    @Test
    void everyIntentTakesEffectOnceAcrossFailoversToASynchronousStandby() throws Exception {
        boolean synchronous = !property("retrysafe.faults.replication", "sync").equals("async");
        int failovers = Integer.parseInt(property("retrysafe.faults.failovers", "3"));
        long seed = new SecureRandom().nextLong();
        say("failover: seed " + seed + ", " + (synchronous ? "synchronous" : "asynchronous") + " replication, "
                + failovers + " failovers");
        Path logs = Files.createDirectories(Path.of("target", "faults-logs", "failover-" + seed));
        List<Log> intents;
        FaultChecker checker = new FaultChecker();
        Map<String, Integer> injected = new LinkedHashMap<>();
        try (ReplicatedPostgres pg = ReplicatedPostgres.start(synchronous);
                TcpProxy proxy = new TcpProxy(pg.primary().port());
                ServiceNode providerNode = ServiceNode.provider(logs, SuitePostgres.freePort())) {
            providerNode.start();
            ProviderAdmin provider = new ProviderAdmin(providerNode.url());
            List<String> args = serviceArgs(proxy.port(), provider);
            args.add("--retrysafe.fast-filter.enabled=false");
            intents = underFailovers(logs, args, pg::connect, provider, seed, failovers, checker, injected,
                    "POSTGRES_FAILOVER", rng -> {
                        ReplicatedPostgres.Node old = pg.primary();
                        ReplicatedPostgres.Node promoted = pg.failover();
                        proxy.retarget(promoted.port());
                        pg.copyOfPrimary(old);
                        await("the new standby streams").atMost(Duration.ofSeconds(60))
                                .pollInterval(Duration.ofMillis(200)).ignoreExceptions().until(pg::standbyStreaming);
                        return "primary now on port " + promoted.port();
                    });
        }
        summary(injected, intents, checker, leasesLost(logs));
        assertThat(intents).as("intents").hasSizeGreaterThan(CLIENTS);
        if (synchronous) {
            assertThat(checker.violations()).as("violations (seed " + seed + ")").isEmpty();
        }
    }

    /**
     * The payments service (transactional, on one PostgreSQL) with its fast filter on a Redis master with two
     * replicas under three Sentinels; every 6 to 12 s the master is killed and the Sentinels promote a replica, which
     * may lack the last answers and in-flight markers the master took. The filter only answers what the database
     * decided, and PostgreSQL decides every miss: the invariants hold as without the filter.
     */
    @Test
    void everyIntentTakesEffectOnceAcrossFailoversOfTheFastFiltersRedis() throws Exception {
        int failovers = Integer.parseInt(property("retrysafe.faults.failovers", "3"));
        long seed = new SecureRandom().nextLong();
        say("fast filter failover: seed " + seed + ", " + failovers + " failovers");
        Path logs = Files.createDirectories(Path.of("target", "faults-logs", "redis-failover-" + seed));
        List<Log> intents;
        FaultChecker checker = new FaultChecker();
        Map<String, Integer> injected = new LinkedHashMap<>();
        try (TestRedis.Replicated redis = TestRedis.startReplicated(Files.createDirectories(dir.resolve("redis")), 2,
                3, "fast-filter", SENTINEL_DOWN_AFTER);
                SuitePostgres pg = SuitePostgres.start(dir);
                ServiceNode providerNode = ServiceNode.provider(logs, SuitePostgres.freePort())) {
            providerNode.start();
            ProviderAdmin provider = new ProviderAdmin(providerNode.url());
            List<String> args = serviceArgs(pg.port(), provider);
            args.add("--retrysafe.fast-filter.enabled=true");
            args.add("--retrysafe.fast-filter.redis-uri=" + redis.uriString());
            intents = underFailovers(logs, args, pg::connect, provider, seed, failovers, checker, injected,
                    "REDIS_FAILOVER", rng -> {
                        Duration behind = Duration.ofMillis(200 + rng.nextInt(1_300));
                        return "replicas " + behind.toMillis() + " ms behind; master now on port "
                                + redis.failover(behind);
                    });
        }
        summary(injected, intents, checker, leasesLost(logs));
        assertThat(intents).as("intents").hasSizeGreaterThan(CLIENTS);
        assertThat(checker.violations()).as("violations (seed " + seed + ")").isEmpty();
    }

    /** One failover of a failover test; says what it did. */
    @FunctionalInterface
    private interface Failover {
        String run(Random rng) throws Exception;
    }

    /**
     * The failover tests' run: one instance of the service with {@code args}, the clients, a {@code failover} every
     * 6 to 12 s ({@code failovers} times, seeded by {@code seed}), then the clients' and the completer's end and the
     * checker on {@code db}. Returns the intents.
     */
    private static List<Log> underFailovers(Path logs, List<String> args, ConnectionSource db, ProviderAdmin provider,
            long seed, int failovers, FaultChecker checker, Map<String, Integer> injected, String name,
            Failover failover) throws Exception {
        Random rng = new Random(seed);
        try (ServiceNode service = new ServiceNode(logs, "service-0", SuitePostgres.freePort(), args)) {
            service.start();
            Map<String, Kind> accounts;
            try (Connection c = db.connect()) {
                accounts = openAccounts(c);
            }
            Workload workload = new Workload(new PaymentClient(service.port(), REQUEST_TIMEOUT), accounts, seed,
                    DUPLICATE_RATE);
            workload.start();
            long start = System.nanoTime();
            for (int i = 0; i < failovers; i++) {
                Thread.sleep(6_000 + rng.nextInt(6_000)); // the schedule itself, not a wait for a condition
                String detail = failover.run(rng);
                injected.merge(name, 1, Integer::sum);
                say(String.format("t=%6.1fs %-20s %s", (System.nanoTime() - start) / 1e9, name, detail));
            }
            workload.finish(RECOVERY_MILLIS);
            List<Log> intents = workload.logs();
            awaitCompleter(List.of(service), db);
            Map<String, Long> opening = new LinkedHashMap<>();
            accounts.keySet().forEach(a -> opening.put(a, OPENING_BALANCE));
            try (Connection c = db.connect()) {
                checker.check(c, intents, opening, provider.charges());
            }
            return intents;
        }
    }

    /** Where the checker and the completer's wait read the database: the current primary. */
    @FunctionalInterface
    private interface ConnectionSource {
        Connection connect() throws java.sql.SQLException;
    }

    /**
     * What every instance of the service runs with in the suite: its database through the proxy on {@code dbPort},
     * the provider, the completer, the suite's lease, and the extra arguments of
     * {@code -Dretrysafe.faults.service-args}.
     */
    private static List<String> serviceArgs(int dbPort, ProviderAdmin provider) {
        List<String> args = new ArrayList<>(List.of(
                "--spring.datasource.url=" + SuitePostgres.jdbcUrl(dbPort),
                "--spring.datasource.username=postgres", "--spring.datasource.password=",
                "--spring.datasource.hikari.maximum-pool-size=10",
                "--spring.datasource.hikari.connection-timeout=5000",
                "--spring.datasource.hikari.validation-timeout=2000",
                "--payments.provider.url=" + provider.url(),
                "--retrysafe.phases.completer.enabled=true",
                "--retrysafe.phases.completer.interval=" + COMPLETER_INTERVAL.toMillis() + "ms",
                "--retrysafe.phases.completer.idle-for=" + COMPLETER_IDLE_FOR.toMillis() + "ms",
                "--retrysafe.policy.lease-ttl=" + LEASE.toMillis() + "ms"));
        // Extra arguments, e.g. --retrysafe.enabled=false to see the checker catch an unprotected service.
        String extra = property("retrysafe.faults.service-args", "");
        if (!extra.isEmpty()) {
            args.addAll(List.of(extra.split("\\s+")));
        }
        return args;
    }

    /**
     * What a fault takes away, and so which faults may overlap: one lane per part of the system (the service's
     * instances; its database and the network to it; Redis and the payment provider), each injecting its faults one
     * after another while the other lanes inject theirs, as independent failures meet in production.
     */
    enum Lane {
        INSTANCES(Fault.SERVICE_KILL, Fault.OWNER_PAUSED, Fault.ROLLING_RESTART),
        DATABASE(Fault.POSTGRES_RESTART, Fault.POSTGRES_CRASH, Fault.CONNECTIONS_DROPPED, Fault.CONNECTIONS_STALLED),
        DEPENDENCIES(Fault.REDIS_KILLED, Fault.PROVIDER_FAULT);

        final List<Fault> faults;

        Lane(Fault... faults) {
            this.faults = List.of(faults);
        }
    }

    /**
     * The fault schedule: in each {@link Lane}, on a thread of its own with a random source seeded from {@code seed},
     * rounds in which every kind of the lane occurs once, in a seeded order, each after a seeded pause of 0.5 to 3 s;
     * a fault that takes something away gives it back before the lane's next. An instance is started only while no
     * fault keeps the database away, so that a start does not fail on the database the suite took away.
     */
    private static void drive(long seed, List<Fault> kinds, Duration duration, Map<Fault, Integer> injected,
            List<ServiceNode> services, SuitePostgres pg, TcpProxy proxy, TestRedis.Server redis,
            ProviderAdmin provider) throws Exception {
        long start = System.nanoTime();
        long end = start + duration.toNanos();
        ReadWriteLock database = new ReentrantReadWriteLock();
        List<Thread> lanes = new ArrayList<>();
        List<Throwable> failures = Collections.synchronizedList(new ArrayList<>());
        for (Lane lane : Lane.values()) {
            List<Fault> own = lane.faults.stream().filter(kinds::contains).toList();
            if (own.isEmpty()) {
                continue;
            }
            Random rng = new Random(seed + lane.ordinal());
            Thread t = new Thread(() -> {
                try {
                    List<Fault> round = new ArrayList<>();
                    while (true) {
                        long pause = 500 + rng.nextInt(2_500);
                        if (System.nanoTime() + pause * 1_000_000L - end > 0) {
                            return;
                        }
                        Thread.sleep(pause); // the schedule itself, not a wait for a condition
                        if (round.isEmpty()) {
                            round.addAll(own);
                            Collections.shuffle(round, rng);
                        }
                        Fault fault = round.remove(0);
                        String detail = inject(fault, rng, services, pg, proxy, redis, provider, database);
                        synchronized (injected) {
                            injected.merge(fault, 1, Integer::sum);
                        }
                        say(String.format("t=%6.1fs %-20s %s", (System.nanoTime() - start) / 1e9, fault, detail));
                    }
                } catch (Throwable e) {
                    failures.add(e);
                }
            }, "faults-" + lane.name().toLowerCase(Locale.ROOT));
            lanes.add(t);
            t.start();
        }
        for (Thread t : lanes) {
            t.join();
        }
        if (!failures.isEmpty()) {
            Exception e = new IllegalStateException("a fault lane failed", failures.get(0));
            failures.subList(1, failures.size()).forEach(e::addSuppressed);
            throw e;
        }
    }

    /** Injects {@code fault}, gives back what it took, and says what it did. */
    private static String inject(Fault fault, Random rng, List<ServiceNode> services, SuitePostgres pg,
            TcpProxy proxy, TestRedis.Server redis, ProviderAdmin provider, ReadWriteLock database) throws Exception {
        long length = 1_000 + rng.nextInt(7_000);
        return switch (fault) {
            case SERVICE_KILL -> {
                ServiceNode service = services.get(rng.nextInt(services.size()));
                service.kill();
                startWithDatabase(service, database);
                yield service.name() + ", pid now " + service.pid();
            }
            case OWNER_PAUSED -> {
                ServiceNode service = services.get(rng.nextInt(services.size()));
                long frozen = LEASE.toMillis() + length / 2;
                service.pause();
                Thread.sleep(frozen); // the fault itself: the lease must run out while the owner is frozen
                service.resume();
                yield service.name() + " frozen " + frozen + " ms";
            }
            case ROLLING_RESTART -> {
                List<String> exits = new ArrayList<>();
                for (ServiceNode service : services) {
                    exits.add(service.name() + " exit " + service.terminate(Duration.ofSeconds(60)));
                    startWithDatabase(service, database);
                }
                yield String.join(", ", exits);
            }
            case POSTGRES_RESTART -> withoutDatabase(database, () -> {
                pg.restart();
                return "";
            });
            case POSTGRES_CRASH -> withoutDatabase(database, () -> {
                pg.crashAndRestart();
                return "";
            });
            case CONNECTIONS_DROPPED -> "reset " + proxy.dropAll() + " connection(s)";
            case CONNECTIONS_STALLED -> withoutDatabase(database, () -> {
                long stall = length - 500;
                proxy.stall(stall);
                Thread.sleep(stall);
                return stall + " ms";
            });
            case REDIS_KILLED -> {
                redis.kill();
                Thread.sleep(length);
                redis.restart();
                yield "down " + length + " ms";
            }
            case PROVIDER_FAULT -> {
                String mode = List.of("fail", "hang", "slow").get(rng.nextInt(3));
                int count = 1 + rng.nextInt(4);
                long seconds = 1 + rng.nextInt(12);
                provider.fault(mode, count, seconds, null);
                Thread.sleep(length);
                provider.clearFaults();
                yield mode + " x" + count + (mode.equals("fail") ? "" : " for " + seconds + " s")
                        + ", cleared after " + length + " ms";
            }
        };
    }

    /** A fault that keeps the database away: no instance starts meanwhile. */
    private static String withoutDatabase(ReadWriteLock database, Callable<String> fault)
            throws Exception {
        database.writeLock().lock();
        try {
            return fault.call();
        } finally {
            database.writeLock().unlock();
        }
    }

    /** Starts {@code service} once no fault keeps the database away, and none starts while it starts. */
    private static void startWithDatabase(ServiceNode service, ReadWriteLock database) throws Exception {
        database.readLock().lock();
        try {
            service.start();
        } finally {
            database.readLock().unlock();
        }
    }

    /** One account per client, each opened with {@link #OPENING_BALANCE}, and what its client sends. */
    private static Map<String, Kind> openAccounts(Connection c) throws Exception {
        Map<String, Kind> accounts = new LinkedHashMap<>();
        try (PreparedStatement ps = c.prepareStatement(
                "INSERT INTO account (id, label, balance) VALUES (?, ?, ?)")) {
            for (int i = 0; i < CLIENTS + CHECKOUT_CLIENTS; i++) {
                Kind kind = i < CLIENTS ? Kind.PAYMENT : Kind.CHECKOUT;
                String id = (kind == Kind.PAYMENT ? "faults-" : "faults-checkout-") + i;
                ps.setString(1, id);
                ps.setString(2, "Fault injection client " + i + " (" + kind.path + ")");
                ps.setLong(3, OPENING_BALANCE);
                ps.executeUpdate();
                accounts.put(id, kind);
            }
        }
        return accounts;
    }

    /**
     * Once the clients are done, waits (at most {@link #COMPLETER_BOUND}) until the completer has finished every
     * checkout they left: its backlog is 0, no hold is {@code HELD} and no phased operation is unfinished. It does
     * not fail: what is left then is the checker's to report.
     */
    private static void awaitCompleter(List<ServiceNode> services, ConnectionSource pg) {
        HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
        long start = System.nanoTime();
        long[] last = {-1, -1, -1};
        try {
            await("the completer finishes every checkout").atMost(COMPLETER_BOUND).pollInterval(Duration.ofSeconds(1))
                    .ignoreExceptions().until(() -> {
                        last[0] = backlog(http, services);
                        try (Connection db = pg.connect()) {
                            last[1] = FaultChecker.heldHolds(db);
                            last[2] = FaultChecker.unfinishedPhases(db);
                        }
                        return last[0] == 0 && last[1] == 0 && last[2] == 0;
                    });
            say(String.format("the completer finished every checkout in %.1f s", (System.nanoTime() - start) / 1e9));
        } catch (ConditionTimeoutException e) {
            say("the completer did not finish within " + COMPLETER_BOUND + ": backlog " + last[0] + ", holds HELD "
                    + last[1] + ", phased operations unfinished " + last[2]);
        }
    }

    /**
     * The completer's backlog after its last run, from {@code /actuator/idempotency}: 0 once an instance's completer
     * has run and found none, -1 while none has, 0 without a completer. One completer runs at a time across the
     * instances, so the others may not have run yet.
     */
    private static long backlog(HttpClient http, List<ServiceNode> services) throws Exception {
        long backlog = -1;
        for (ServiceNode service : services) {
            long b = backlog(http, service);
            if (b > 0) {
                return b;
            }
            backlog = Math.max(backlog, b);
        }
        return backlog;
    }

    private static long backlog(HttpClient http, ServiceNode service) throws Exception {
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(service.url() + "/actuator/idempotency"))
                .timeout(Duration.ofSeconds(5)).GET().build(), HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() == 404 || !r.body().contains("\"completer\"")) {
            return 0; // RetrySafe off: no phased engine, no completer, nothing it could leave
        }
        String backlog = FlatJson.member(r.body(), "backlog");
        return backlog == null ? -1 : Long.parseLong(backlog);
    }

    /**
     * How many times an owner found its key taken over when it went to renew the lease (after a pause or a stall
     * past the lease), from the instances' logs: evidence that fencing was exercised, not an invariant.
     */
    private static long leasesLost(Path logs) throws java.io.IOException {
        long n = 0;
        try (java.util.stream.Stream<Path> files = Files.list(logs)) {
            List<Path> instanceLogs = files.filter(f -> f.getFileName().toString().matches("service-\\d+-\\d+\\.log"))
                    .toList();
            for (Path log : instanceLogs) {
                try (java.util.stream.Stream<String> lines = Files.lines(log)) {
                    n += lines.filter(l -> l.contains("is no longer held by this attempt")).count();
                }
            }
        }
        return n;
    }

    private static void summary(Map<?, Integer> injected, List<Log> logs, FaultChecker checker, long leasesLost) {
        long requests = logs.stream().mapToLong(l -> l.answers().size()).sum();
        long duplicates = logs.stream().mapToLong(l -> l.answers().stream().filter(a -> a.attempt() == 0).count())
                .sum();
        long replays = logs.stream().mapToLong(l -> l.answers().stream().filter(PaymentClient.Answer::replayed)
                .count()).sum();
        StringBuilder b = new StringBuilder("\n[faults] ---- summary ----\n");
        b.append("[faults] faults injected: ").append(injected.values().stream().mapToInt(Integer::intValue).sum())
                .append(' ').append(injected).append('\n');
        b.append("[faults] intents: ").append(logs.size()).append(", requests: ").append(requests)
                .append(", retries: ").append(requests - logs.size() - duplicates).append(", duplicates in flight: ")
                .append(duplicates).append(", replayed answers: ").append(replays).append('\n');
        b.append("[faults] answers by status: ").append(FaultChecker.byStatus(logs)).append('\n');
        b.append("[faults] refusals by problem type: ").append(FaultChecker.refusals(logs)).append('\n');
        b.append("[faults] checkouts: ").append(checker.checkouts()).append('\n');
        b.append("[faults] owners that found their key taken over (instances' logs): ").append(leasesLost).append('\n');
        b.append("[faults] violations: ").append(checker.total()).append('\n');
        checker.violations().forEach(v -> b.append("[faults]   ").append(v).append('\n'));
        System.out.println(b);
    }

    static String property(String name, String defaultValue) {
        String v = System.getProperty(name);
        return v == null || v.isBlank() ? defaultValue : v.strip();
    }

    private static void say(String line) {
        System.out.println("[faults] " + line);
    }
}
