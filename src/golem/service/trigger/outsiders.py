"""Whether a trigger's run reads an outsider's words: an author of the issue or of one of
its comments, or of what a follow-up reads on its pull request (the conversation, the
reviews and their threads), without write access to the repository (the run's task and
context are what they wrote). Asked only where the trust policy gives such runs a tier of their own
(``server.trust.outsiders``), so a server without that rule makes no extra forge call.

Every doubt counts as an outsider: an access the forge will not say in time, a discussion
of more people than golem asks about."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from golem.core.errors import ForgeError
from golem.forge import Issue, IssueComment, ReviewDiscussion
from golem.service.trigger.comments import MARKER
from golem.service.trigger.reach import READ_TIMEOUT, ForgeReach

__all__ = ["MAX_PEOPLE", "outsider", "review_outsider"]

MAX_PEOPLE = 20
"""Most authors of one discussion whose access is asked; more make the run an outsider's."""
MAY_PUSH = ("admin", "write")


def _authors(
    first: str | None, comments: Iterable[IssueComment], own_login: str | None
) -> list[str]:
    """Who wrote: ``first`` (an issue's author; None: none) and ``comments`` (golem's own
    left out), each once, in order."""
    people = [first] if first is not None else []
    for comment in comments:
        golems = comment.author.endswith("[bot]") and MARKER in comment.body
        if own_login and comment.author.casefold() == own_login.casefold():
            continue
        if not own_login and golems:  # an App's installation token: its comments are a bot's
            continue
        people.append(comment.author)
    return list(dict.fromkeys(people))


async def outsider(reach: ForgeReach, repo: str, issue: Issue) -> str | None:
    """Why the issue's run counts as an outsider's (whose words, what access), or None
    when every author of its discussion may push to ``repo``."""
    people = _authors(issue.author, issue.comments, await reach.own_login())
    return await _weigh(reach, repo, people)


async def review_outsider(reach: ForgeReach, repo: str, review: ReviewDiscussion) -> str | None:
    """Why a follow-up on a pull request golem opened counts as an outsider's: an author of
    what it reads (its conversation, its reviews, their threads' comments) who may not
    push to ``repo``; None when every one of them may."""
    said = [
        *review.comments,
        *(IssueComment(author=one.author, body=one.body) for one in review.reviews),
        *(IssueComment(author=note.author, body=note.body)
          for thread in review.threads for note in thread.comments),
    ]  # fmt: skip
    people = _authors(None, said, await reach.own_login())
    return await _weigh(reach, repo, people)


async def _weigh(reach: ForgeReach, repo: str, people: list[str]) -> str | None:
    """Why one of ``people`` is an outsider of ``repo`` (every doubt counts), or None."""
    if "" in people:
        return "an author of the discussion is not named by the forge"
    if len(people) > MAX_PEOPLE:
        return f"{len(people)} people wrote in the discussion (golem asks about {MAX_PEOPLE})"
    forge = await reach.forge()
    try:
        async with asyncio.timeout(READ_TIMEOUT):
            for person in people:
                permission = await forge.permission(repo, person)
                if permission not in MAY_PUSH:
                    return f"{person} may not push to {repo} ({permission})"
    except TimeoutError:
        return f"the forge did not say in {READ_TIMEOUT:g}s who may push to {repo}"
    except ForgeError as exc:
        return f"the forge would not say who may push to {repo}: {exc.message}"
    return None
