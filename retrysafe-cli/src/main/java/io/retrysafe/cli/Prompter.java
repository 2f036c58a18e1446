package io.retrysafe.cli;

/** Asks the operator a question on the terminal; replaceable in tests. */
interface Prompter {

    /** Whether there is a terminal to ask on. */
    boolean available();

    /** The answer, or null at end of input. */
    String readLine(String prompt);

    /** The JVM's console; not available when input or output is redirected. */
    static Prompter console() {
        return new Prompter() {
            @Override
            public boolean available() {
                return System.console() != null;
            }

            @Override
            public String readLine(String prompt) {
                java.io.Console console = System.console();
                return console == null ? null : console.readLine("%s", prompt);
            }
        };
    }

    /** No terminal: confirmations are refused. */
    Prompter NONE = new Prompter() {
        @Override
        public boolean available() {
            return false;
        }

        @Override
        public String readLine(String prompt) {
            return null;
        }
    };
}
