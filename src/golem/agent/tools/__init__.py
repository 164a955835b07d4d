"""golem.agent.tools: the coding tools an agent calls; each runs in the session's box.

tools = make_tools(["readonly"])  # or "all", "files", ["read", "edit", "bash", "finish"]
result = await tools[0].run(box, {"path": "README.md"})

Problems the model can fix (bad arguments, a missing file, an ambiguous edit) come back as
a ``ToolResult`` with ``is_error`` set, never as an exception. See docs/tools.md.
"""

from golem.agent.tools.base import BoxTool, parameters_of
from golem.agent.tools.bash import BashArguments, BashTool
from golem.agent.tools.edit import EditArguments, EditTool
from golem.agent.tools.finish import FinishArguments, FinishTool
from golem.agent.tools.ls import LsArguments, LsTool
from golem.agent.tools.read import ReadArguments, ReadTool
from golem.agent.tools.registry import TOOLS, TOOLSETS, make_tools
from golem.agent.tools.reply import ReplyArguments, ReplyTool
from golem.agent.tools.search import GlobArguments, GlobTool, GrepArguments, GrepTool
from golem.agent.tools.write import WriteArguments, WriteTool

__all__ = [
    "TOOLS",
    "TOOLSETS",
    "BashArguments",
    "BashTool",
    "BoxTool",
    "EditArguments",
    "EditTool",
    "FinishArguments",
    "FinishTool",
    "GlobArguments",
    "GlobTool",
    "GrepArguments",
    "GrepTool",
    "LsArguments",
    "LsTool",
    "ReadArguments",
    "ReadTool",
    "ReplyArguments",
    "ReplyTool",
    "WriteArguments",
    "WriteTool",
    "make_tools",
    "parameters_of",
]
