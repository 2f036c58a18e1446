package io.retrysafe.releasecheck;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** What ApiSignatures records of classes compiled from small sources, and what ApiDiff reports of a change. */
class ApiSignaturesTest {
    private static final String STORE = """
            package fixture.api;

            import java.io.IOException;
            import java.util.List;

            public class Store<K extends Comparable<K>> implements AutoCloseable {
                public static final String NAME = "store";
                protected int size;

                Store() {
                }

                public Store(K first) throws IOException {
                }

                @SafeVarargs
                public final <V> List<? super V> find(K key, V... values) {
                    return null;
                }

                private void secret() {
                }

                @Override
                public void close() {
                }

                public sealed interface Result permits Hit, Miss {
                }

                public record Hit(String value) implements Result {
                }

                public static final class Miss implements Result {
                    private Miss() {
                    }

                    // No class can extend Miss, so no one outside the package can call this.
                    protected void unreachable() {
                    }
                }

                public abstract static sealed class Contract permits OpenContract {
                    protected abstract void store();
                }

                // Open to subclasses again: they reach Contract's protected members too.
                public abstract static non-sealed class OpenContract extends Contract {
                }

                static class Hidden {
                    public void notApi() {
                    }
                }
            }
            """;

    @TempDir
    Path work;

    @Test
    void recordsPublicTypesAndTheirVisibleMembersWithGenericSignatures() throws IOException {
        Path classes = compile("classes", Map.of(
                "fixture/api/Store.java", STORE,
                "fixture/api/Packaged.java", "package fixture.api; class Packaged { public void notApi() { } }",
                "fixture/api/internal/Helper.java", "package fixture.api.internal; public class Helper { }"));

        ApiSignatures.Api api = ApiSignatures.read(classes);

        assertThat(api.lines()).containsExactly(
                "fixture.api.Store: public class Store<K extends java.lang.Comparable<K>> implements java.lang.AutoCloseable",
                "fixture.api.Store: public static final java.lang.String NAME = \"store\"",
                "fixture.api.Store: public Store(K) throws java.io.IOException",
                "fixture.api.Store: public void close()",
                "fixture.api.Store: public final <V> java.util.List<? super V> find(K, V...)",
                "fixture.api.Store: protected int size",
                "fixture.api.Store.Contract: public abstract static sealed class Contract permits "
                        + "fixture.api.Store.OpenContract",
                "fixture.api.Store.Contract: public Contract()",
                "fixture.api.Store.Contract: protected abstract void store()",
                "fixture.api.Store.Hit: public static final record Hit implements fixture.api.Store.Result",
                "fixture.api.Store.Hit: public Hit(java.lang.String)",
                "fixture.api.Store.Hit: public final boolean equals(java.lang.Object)",
                "fixture.api.Store.Hit: public final int hashCode()",
                "fixture.api.Store.Hit: public final java.lang.String toString()",
                "fixture.api.Store.Hit: public java.lang.String value()",
                "fixture.api.Store.Miss: public static final class Miss implements fixture.api.Store.Result",
                "fixture.api.Store.OpenContract: public abstract static class OpenContract extends "
                        + "fixture.api.Store.Contract",
                "fixture.api.Store.OpenContract: public OpenContract()",
                "fixture.api.Store.Result: public static sealed interface Result permits fixture.api.Store.Hit, "
                        + "fixture.api.Store.Miss");
        assertThat(api.apiTypes()).as("public top-level types in API packages").isEqualTo(1);
        assertThat(api.allTypes()).as("public top-level types, internal packages included").isEqualTo(2);
    }

