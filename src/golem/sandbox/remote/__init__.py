"""A golem server's engine, seen from a client: ``RemoteEngine`` and its boxes
(``RemoteBox``, interactive calls and ptys), the call channel's client end and its wire
frames (``frames``, which the server's end uses too), and ``make_engine(config)``, the one
place an engine is chosen. Callers import these names from ``golem.sandbox``."""
