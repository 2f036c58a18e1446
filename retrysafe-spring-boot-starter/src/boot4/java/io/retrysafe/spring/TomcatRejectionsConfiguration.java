package io.retrysafe.spring;

import io.retrysafe.servlet.RejectedRequests;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.tomcat.ConfigurableTomcatWebServerFactory;
import org.springframework.boot.web.server.WebServerFactoryCustomizer;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * Tomcat: what its parser refuses on protected routes is the filter's problem, not its HTML page
 * ({@link ProblemErrorReportValve}). Spring Boot 4 names Tomcat's server factory in its own package.
 */
@Configuration(proxyBeanMethods = false)
@ConditionalOnClass(name = {"org.apache.catalina.valves.ErrorReportValve", "org.springframework.boot.tomcat.ConfigurableTomcatWebServerFactory"})
class TomcatRejectionsConfiguration {
    @Bean
    WebServerFactoryCustomizer<ConfigurableTomcatWebServerFactory> retrySafeTomcatRejections(
            RejectedRequests rejected) {
        return factory -> factory.addContextCustomizers(context -> ProblemErrorReportValve.install(context, rejected));
    }
}
