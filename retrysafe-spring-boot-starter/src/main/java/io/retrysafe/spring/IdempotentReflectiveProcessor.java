package io.retrysafe.spring;

import java.lang.reflect.Method;
import java.lang.reflect.Type;
import org.springframework.aot.hint.BindingReflectionHintsRegistrar;
import org.springframework.aot.hint.ReflectionHints;
import org.springframework.aot.hint.annotation.SimpleReflectiveProcessor;

/**
 * The reflection an {@link Idempotent} method needs at run time, for AOT processing and native images:
 * the method itself (its annotation is read on every call), and JSON binding of its parameters
 * (fingerprinted as JSON, and read by the key's SpEL) and of its return type (stored as JSON and read
 * back on a replay).
 */
class IdempotentReflectiveProcessor extends SimpleReflectiveProcessor {
    private final BindingReflectionHintsRegistrar binding = new BindingReflectionHintsRegistrar();

    @Override
    protected void registerMethodHint(ReflectionHints hints, Method method) {
        super.registerMethodHint(hints, method);
        for (Type parameter : method.getGenericParameterTypes()) {
            binding.registerReflectionHints(hints, parameter);
        }
        binding.registerReflectionHints(hints, method.getGenericReturnType());
    }
}
