"""Django's SQLite backend, with the database file private from its first byte (mode 0600)."""
