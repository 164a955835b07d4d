"""The HTTP API's routers (v1): sessions, runs, pull requests, keys, webhooks."""
