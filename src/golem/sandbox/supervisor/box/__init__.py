"""The in-box supervisor: the first process of every box (stdlib only, Python >= 3.8).

Each module here has one job; ``golem.sandbox.supervisor.supervisor_source`` joins them
into the one source string a box's python3 runs (``bootstrap`` registers them as the
package ``golem_supervisor``), so they import each other with relative imports, as they
do on the host, where ``framing`` is shared with the client. Nothing here may import
outside the stdlib, and every module must parse as Python 3.8.
"""
