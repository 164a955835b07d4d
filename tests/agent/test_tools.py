"""The coding tools in real boxes: reads, writes, edits, commands and searches happen in the
box, never on the host, and every problem the model can fix comes back as an observation."""

from __future__ import annotations

import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import golem.agent.tools as tools_package
from golem.agent import ToolResult
from golem.agent.tools import TOOLS, TOOLSETS, GrepTool, ReadTool, make_tools
from golem.agent.tools.bash import clip
from golem.core import ConfigError
from golem.sandbox import Box, Engine
from tests.sandbox.minimal_image import build_minimal_image

pytestmark = pytest.mark.bwrap


async def call(box: Box, name: str, **arguments: Any) -> ToolResult:
    """Run one tool with its default settings, as the agent loop would."""
    (tool,) = make_tools([name])
    return await tool.run(box, arguments)


async def exists_in_box(box: Box, path: str) -> bool:
    return (await box.execute(["test", "-e", path])).exit_code == 0


@pytest.fixture(scope="module")
def minimal_image() -> Iterator[Path]:
    """An image with python3 and sh only (no bash, no coreutils)."""
    root = Path(tempfile.mkdtemp(prefix="golem-image-"))
    root.chmod(0o755)
    yield build_minimal_image(root)
    shutil.rmtree(root, ignore_errors=True)


# read ----------------------------------------------------------------------------------


async def test_read_numbers_lines_like_cat_n_from_the_offset(box: Box) -> None:
    await box.put_file("notes.txt", "one\ntwo\nthree\nfour\n")
    result = await call(box, "read", path="notes.txt", offset=2, limit=2)
    assert not result.is_error
    assert result.output == (
        "     2\ttwo\n     3\tthree\n[Lines 2-3 of 4. To read on, call read with offset=4.]"
    )
    whole = await call(box, "read", path="notes.txt")
    assert whole.output == "     1\tone\n     2\ttwo\n     3\tthree\n     4\tfour"


async def test_read_stops_at_the_default_line_cap_and_says_how_to_read_on(box: Box) -> None:
    await box.put_file("long.txt", "".join(f"line {n}\n" for n in range(1, 2501)))
    result = await call(box, "read", path="long.txt")
    lines = result.output.splitlines()
    assert lines[0] == "     1\tline 1"
    assert lines[1999] == "  2000\tline 2000"
    assert lines[2000] == "[Lines 1-2000 of 2500. To read on, call read with offset=2001.]"
    rest = await call(box, "read", path="long.txt", offset=2001)
    assert rest.output.splitlines()[-1] == "[Lines 2001-2500 of 2500: the end of the file.]"


async def test_read_caps_its_bytes_and_cuts_very_long_lines(box: Box) -> None:
    await box.put_file("wide.txt", ("x" * 3000 + "\n") * 100)
    result = await call(box, "read", path="wide.txt")
    assert not result.is_error
    assert len(result.output.encode()) < 70 * 1024
    assert "x" * 2000 + " [... 1000 more characters]" in result.output
    shown = result.output.count("\t")
    assert 20 < shown < 100
    assert f"[Lines 1-{shown} of 100, capped at 64.0 KiB." in result.output
    assert f"offset={shown + 1}" in result.output
    assert f"[{shown} long lines cut at 2000 characters;" in result.output


