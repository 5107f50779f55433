"""Django's PostgreSQL backend, with every wait for an answer bounded by the site itself."""
