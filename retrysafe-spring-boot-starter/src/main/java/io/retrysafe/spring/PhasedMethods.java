package io.retrysafe.spring;

import io.retrysafe.PhasedOperation;
import io.retrysafe.ResponseCodec;
import io.retrysafe.StepCodec;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Type;
import java.sql.Connection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;
import java.util.function.Supplier;
import org.springframework.aop.framework.AopProxyUtils;
import org.springframework.beans.factory.BeanFactory;

/**
 * {@link Idempotent} methods that take {@link io.retrysafe.Phases}: each is a phased operation named after the
 * method, whose input is its arguments as JSON (the {@code Phases} argument aside). The completer finds them
 * here, and runs one forward by calling the method on its bean's target (not its proxy, which would claim the
 * key again) with the saved arguments.
 */
final class PhasedMethods {
    private final MethodJson json;
    private final Map<String, PhasedOperation<Object[], Object, Connection>> operations = new ConcurrentHashMap<>();
    /** Each method's argument and answer codecs, made once: a call's operation only brings its own forward path. */
    private final Map<Method, Codecs> codecs = new ConcurrentHashMap<>();

    private record Codecs(StepCodec<Object[]> arguments, ResponseCodec<Object> answer) {
    }

    PhasedMethods(MethodJson json) {
        this.json = json;
    }

    /** Registers {@code settings}, a phased method of bean {@code beanName}, for the completer. */
    void register(IdempotentMethod settings, String beanName, BeanFactory beans) {
        Supplier<Object> target = () -> {
            Object bean = beans.getBean(beanName);
            Object unwrapped = AopProxyUtils.getSingletonTarget(bean);
            return unwrapped != null ? unwrapped : bean;
        };
        Method method = settings.method();
        method.setAccessible(true);
        PhasedOperation<Object[], Object, Connection> operation = operation(settings, (args, phases) -> {
            Object[] call = args.clone();
            call[settings.phasesIndex()] = phases;
            try {
                return method.invoke(target.get(), call);
            } catch (InvocationTargetException e) {
                Throwable thrown = e.getCause();
                if (settings.replays(thrown)) {
                    return new IdempotentInterceptor.Thrown(thrown);
                }
                if (thrown instanceof Exception ex) {
                    throw ex;
                }
                throw (Error) thrown;
            }
        });
        if (operations.putIfAbsent(operation.name(), operation) != null) {
            throw new IllegalStateException("@Idempotent on " + settings + ": another phased method has operation "
                    + settings.operation() + "; give each its own with operation = \"…\"");
        }
    }

    /** Every phased method registered, as the completer runs them. */
    List<PhasedOperation<Object[], Object, Connection>> operations() {
        return List.copyOf(operations.values());
    }

    /** The phased operation of {@code settings} with {@code forward}: a call's own, or the completer's. */
    PhasedOperation<Object[], Object, Connection> operation(IdempotentMethod settings,
            PhasedOperation.Body<Object[], Object, Connection> forward) {
        Codecs c = codecs.computeIfAbsent(settings.method(), m -> new Codecs(arguments(settings),
                IdempotentInterceptor.codec(json, settings, m.getGenericReturnType())));
        return PhasedOperation.of(settings.phasedName(), c.arguments(), c.answer(), forward);
    }

    /** The arguments, each as the JSON of its parameter's type, length-prefixed; the {@code Phases} slot is left null. */
    private StepCodec<Object[]> arguments(IdempotentMethod settings) {
        Type[] types = settings.method().getGenericParameterTypes();
        int skip = settings.phasesIndex();
        List<Function<byte[], Object>> readers = new java.util.ArrayList<>();
        for (int i = 0; i < types.length; i++) {
            readers.add(i == skip ? null : json.reader(types[i]));
        }
        return new StepCodec<>() {
            @Override
            public byte[] encode(Object[] args) {
                ByteArrayOutputStream bytes = new ByteArrayOutputStream();
                try (DataOutputStream out = new DataOutputStream(bytes)) {
                    for (int i = 0; i < args.length; i++) {
                        if (i != skip) {
                            byte[] arg = json.write(args[i]);
                            out.writeInt(arg.length);
                            out.write(arg);
                        }
                    }
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
                return bytes.toByteArray();
            }

            @Override
            public Object[] decode(byte[] saved) {
                Object[] args = new Object[types.length];
                try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(saved))) {
                    for (int i = 0; i < types.length; i++) {
                        if (i != skip) {
                            args[i] = readers.get(i).apply(in.readNBytes(in.readInt()));
                        }
                    }
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
                return args;
            }
        };
    }
}
