"""The issue as the agent reads it, and the files it names."""

from __future__ import annotations

from pathlib import Path

from golem.context import files_named, render_issue
from golem.forge import Issue, IssueComment
from tests.context.conftest import MakeRepo

HUNDRED_LINES = "".join(f"line_{n} = {n}\n" for n in range(1, 101))


def test_an_issue_renders_title_labels_body_and_comments_with_authors() -> None:
    issue = Issue(
        title="  add subtracts ",
        body="`add(2, 3)` gives -1.\n",
        comments=[
            IssueComment(author="alice", body="Confirmed.", created="2025-01-02T03:04:05Z"),
            IssueComment(body="Also in `mean`."),
        ],
        labels=["bug", "good first issue"],
        url="https://github.com/acme/calc/issues/7",
        number=7,
        repo="acme/calc",
    )

    assert render_issue(issue) == (
        "Title: add subtracts\n"
        "Issue: #7 in acme/calc <https://github.com/acme/calc/issues/7>\n"
        "Labels: bug, good first issue\n"
        "\n"
        "`add(2, 3)` gives -1.\n"
        "\n"
        "### Comment 1, by alice on 2025-01-02T03:04:05Z\n"
        "\n"
        "Confirmed.\n"
        "\n"
        "### Comment 2, by someone\n"
        "\n"
        "Also in `mean`."
    )


def test_an_issue_with_only_a_title_says_it_has_no_description() -> None:
    assert render_issue(Issue(title="Bump the version")) == (
        "Title: Bump the version\n\n(no description)"
    )


def test_files_named_by_path_line_and_backticks_come_in_order_of_mention(
    make_repo: MakeRepo,
) -> None:
    repo = make_repo(
        {
            "src/app/x.py": "def x() -> int:\n    return 1\n",
            "Makefile": "test:\n\ttrue\n",
            "docs/guide.md": HUNDRED_LINES,
        }
    )
    text = "`Makefile` fails; see guide.md:50 and src/app/x.py (also ./src/app/x.py)."

    named = files_named(text, repo)

    assert [(item.path, item.lines) for item in named] == [
        ("Makefile", ()),
        ("docs/guide.md", (50,)),
        ("src/app/x.py", ()),
    ]
    assert named[2].text == "```python\n     1\tdef x() -> int:\n     2\t    return 1\n```"
    assert named[1].title == "docs/guide.md (line 50)"


def test_a_traceback_line_names_the_file_and_gives_the_lines_around_it(
    make_repo: MakeRepo,
) -> None:
    repo = make_repo({"src/app/deep.py": HUNDRED_LINES})
    text = (
        "Traceback (most recent call last):\n"
        '  File "/home/ci/build/project/src/app/deep.py", line 50, in <module>\n'
        "ZeroDivisionError: division by zero\n"
    )

    [named] = files_named(text, repo)

    assert named.path == "src/app/deep.py"
    assert named.lines == (50,)
    shown = named.text.splitlines()
    assert shown[1] == "   ..."
    assert shown[2] == "    30\tline_30 = 30"
    assert shown[-3] == "    70\tline_70 = 70"
    assert shown[-2] == "   ..."
    assert "line_29 =" not in named.text
    assert "line_71 =" not in named.text


def test_nearby_named_lines_share_one_window(make_repo: MakeRepo) -> None:
    repo = make_repo({"mod.py": HUNDRED_LINES})

    [named] = files_named("mod.py:10 and mod.py:40, and then mod.py:95", repo)

    assert named.lines == (10, 40, 95)
    assert named.text.count("   ...") == 1  # 1-60, then 75-100
    assert "    60\tline_60" in named.text
    assert "line_61 =" not in named.text


def test_a_link_to_a_line_on_the_forge_names_the_file(make_repo: MakeRepo) -> None:
    repo = make_repo({"src/app/x.py": HUNDRED_LINES})

    [named] = files_named("https://github.com/acme/app/blob/main/src/app/x.py#L12", repo)

    assert (named.path, named.lines) == ("src/app/x.py", (12,))


def test_paths_that_do_not_exist_or_leave_the_repository_are_ignored(
    make_repo: MakeRepo, tmp_path: Path
) -> None:
    (tmp_path / "outside.py").write_text("secret = 1\n")
    repo = make_repo({"real.py": "x = 1\n", ".gitignore": "*.log\n", "build.log": "noise\n"})
    (repo / "link.py").symlink_to(tmp_path / "outside.py")
    text = (
        "src/nope.py:3, ../outside.py, /etc/passwd, `link.py`, build.log, version 1.2.3, "
        "e.g. this, and real.py"
    )

    assert [item.path for item in files_named(text, repo)] == ["real.py"]


def test_an_ambiguous_bare_name_is_ignored_unless_the_workdir_decides(
    make_repo: MakeRepo,
) -> None:
    repo = make_repo({"pkg_a/config.py": "a = 1\n", "pkg_b/config.py": "b = 1\n"})

    assert files_named("config.py is wrong", repo) == []
    assert [item.path for item in files_named("config.py", repo, workdir="pkg_b")] == [
        "pkg_b/config.py"
    ]
    assert [item.path for item in files_named("pkg_a/config.py", repo)] == ["pkg_a/config.py"]


def test_a_binary_file_is_not_given(make_repo: MakeRepo) -> None:
    repo = make_repo({"logo.png": "x"})
    (repo / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR")

    assert files_named("the `logo.png` is blurry", repo) == []


def test_at_most_limit_files_are_named(make_repo: MakeRepo) -> None:
    repo = make_repo({f"m{n}.py": "x = 1\n" for n in range(5)})

    named = files_named("m4.py m3.py m2.py m1.py m0.py", repo, limit=2)

    assert [item.path for item in named] == ["m4.py", "m3.py"]


def test_a_fence_in_a_named_file_gets_a_longer_fence_around_it(make_repo: MakeRepo) -> None:
    repo = make_repo({"README.md": "```sh\nmake\n```\n"})

    [named] = files_named("README.md", repo)

    assert named.text.startswith("````markdown\n")
    assert named.text.endswith("\n````")
