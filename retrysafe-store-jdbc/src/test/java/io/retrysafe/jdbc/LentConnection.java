package io.retrysafe.jdbc;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;

/**
 * One connection lent again and again, as a pool lends it, but handed back as it is: closing what was lent leaves it
 * open, and nothing resets it, so that a test sees what a call left on it.
 */
final class LentConnection {
    private LentConnection() {
    }

    static Connection of(Connection physical) {
        return (Connection) Proxy.newProxyInstance(Connection.class.getClassLoader(), new Class<?>[] {Connection.class},
                (proxy, method, args) -> {
                    if (method.getName().equals("close")) {
                        return null;
                    }
                    try {
                        return method.invoke(physical, args);
                    } catch (InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
    }
}