    @Test
    void aRemovedOrChangedMemberIsReportedAsItsLinesRemovedAndAdded() throws IOException {
        List<String> before = ApiSignatures.read(compile("before", Map.of("fixture/api/Client.java", """
                package fixture.api;
                public class Client {
                    public String send(String body) { return body; }
                    public void close() { }
                }
                """))).lines();
        List<String> after = ApiSignatures.read(compile("after", Map.of("fixture/api/Client.java", """
                package fixture.api;
                public class Client {
                    public String send(byte[] body) throws java.io.IOException { return null; }
                }
                """))).lines();

        assertThat(ApiDiff.describe(before, after)).isEqualTo("""
                - fixture.api.Client: public void close()
                - fixture.api.Client: public java.lang.String send(java.lang.String)
                + fixture.api.Client: public java.lang.String send(byte[]) throws java.io.IOException
                """);
        assertThat(ApiDiff.describe(before, new ArrayList<>(before))).isEmpty();
    }

    @Test
    void thePublicMembersOfASuperclassThatIsNotApiAreMembersOfItsPublicSubclass() throws IOException {
        Path classes = compile("inherited", Map.of("fixture/api/ClientBuilder.java", """
                package fixture.api;

                public final class ClientBuilder extends Settings<ClientBuilder> {
                    @Override
                    ClientBuilder self() {
                        return this;
                    }

                    @Override
                    public ClientBuilder size(int size) {
                        return this;
                    }

                    public Object build() {
                        return null;
                    }
                }

                abstract class Settings<B extends Settings<B>> {
                    public B name(String name) {
                        return self();
                    }

                    public B size(int size) {
                        return self();
                    }

                    abstract B self();
                }
                """,
                "fixture/api/internal/Base.java", """
                package fixture.api.internal;

                public abstract class Base {
                    public static final int LIMIT = 3;

                    protected abstract void run();
                }
                """,
                "fixture/api/Task.java", """
                package fixture.api;

                public abstract class Task extends fixture.api.internal.Base {
                }
                """));

        assertThat(ApiSignatures.read(classes).lines()).containsExactly(
                "fixture.api.ClientBuilder: public final class ClientBuilder extends "
                        + "fixture.api.Settings<fixture.api.ClientBuilder>",
                "fixture.api.ClientBuilder: public ClientBuilder()",
                "fixture.api.ClientBuilder: public java.lang.Object build()",
                "fixture.api.ClientBuilder: public fixture.api.ClientBuilder name(java.lang.String)",
                "fixture.api.ClientBuilder: public fixture.api.ClientBuilder size(int)",
                "fixture.api.Task: public abstract class Task extends fixture.api.internal.Base",
                "fixture.api.Task: public static final int LIMIT = 3",
                "fixture.api.Task: public Task()",
                "fixture.api.Task: protected abstract void run()");
    }

    @Test
    void internalPackagesAndTheSqlStoresSharedPackageAreNotApi() {
        assertThat(ApiSignatures.isApiPackage("io.retrysafe")).isTrue();
        assertThat(ApiSignatures.isApiPackage("io.retrysafe.spi")).isTrue();
        assertThat(ApiSignatures.isApiPackage("io.retrysafe.jdbc")).isTrue();
        assertThat(ApiSignatures.isApiPackage("io.retrysafe.internal")).isFalse();
        assertThat(ApiSignatures.isApiPackage("io.retrysafe.jdbc.internal")).isFalse();
        assertThat(ApiSignatures.isApiPackage("io.retrysafe.redis.internal.lua")).isFalse();
        assertThat(ApiSignatures.isApiPackage("io.retrysafe.sql")).isFalse();
    }

    /** Compiles the sources, by path, into a classes directory of their own. */
    private Path compile(String name, Map<String, String> sources) throws IOException {
        Path source = work.resolve(name + "-sources");
        Path classes = work.resolve(name);
        List<String> arguments = new ArrayList<>(List.of("-d", classes.toString()));
        for (var file : sources.entrySet()) {
            Path path = source.resolve(file.getKey());
            Files.createDirectories(path.getParent());
            Files.writeString(path, file.getValue());
            arguments.add(path.toString());
        }
        assertThat(ToolProvider.getSystemJavaCompiler().run(null, null, null, arguments.toArray(String[]::new)))
                .as("javac %s", arguments).isZero();
        return classes;
    }
}
