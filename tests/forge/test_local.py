"""LocalForge: issues from files, pull requests and comments in a store."""

from __future__ import annotations

from pathlib import Path

import pytest

from golem.checks import CheckResult
from golem.core.errors import ForgeRequestRejected, IssueNotReadable, PullRequestExists
from golem.forge import LocalForge, PullRequestDraft
from golem.forge.contracts import Issue
from golem.store import MemoryStore


@pytest.fixture
def forge() -> LocalForge:
    """A local forge on an in-memory store."""
    return LocalForge(MemoryStore())


def draft(
    repo: str = "/srv/repos/demo.git", head: str = "golem/fix", **more: object
) -> PullRequestDraft:
    """A pull request for ``head`` into main."""
    fields = {"repo": repo, "base": "main", "head": head, "title": "fix: it", "body": "Fixed."}
    return PullRequestDraft.model_validate({**fields, **more})


CHECK = CheckResult(
    name="test", command="pytest -q", passed=False, exit_code=1, duration=2.5,
    output_tail="1 failed",
)  # fmt: skip


async def test_a_markdown_issue_has_its_first_heading_as_title(
    forge: LocalForge, tmp_path: Path
) -> None:
    path = tmp_path / "issue.md"
    path.write_text(
        "```sh\n# not the title\n```\n\n# Parser fails on braces #\n\nIt crashes on `{`.\n\n"
        "## Steps\n\n1. run it\n"
    )

    issue = await forge.fetch_issue(str(path))

    assert issue.title == "Parser fails on braces"
    assert (
        issue.body == "```sh\n# not the title\n```\n\n\nIt crashes on `{`.\n\n## Steps\n\n1. run it"
    )
    assert issue.url == path.resolve().as_uri()
    assert (issue.repo, issue.number, issue.comments) == (None, None, [])


async def test_a_yaml_issue_has_comments_and_labels(forge: LocalForge, tmp_path: Path) -> None:
    path = tmp_path / "issue.yaml"
    path.write_text(
        "title: Parser fails\nbody: |\n  It crashes.\nlabels: [bug, parser]\ncomments:\n"
        "  - It also fails on '['\n  - author: alice\n    body: Same here\n"
    )

    issue = await LocalForge(MemoryStore(), base_dir=tmp_path).fetch_issue("issue.yaml")

    assert (issue.title, issue.body, issue.labels) == (
        "Parser fails",
        "It crashes.",
        ["bug", "parser"],
    )
    assert [(c.author, c.body) for c in issue.comments] == [
        ("", "It also fails on '['"),
        ("alice", "Same here"),
    ]


async def test_a_json_issue_may_name_its_repository(forge: LocalForge, tmp_path: Path) -> None:
    path = tmp_path / "issue.json"
    path.write_text('{"title": "T", "body": "B", "repo": "octo/demo", "number": 7}')

    issue = await forge.fetch_issue(str(path))

    assert (issue.title, issue.repo, issue.number) == ("T", "octo/demo", 7)


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("issue.txt", "Fix it", "reads issues from .md, .yaml, .yml or .json"),
        ("issue.md", "No heading here\n\n## Only a subheading\n", "no '# Title' line"),
        ("issue.yaml", "title: [unclosed\n", r"issue.yaml, line 2: .*fix the YAML"),
        ("issue.yaml", "- a list\n", "holds list, not a mapping"),
        ("issue.yaml", "body: no title\n", "title: Field required"),
        ("issue.yaml", "title: T\nassignee: bob\n", "assignee: Extra inputs are not permitted"),
        ("issue.json", '{"title": "T",}', r"line 1: not valid JSON"),
        ("issue.json", '{"title": ""}', "title: String should have at least 1 character"),
    ],
)
async def test_a_bad_issue_file_says_what_to_fix(
    forge: LocalForge, tmp_path: Path, name: str, text: str, message: str
) -> None:
    (tmp_path / name).write_text(text)

    with pytest.raises(IssueNotReadable, match=message):
        await forge.fetch_issue(str(tmp_path / name))


async def test_a_missing_or_binary_issue_file_says_so(forge: LocalForge, tmp_path: Path) -> None:
    (tmp_path / "bin.md").write_bytes(b"\xff\xfe# x")

    with pytest.raises(IssueNotReadable, match="does not exist"):
        await forge.fetch_issue(str(tmp_path / "nope.md"))
    with pytest.raises(IssueNotReadable, match="not UTF-8"):
        await forge.fetch_issue(str(tmp_path / "bin.md"))


async def test_pull_requests_are_numbered_per_repository(forge: LocalForge) -> None:
    first = await forge.open_pull_request(draft(head="a"))
    second = await forge.open_pull_request(draft(head="b"))
    other = await forge.open_pull_request(draft(repo="octo/demo", head="a"))

    assert [first.number, second.number, other.number] == [1, 2, 1]
    assert first.url == "golem://local/srv/repos/demo.git/pulls/1"
    assert other.url == "golem://local/octo/demo/pulls/1"
    assert [p.number for p in await forge.pull_requests("/srv/repos/demo.git")] == [2, 1]
    assert [p.repo for p in await forge.pull_requests()] == [
        "octo/demo", "/srv/repos/demo.git", "/srv/repos/demo.git",
    ]  # fmt: skip


async def test_a_pull_request_keeps_its_diff_checks_and_labels(tmp_path: Path) -> None:
    forge = LocalForge(MemoryStore(), labels=["golem"])
    diff = "diff --git a/x b/x\n+new\n"

    opened = await forge.open_pull_request(
        draft(draft=True, labels=["needs-human"], issue=7), diff=diff, checks=[CHECK]
    )
    kept = await forge.pull_request("/srv/repos/demo.git", opened.number)

    assert kept == opened
    assert kept is not None
    assert (kept.provider, kept.diff, kept.checks) == ("local", diff, [CHECK])
    assert (kept.draft, kept.labels, kept.issue) == (True, ["golem", "needs-human"], 7)
    assert await forge.pull_request("/srv/repos/demo.git", 99) is None


async def test_a_second_pull_request_for_a_branch_is_refused(forge: LocalForge) -> None:
    first = await forge.open_pull_request(draft())

    with pytest.raises(PullRequestExists, match="already open") as caught:
        await forge.open_pull_request(draft(title="again"))

    assert caught.value.url == first.url


async def test_comments_are_kept_per_issue_and_pull_request(
    forge: LocalForge, tmp_path: Path
) -> None:
    (tmp_path / "issue.md").write_text("# Fix it\n")
    issue = await forge.fetch_issue(str(tmp_path / "issue.md"))
    pr = await forge.open_pull_request(draft())

    await forge.comment(issue, "golem opened " + pr.url)
    await forge.comment(pr.as_issue(), "checks: 1 failed")

    assert [c.body for c in await forge.comments(issue)] == ["golem opened " + pr.url]
    assert [(c.target, c.body) for c in await forge.comments(pr.as_issue())] == [
        ("/srv/repos/demo.git#1", "checks: 1 failed")
    ]
    assert len(await forge.comments()) == 2
    with pytest.raises(ForgeRequestRejected, match="neither"):
        await forge.comment(Issue(title="nowhere"), "x")