async def test_read_of_a_binary_file_names_what_it_is_instead_of_its_bytes(box: Box) -> None:
    await box.put_file("logo.png", b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR" + bytes(200))
    await box.put_file("blob.dat", b"abc\0def")
    png = await call(box, "read", path="logo.png")
    assert png.is_error
    assert png.output.startswith("logo.png is a PNG image (216 bytes), not text")
    blob = await call(box, "read", path="blob.dat")
    assert blob.is_error
    assert "blob.dat is binary data" in blob.output


async def test_read_of_a_directory_lists_its_entries(box: Box) -> None:
    await box.put_file("pkg/sub/mod.py", "x = 1\n")
    await box.put_file("pkg/a.txt", "a\n")
    result = await call(box, "read", path="pkg")
    assert result.is_error
    assert result.output == "pkg is a directory, not a file. It holds:\n  sub/\n  a.txt"


async def test_read_of_a_missing_file_suggests_the_closest_existing_names(box: Box) -> None:
    await box.put_file("src/golem/main.py", "print()\n")
    await box.put_file("src/golem/models.py", "\n")
    typo = await call(box, "read", path="src/golem/mian.py")
    assert typo.is_error
    assert typo.output.startswith("src/golem/mian.py does not exist. Did you mean:\n")
    assert "  src/golem/main.py" in typo.output
    elsewhere = await call(box, "read", path="main.py")
    assert elsewhere.output == "main.py does not exist. Did you mean:\n  src/golem/main.py"
    nothing = await call(box, "read", path="zzz/qqq.rs")
    assert nothing.output == "zzz/qqq.rs does not exist; use ls or glob to find the path you mean"


async def test_read_past_the_end_gives_the_file_length(box: Box) -> None:
    await box.put_file("short.txt", "a\nb\nc")
    result = await call(box, "read", path="short.txt", offset=9)
    assert result.is_error
    assert result.output == "short.txt has 3 lines; offset 9 is past its end"


async def test_read_of_an_empty_file_says_it_is_empty(box: Box) -> None:
    await box.put_file("empty.txt", b"")
    result = await call(box, "read", path="empty.txt")
    assert result == ToolResult("(empty.txt is empty)")


async def test_read_of_an_unreadable_file_says_permission_denied(box: Box) -> None:
    await box.put_file("secret.txt", "hidden\n")
    await box.execute(["chmod", "000", "secret.txt"])
    result = await call(box, "read", path="secret.txt")
    assert result.is_error
    assert result.output == "/workspace/secret.txt: permission denied"


async def test_relative_paths_start_at_the_box_workdir(engine: Engine) -> None:
    async with engine.session(engine.spec(workdir="/workspace/proj")) as box:
        wrote = await call(box, "write", path="notes.txt", content="hi\n")
        assert wrote.output == "Created notes.txt (1 line, 3 bytes)."
        assert await box.get_file("/workspace/proj/notes.txt") == b"hi\n"
        await box.put_file("/tmp/elsewhere.txt", "there\n")
        absolute = await call(box, "read", path="/tmp/elsewhere.txt")
        assert absolute.output == "     1\tthere"
        up = await call(box, "read", path="../proj/notes.txt")
        assert up.output == "     1\thi"


# write ---------------------------------------------------------------------------------


async def test_write_creates_parent_directories_and_reports_what_it_wrote(box: Box) -> None:
    result = await call(box, "write", path="a/b/c.txt", content="x\ny\n")
    assert result == ToolResult("Created a/b/c.txt (2 lines, 4 bytes).")
    assert await box.get_file("a/b/c.txt") == b"x\ny\n"


async def test_write_over_a_file_replaces_it_and_says_so(box: Box) -> None:
    await box.put_file("c.txt", "old content\n")
    result = await call(box, "write", path="c.txt", content="new")
    assert result == ToolResult("Overwrote c.txt (1 line, 3 bytes; it had 12 bytes).")
    assert await box.get_file("c.txt") == b"new"


async def test_write_where_the_box_cannot_write_is_an_error_result(box: Box) -> None:
    system = await call(box, "write", path="/usr/golem-test/x.txt", content="x")
    assert system.is_error
    assert system.output.startswith("cannot write /usr/golem-test/x.txt: /usr is not writable")
    await box.put_file("dir/file.txt", "x")
    directory = await call(box, "write", path="dir", content="x")
    assert directory == ToolResult("dir is a directory; give the path of a file", is_error=True)


# edit ----------------------------------------------------------------------------------

SOURCE = """import os


def greet(name):
    message = "hello " + name
    print(message)
    return message


def part(name):
    return name
"""


async def test_edit_replaces_a_unique_match_and_shows_the_lines_around_it(box: Box) -> None:
    await box.put_file("app.py", SOURCE)
    result = await call(box, "edit", path="app.py", old='"hello " + name', new='f"hello {name}!"')
    assert not result.is_error
    assert result.output.startswith("Edited app.py at line 5.\n")
    assert '     5\t    message = f"hello {name}!"' in result.output
    assert "     1\timport os" in result.output
    assert "     9\t" in result.output
    assert "    10\t" not in result.output
    expected = SOURCE.replace('"hello " + name', 'f"hello {name}!"')
    assert (await box.get_file("app.py")).decode() == expected


async def test_edit_miss_shows_the_closest_candidate_lines(box: Box) -> None:
    await box.put_file("app.py", SOURCE)
    result = await call(
        box,
        "edit",
        path="app.py",
        old='    mesage = "helo " + name\n    print(mesage)',
        new="pass",
    )
    assert result.is_error
    assert result.output.startswith("old does not occur in app.py. The closest lines:\nlines 5-6")
    assert '     5\t    message = "hello " + name\n     6\t    print(message)' in result.output
    assert (await box.get_file("app.py")).decode() == SOURCE


async def test_edit_with_only_whitespace_differences_names_the_exact_text(box: Box) -> None:
    await box.put_file("tabs.py", "def f():\n\tif True:\n\t\treturn 1\n")
    result = await call(box, "edit", path="tabs.py", old="    if True:\n        return 1", new="")
    assert result.is_error
    assert result.output == (
        "old does not occur in tabs.py exactly, but lines 2-3 match it when whitespace is "
        "ignored: the indentation or spacing differs. The file's exact text (it indents with "
        "tabs):\n     2\t\tif True:\n     3\t\t\treturn 1\nCopy it exactly into old."
    )


async def test_edit_with_several_matches_lists_their_lines_and_changes_nothing(
    box: Box,
) -> None:
    await box.put_file("app.py", SOURCE)
    result = await call(box, "edit", path="app.py", old="return", new="yield")
    assert result.is_error
    assert result.output.startswith("old occurs 2 times in app.py (at lines 7, 11);")
    assert "set replace_all" in result.output
    assert (await box.get_file("app.py")).decode() == SOURCE


async def test_edit_replace_all_changes_every_occurrence(box: Box) -> None:
    await box.put_file("app.py", SOURCE)
    result = await call(box, "edit", path="app.py", old="name", new="who", replace_all=True)
    assert not result.is_error
    assert result.output.startswith("Edited app.py: 4 replacements, at lines 4, 5, 10, 11.")
    assert (await box.get_file("app.py")).decode() == SOURCE.replace("name", "who")


async def test_edit_refuses_changes_that_make_no_sense(box: Box) -> None:
    await box.put_file("app.py", SOURCE)
    same = await call(box, "edit", path="app.py", old="os", new="os")
    assert same == ToolResult("old and new are the same, so nothing would change", is_error=True)
    empty = await call(box, "edit", path="app.py", old="", new="x")
    assert empty.is_error
    assert empty.output.startswith("old is empty but app.py is not;")
    await box.put_file("data.bin", b"\0\1\2")
    binary = await call(box, "edit", path="data.bin", old="a", new="b")
    assert binary == ToolResult("data.bin is binary data, not text; edit changes text only", True)
    missing = await call(box, "edit", path="ap.py", old="a", new="b")
    assert missing.output == "ap.py does not exist. Did you mean:\n  app.py"
    assert (await box.get_file("app.py")).decode() == SOURCE


async def test_edit_with_empty_old_creates_a_missing_file(box: Box) -> None:
    result = await call(box, "edit", path="new/mod.py", old="", new="x = 1\n")
    assert result == ToolResult("Created new/mod.py (1 line).")
    assert await box.get_file("new/mod.py") == b"x = 1\n"


async def test_edit_keeps_crlf_line_endings(box: Box) -> None:
    await box.put_file("win.txt", b"first\r\nsecond\r\nthird\r\n")
    result = await call(box, "edit", path="win.txt", old="first\nsecond", new="1\n2")
    assert not result.is_error
    assert await box.get_file("win.txt") == b"1\r\n2\r\nthird\r\n"


async def test_edit_says_when_old_carries_line_numbers_from_read(box: Box) -> None:
    await box.put_file("app.py", SOURCE)
    result = await call(box, "edit", path="app.py", old="     1\timport os", new="import sys")
    assert result.is_error
    assert result.output.endswith(
        "old seems to start its lines with read's line numbers; leave them out."
    )


# bash ----------------------------------------------------------------------------------


async def test_bash_states_the_exit_code_and_marks_failures(box: Box) -> None:
    ok = await call(box, "bash", command="echo out; echo err >&2")
    assert ok == ToolResult("out\nerr\n[exit code 0]")
    failed = await call(box, "bash", command="exit 3")
    assert failed == ToolResult("(no output)\n[exit code 3]", is_error=True)
    missing = await call(box, "bash", command="no-such-program-here")
    assert missing.is_error
    assert "[exit code 127]" in missing.output


async def test_bash_runs_bash_in_the_box_workdir(engine: Engine) -> None:
    async with engine.session(engine.spec(workdir="/workspace/proj")) as box:
        result = await call(box, "bash", command='pwd; [[ -n "$BASH_VERSION" ]] && echo bash')
        assert result.output == "/workspace/proj\nbash\n[exit code 0]"


async def test_bash_uses_sh_when_the_image_has_no_bash(engine: Engine, minimal_image: Path) -> None:
    async with engine.session(engine.spec(image=str(minimal_image))) as box:
        result = await call(box, "bash", command='echo "${BASH_VERSION:-sh}"')
        assert result.output == "sh\n[exit code 0]"
        wrote = await call(box, "write", path="a.txt", content="x\n")
        assert not wrote.is_error
        found = await call(box, "grep", pattern="x")
        assert found.output == "1 match in 1 file:\na.txt:1: x"


async def test_bash_timeout_kills_the_command_and_says_so(box: Box) -> None:
    result = await call(box, "bash", command="echo started; sleep 60", timeout=1)
    assert result.is_error
    assert result.output.startswith("started\n")
    assert result.output.endswith("[timed out after 1s; the command was killed]")


async def test_bash_idle_timeout_kills_a_silent_command(box: Box) -> None:
    result = await call(box, "bash", command="echo begun; sleep 60", idle_timeout=1)
    assert result.is_error
    assert result.output.endswith("[no output for 1s (idle timeout); the command was killed]")


async def test_bash_names_the_box_idle_timeout_when_it_kills(engine: Engine) -> None:
    async with engine.session(engine.spec(idle_timeout=1)) as box:
        result = await call(box, "bash", command="sleep 60")
        assert result.output == (
            "(no output)\n[no output for 1s (idle timeout); the command was killed]"
        )


def test_clip_keeps_whole_lines_and_says_what_it_left_out() -> None:
    text = "".join(f"{n:04}\n" for n in range(1000))  # 5000 bytes
    clipped = clip(text, 100, 200, "saved nowhere")
    assert clipped.startswith("0000\n0001\n")
    assert "0019\n[... 940 lines (4.6 KiB) left out here; saved nowhere ...]\n0960\n" in clipped
    assert clipped.endswith("0999\n")
    one_line = clip("x" * 1000, 100, 200, "saved nowhere")
    note = "[... 0 lines (700 bytes) left out here; saved nowhere ...]"
    assert one_line == f"{'x' * 100}\n{note}\n{'x' * 200}\n"


async def test_bash_commands_get_an_empty_stdin(box: Box) -> None:
    result = await call(box, "bash", command="cat; read line || echo eof")
    assert result == ToolResult("eof\n[exit code 0]")


async def test_bash_keeps_head_and_tail_of_long_output_and_saves_all_of_it(box: Box) -> None:
    result = await call(box, "bash", command="seq 1 200000")
    full = "".join(f"{n}\n" for n in range(1, 200001))
    assert result.output.startswith("1\n2\n3\n")
    assert result.output.endswith("199999\n200000\n[exit code 0]")
    assert 30 * 1024 < len(result.output) < 34 * 1024
    note = next(line for line in result.output.splitlines() if line.startswith("[..."))
    assert " lines (" in note
    log = note.split("the full output is in ")[1].removesuffix(" ...]")
    assert log.startswith("/tmp/golem-tool-output/")
    assert (await box.get_file(log)).decode() == full
    found = await call(box, "grep", pattern="^123456$", path=log)
    assert found.output.endswith(":123456: 123456")


async def test_bash_says_when_output_passed_the_box_cap(engine: Engine) -> None:
    async with engine.session(engine.spec(max_output_bytes="256k")) as box:
        result = await call(box, "bash", command="seq 1 200000; echo done >&2")
        assert result.output.endswith(
            "[exit code 0]\n[output passed the box's cap of 256.0 KiB; what came after it "
            "was dropped]"
        )
        assert "all the output that was kept is in /tmp/golem-tool-output/" in result.output
        assert "done" not in result.output


async def test_tools_act_in_the_box_and_never_on_the_host(box: Box) -> None:
    marker = f"/tmp/golem-host-check-{uuid.uuid4().hex}"
    ran = await call(box, "bash", command=f"echo inside > {marker}.bash")
    wrote = await call(box, "write", path=f"{marker}.write", content="inside\n")
    assert not ran.is_error
    assert not wrote.is_error
    assert not Path(f"{marker}.bash").exists()
    assert not Path(f"{marker}.write").exists()
    assert await box.get_file(f"{marker}.bash") == b"inside\n"
    assert await box.get_file(f"{marker}.write") == b"inside\n"
    host_file = Path(__file__).resolve()
    seen = await call(box, "read", path=str(host_file))
    assert seen.is_error
    assert "does not exist" in seen.output


# grep, glob, ls ------------------------------------------------------------------------


async def project(box: Box) -> None:
    await box.put_file("src/b.py", "import os\nTODO = 1\n")
    await box.put_file("src/a.py", "# todo: later\nx = 1  # TODO\n")
    await box.put_file("src/deep/c.ts", "// TODO\n")
    await box.put_file("README.md", "Nothing to do.\n")
    await box.put_file("image.bin", b"TODO\0\0")
    await box.put_file(".git/HEAD", "TODO\n")
    await box.put_file("node_modules/x/index.js", "TODO\n")


async def test_grep_lists_matching_lines_sorted_by_path_and_line(box: Box) -> None:
    await project(box)
    result = await call(box, "grep", pattern="TODO")
    assert result == ToolResult(
        "3 matches in 3 files:\nsrc/a.py:2: x = 1  # TODO\nsrc/b.py:2: TODO = 1\n"
        "src/deep/c.ts:1: // TODO"
    )


async def test_grep_glob_path_and_ignore_case_narrow_the_search(box: Box) -> None:
    await project(box)
    loose = await call(box, "grep", pattern="todo", ignore_case=True, glob="*.py")
    assert loose.output == (
        "3 matches in 2 files:\nsrc/a.py:1: # todo: later\nsrc/a.py:2: x = 1  # TODO\n"
        "src/b.py:2: TODO = 1"
    )
    one = await call(box, "grep", pattern="import", path="src/b.py")
    assert one.output == "1 match in 1 file:\nsrc/b.py:1: import os"
    nested = await call(box, "grep", pattern="TODO", glob="src/**/*.ts")
    assert nested.output == "1 match in 1 file:\nsrc/deep/c.ts:1: // TODO"
    none = await call(box, "grep", pattern="nowhere")
    assert none == ToolResult("No matches for 'nowhere' in the working directory.")


async def test_grep_caps_matches_and_line_length_and_counts_every_match(box: Box) -> None:
    await box.put_file("many.txt", "hit\n" * 500)
    result = await call(box, "grep", pattern="hit")
    lines = result.output.splitlines()
    assert lines[0] == (
        "500 matches in 1 file (the first 200 shown; narrow the pattern, path or glob):"
    )
    assert len(lines) == 201
    assert lines[-1] == "many.txt:200: hit"
    await box.put_file("wide.txt", "x" * 100 + "\n")
    wide = await GrepTool(max_line=10).run(box, {"pattern": "x", "path": "wide.txt"})
    assert wide.output == "1 match in 1 file:\nwide.txt:1: xxxxxxxxxx [... 90 more characters]"


async def test_grep_refuses_an_invalid_regex_and_suggests_literal(box: Box) -> None:
    await box.put_file("f.txt", "call(x\n")
    result = await call(box, "grep", pattern="call(x")
    assert result.is_error
    assert result.output.startswith("the pattern is not a valid regular expression (")
    assert "set literal" in result.output
    literal = await call(box, "grep", pattern="call(x", literal=True)
    assert literal.output == "1 match in 1 file:\nf.txt:1: call(x"


async def test_shell_metacharacters_in_arguments_are_never_interpreted(box: Box) -> None:
    await box.put_file("evil.txt", "run $(rm -rf /) and `touch x`; echo 'done'\n")
    tricks = ["$(touch /tmp/pwned)", "`touch /tmp/pwned`", "'; touch /tmp/pwned; '"]
    found = await call(box, "grep", pattern="$(rm -rf /)", literal=True)
    assert (
        found.output == "1 match in 1 file:\nevil.txt:1: run $(rm -rf /) and `touch x`; echo 'done'"
    )
    quoted = await call(box, "grep", pattern=r"`touch x`; echo 'done'")
    assert quoted.output.startswith("1 match in 1 file:")
    for trick in tricks:
        for name, arguments in [
            ("grep", {"pattern": trick, "literal": True}),
            ("grep", {"pattern": "x", "path": trick}),
            ("grep", {"pattern": "x", "glob": trick}),
            ("glob", {"pattern": trick}),
            ("ls", {"path": trick}),
            ("read", {"path": trick}),
        ]:
            await call(box, name, **arguments)
    assert not await exists_in_box(box, "/tmp/pwned")
    assert await box.get_file("evil.txt") == b"run $(rm -rf /) and `touch x`; echo 'done'\n"


async def test_glob_matches_at_any_depth_sorted_with_directories_marked(box: Box) -> None:
    await project(box)
    python = await call(box, "glob", pattern="*.py")
    assert python == ToolResult("2 paths:\nsrc/a.py\nsrc/b.py")
    deep = await call(box, "glob", pattern="src/**")
    assert deep.output == "4 paths:\nsrc/a.py\nsrc/b.py\nsrc/deep/\nsrc/deep/c.ts"
    braces = await call(box, "glob", pattern="**/*.{ts,md}")
    assert braces.output == "2 paths:\nREADME.md\nsrc/deep/c.ts"
    top = await call(box, "glob", pattern="src/*.py", path="/workspace")
    assert top.output == "2 paths:\nsrc/a.py\nsrc/b.py"
    absolute = await call(box, "glob", pattern="/workspace/src/deep/*")
    assert absolute.output == "1 path:\nsrc/deep/c.ts"
    none = await call(box, "glob", pattern="*.rs")
    assert none == ToolResult("No paths match '*.rs'.")


async def test_glob_caps_its_results(box: Box) -> None:
    await box.execute("mkdir many && cd many && for i in $(seq 1 600); do : > f$i.txt; done")
    result = await call(box, "glob", pattern="many/*.txt")
    lines = result.output.splitlines()
    assert lines[0] == "600 paths (the first 500 shown; make the pattern more specific):"
    assert len(lines) == 501


async def test_ls_lists_directories_first_with_sizes_and_link_targets(box: Box) -> None:
    await project(box)
    await box.execute("ln -s src/a.py link.py")
    result = await call(box, "ls")
    assert result.output == (
        ".: 6 entries\n.git/\nnode_modules/\nsrc/\n"
        "README.md  (15 bytes)\nimage.bin  (6 bytes)\nlink.py -> src/a.py"
    )
    inner = await call(box, "ls", path="src/deep")
    assert inner.output == "src/deep: 1 entry\nc.ts  (8 bytes)"
    file = await call(box, "ls", path="README.md")
    assert file.output == "README.md is a file (15 bytes), not a directory."


async def test_ls_caps_its_entries(box: Box) -> None:
    await box.execute("mkdir many && cd many && for i in $(seq 1 600); do : > f$i; done")
    result = await call(box, "ls", path="many")
    lines = result.output.splitlines()
    assert lines[0] == "many: 600 entries (the first 500 shown; use glob to narrow it down)"
    assert len(lines) == 501


# arguments, finish, the registry -------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "arguments", "problems"),
    [
        ("read", {}, ["- path: Field required"]),
        (
            "read",
            {"path": "x", "offset": 0},
            ["- offset: Input should be greater than or equal to 1"],
        ),
        (
            "edit",
            {"path": "x", "old": 1, "new": "y", "force": True},
            ["- old: Input should be a valid string", "- force: Extra inputs are not permitted"],
        ),
        ("bash", {"command": "ls", "timeout": -1}, ["- timeout: Input should be greater than 0"]),
        ("grep", {"pattern": ""}, ["- pattern: String should have at least 1 character"]),
        ("finish", {"summary": None}, ["- summary: Input should be a valid string"]),
    ],
)
async def test_bad_arguments_become_error_results_naming_the_fields(
    box: Box, name: str, arguments: dict[str, Any], problems: list[str]
) -> None:
    result = await call(box, name, **arguments)
    assert result.is_error
    lines = result.output.splitlines()
    assert lines[0] == f"invalid arguments for {name}:"
    assert lines[1:-1] == problems
    assert lines[-1].startswith(f"expected: {name}(")


