"""golem.service: the store (SQLite or PostgreSQL), and later the HTTP API, job queue,
dashboard and webhooks."""
