"""golem.sandbox: isolated boxes where every command of a run executes.

async with Engine(config) as engine:
    async with engine.session(engine.spec(memory="1g")) as box:
        result = await box.execute("pytest -q")
"""

from golem.core.events import ErrorEvent, ExecEvent, ExitEvent, OutputEvent, ResourceUsage
from golem.core.spec import BoxSpec
from golem.sandbox.box import Box, Interaction, Terminal
from golem.sandbox.contracts import Backend, StartedBox
from golem.sandbox.engine import Engine
from golem.sandbox.masking import SecretMasker
from golem.sandbox.models import (
    BackgroundProcess,
    BoxInfo,
    ExecRequest,
    ExecResult,
    ProcessOutput,
    Runtime,
)
from golem.sandbox.sync import SyncBox, SyncEngine

__all__ = [
    "Backend",
    "BackgroundProcess",
    "Box",
    "BoxInfo",
    "BoxSpec",
    "Engine",
    "ErrorEvent",
    "ExecEvent",
    "ExecRequest",
    "ExecResult",
    "ExitEvent",
    "Interaction",
    "OutputEvent",
    "ProcessOutput",
    "ResourceUsage",
    "Runtime",
    "SecretMasker",
    "StartedBox",
    "SyncBox",
    "SyncEngine",
    "Terminal",
]
