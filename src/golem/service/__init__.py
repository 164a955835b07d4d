"""golem.service: the server (HTTP API, job queue, dashboard, triggers). A client's engine
on a server (``RemoteEngine``, and ``make_engine(config)`` that picks it when ``[remote]
url`` is set) is ``golem.sandbox``'s."""

__all__: list[str] = []
