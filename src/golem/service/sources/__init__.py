"""Chat and tracker sources of runs (Slack, Linear): a run asked for in a thread keeps one status
message there up to date and reports its end there once; what a thread shows of a run; the
secrets its messages are masked with; what a workspace said of its people (``RecordCache``,
for who may ask); the requests kept pending until a thread's run ends
(``PendingStarts``, for the forges' triggers too). The thread each run was asked in is the store's
(``ThreadRecord``, kept with the run)."""

from golem.service.sources.keeper import Reporter, StatusKeeper
from golem.service.sources.pending import PendingStarts
from golem.service.sources.progress import Check, RunProgress, progress_of
from golem.service.sources.records import RecordCache
from golem.service.sources.secrets import known_secrets
from golem.service.sources.submit import submit_from_source

__all__ = [
    "Check",
    "PendingStarts",
    "RecordCache",
    "Reporter",
    "RunProgress",
    "StatusKeeper",
    "known_secrets",
    "progress_of",
    "submit_from_source",
]
