package io.retrysafe.servlet;

import jakarta.servlet.Filter;
import jakarta.servlet.Servlet;
import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.function.Consumer;
import org.apache.catalina.Context;
import org.apache.catalina.LifecycleException;
import org.apache.catalina.Wrapper;
import org.apache.catalina.connector.Connector;
import org.apache.catalina.startup.Tomcat;
import org.apache.tomcat.util.descriptor.web.FilterDef;
import org.apache.tomcat.util.descriptor.web.FilterMap;

/** A real Tomcat on a free loopback port, with the filters and servlets a test registers. */
final class EmbeddedTomcat implements AutoCloseable {
    private final Tomcat tomcat;
    private final int port;

    private EmbeddedTomcat(Tomcat tomcat, int port) {
        this.tomcat = tomcat;
        this.port = port;
    }

    static EmbeddedTomcat start(Path baseDir, Consumer<Context> setup) throws IOException, LifecycleException {
        Tomcat tomcat = new Tomcat();
        tomcat.setBaseDir(baseDir.toAbsolutePath().toString());
        tomcat.setPort(0);
        Connector connector = tomcat.getConnector();
        connector.setProperty("address", "127.0.0.1");
        Path docBase = Files.createDirectories(baseDir.resolve("docs"));
        Context context = tomcat.addContext("", docBase.toAbsolutePath().toString());
        setup.accept(context);
        tomcat.start();
        return new EmbeddedTomcat(tomcat, connector.getLocalPort());
    }

    /** Filters run in the order they are added. */
    static void filter(Context context, String name, Filter filter, String urlPattern) {
        FilterDef def = new FilterDef();
        def.setFilterName(name);
        def.setFilter(filter);
        context.addFilterDef(def);
        FilterMap map = new FilterMap();
        map.setFilterName(name);
        map.addURLPattern(urlPattern);
        context.addFilterMap(map);
    }

    /** As an application registers the filter for asynchronous handlers: async supported, on REQUEST and ASYNC dispatches. */
    static void asyncFilter(Context context, String name, Filter filter, String urlPattern) {
        FilterDef def = new FilterDef();
        def.setFilterName(name);
        def.setFilter(filter);
        def.setAsyncSupported("true");
        context.addFilterDef(def);
        FilterMap map = new FilterMap();
        map.setFilterName(name);
        map.addURLPattern(urlPattern);
        map.setDispatcher("REQUEST");
        map.setDispatcher("ASYNC");
        context.addFilterMap(map);
    }

    static Wrapper servlet(Context context, String name, Servlet servlet, String urlPattern) {
        Wrapper wrapper = Tomcat.addServlet(context, name, servlet);
        context.addServletMappingDecoded(urlPattern, name);
        return wrapper;
    }

    static void asyncServlet(Context context, String name, Servlet servlet, String urlPattern) {
        Tomcat.addServlet(context, name, servlet).setAsyncSupported(true);
        context.addServletMappingDecoded(urlPattern, name);
    }

    URI uri(String pathAndQuery) {
        return URI.create("http://127.0.0.1:" + port + pathAndQuery);
    }

    @Override
    public void close() throws LifecycleException {
        tomcat.stop();
        tomcat.destroy();
    }
}
