package io.retrysafe.quarkus.deployment;

import io.agroal.api.AgroalDataSource;
import io.quarkus.arc.deployment.AdditionalBeanBuildItem;
import io.quarkus.arc.deployment.UnremovableBeanBuildItem;
import io.quarkus.deployment.annotations.BuildProducer;
import io.quarkus.deployment.annotations.BuildStep;
import io.quarkus.deployment.builditem.AdditionalIndexedClassesBuildItem;
import io.quarkus.deployment.builditem.FeatureBuildItem;
import io.quarkus.deployment.builditem.nativeimage.NativeImageResourceBuildItem;
import io.quarkus.deployment.builditem.nativeimage.ReflectiveClassBuildItem;
import io.retrysafe.quarkus.RetrySafeRegistration;

/**
 * Build steps of the RetrySafe extension: the beans, the Jakarta REST feature Quarkus REST finds in the index, and
 * what a native image needs. Quarkus runs them; applications never call them.
 */
public class RetrySafeProcessor {
    private static final String FEATURE = "retrysafe";
    /** Package-private in the runtime module: named, not referenced. */
    private static final String PRODUCER = "io.retrysafe.quarkus.RetrySafeProducer";

    /** The shipped DDL that {@code retrysafe.store.initialize-schema} runs, read as resources. */
    private static final String[] SCHEMAS = {"io/retrysafe/jdbc/schema-postgresql.sql",
        "io/retrysafe/jdbc/schema-postgresql-partitioned.sql", "io/retrysafe/jdbc/schema-mariadb.sql"};

    @BuildStep
    FeatureBuildItem feature() {
        return new FeatureBuildItem(FEATURE);
    }

    @BuildStep
    void beans(BuildProducer<AdditionalBeanBuildItem> beans, BuildProducer<UnremovableBeanBuildItem> unremovable) {
        beans.produce(AdditionalBeanBuildItem.builder().addBeanClasses(PRODUCER)
                .setUnremovable().build());
        // Looked up by name at run time, so no injection point keeps them.
        unremovable.produce(UnremovableBeanBuildItem.beanTypes(AgroalDataSource.class));
    }

    /** Quarkus REST registers the providers of its index: the feature's class must be in it. */
    @BuildStep
    AdditionalIndexedClassesBuildItem registration() {
        return new AdditionalIndexedClassesBuildItem(RetrySafeRegistration.class.getName());
    }

    @BuildStep
    void nativeImage(BuildProducer<NativeImageResourceBuildItem> resources,
            BuildProducer<ReflectiveClassBuildItem> reflective) {
        resources.produce(new NativeImageResourceBuildItem(SCHEMAS));
        // The feature is instantiated by Quarkus REST, which finds its constructor reflectively in a native image.
        reflective.produce(ReflectiveClassBuildItem.builder(RetrySafeRegistration.class).constructors().build());
    }
}