async def test_names_and_text_a_file_system_cannot_take_are_handled(box: Box) -> None:
    nul = await call(box, "read", path="a\0b")
    assert nul == ToolResult(
        "the path 'a\\x00b' contains a NUL character; no file has such a name", is_error=True
    )
    surrogate = await call(box, "write", path="odd.txt", content="\udc80x")
    assert not surrogate.is_error
    assert await box.get_file("odd.txt") == b"?x"


def test_each_spec_is_the_json_schema_of_its_arguments() -> None:
    for tool in make_tools(["all"]):
        parameters = tool.spec.parameters
        assert parameters["type"] == "object"
        assert parameters["additionalProperties"] is False
        assert "title" not in parameters
        for field in parameters["properties"].values():
            assert "anyOf" not in field
            assert "type" in field
            assert field["description"]
    read = make_tools(["read"])[0].spec.parameters
    assert read["required"] == ["path"]
    assert read["properties"]["offset"] == {
        "default": 1,
        "description": "Line number to start at (1 is the first line).",
        "minimum": 1,
        "type": "integer",
    }


async def test_finish_hands_back_the_summary_as_finished(box: Box) -> None:
    result = await call(box, "finish", summary="Fixed the failing test.")
    assert result == ToolResult("Fixed the failing test.", finished=True)


