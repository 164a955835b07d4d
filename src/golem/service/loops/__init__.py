"""Goal loops: runs that repeat on one branch, each starting from the last one's result,
until a command run in the box says the goal holds, the budget is spent, or two iterations
in a row make no progress on it."""

from golem.service.loops.controller import (
    GoalLoops,
    loop_shelf,
    move_loop,
    new_loop,
    stop_loop,
)
from golem.service.loops.model import (
    KIND,
    LOOP_STATUSES,
    GoalLoop,
    GoalMeasure,
    Iteration,
    LoopRequest,
)

__all__ = [
    "KIND",
    "LOOP_STATUSES",
    "GoalLoop",
    "GoalLoops",
    "GoalMeasure",
    "Iteration",
    "LoopRequest",
    "loop_shelf",
    "move_loop",
    "new_loop",
    "stop_loop",
]
