-- An application's own first migration, beside which the shipped record table is migrated.
CREATE TABLE orders (
    id    BIGINT PRIMARY KEY,
    total DECIMAL(12, 2) NOT NULL
);