def test_the_package_exports_every_tool_and_every_name_it_lists() -> None:
    for name in tools_package.__all__:
        assert getattr(tools_package, name) is not None
    for factory in TOOLS.values():
        assert getattr(factory, "__name__", "") in tools_package.__all__


def test_make_tools_builds_named_subsets_in_order_without_duplicates() -> None:
    assert [t.spec.name for t in make_tools(["all"])] == list(TOOLS)
    readonly = [t.spec.name for t in make_tools("readonly")]
    assert readonly == ["read", "grep", "glob", "ls", "finish"]
    mixed = [t.spec.name for t in make_tools(["bash", "files", "read"])]
    assert mixed == ["bash", "read", "write", "edit", "grep", "glob", "ls", "finish"]
    assert "bash" not in TOOLSETS["files"]
    assert not set(TOOLSETS) & set(TOOLS)  # a name means one thing
    first, second = make_tools(["read"]), make_tools(["read"])
    assert first[0] is not second[0]
    assert isinstance(first[0], ReadTool)


def test_make_tools_refuses_unknown_names_listing_the_valid_ones() -> None:
    with pytest.raises(ConfigError) as caught:
        make_tools(["read", "python"])
    assert caught.value.message == (
        "unknown tool or toolset 'python'; tools: read, write, edit, bash, grep, glob, ls, "
        "finish; toolsets: all, readonly, files"
    )
