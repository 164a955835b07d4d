"""Task files: golem's own, SWE-bench's (Lite, Verified: lists as JSON strings), SWE-bench
Pro's and Multi-SWE-bench's read as the same tasks; every line checked, with an error naming
the file, the line and the field; what golem does not know kept as it was; an instance id
that would name a directory outside the results refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from golem.core.errors import TaskFileError
from golem.eval import is_test_path, read_tasks, split_paths, write_tasks

BASE = "0123456789abcdef0123456789abcdef01234567"
SWE_BENCH = {
    "instance_id": "astropy__astropy-12907",
    "repo": "astropy/astropy",
    "base_commit": BASE,
    "patch": "diff --git a/x.py b/x.py\n",
    "test_patch": "diff --git a/tests/test_x.py b/tests/test_x.py\n",
    "problem_statement": "Modeling's separability_matrix does not compute correctly",
    "hints_text": "",
    "created_at": "2022-03-03T15:14:54Z",
    "version": "4.3",
    "FAIL_TO_PASS": '["astropy/modeling/tests/test_separable.py::test_separable[a]"]',
    "PASS_TO_PASS": '["astropy/modeling/tests/test_separable.py::test_coord_matrix"]',
    "environment_setup_commit": BASE,
    "difficulty": "15 min - 1 hour",
}


def write(tmp_path: Path, *records: object) -> Path:
    file = tmp_path / "tasks.jsonl"
    file.write_text("".join(json.dumps(record) + "\n" for record in records))
    return file


def test_a_swe_bench_file_reads_with_its_json_encoded_lists_and_keeps_its_own_fields(
    tmp_path: Path,
) -> None:
    [task] = read_tasks(write(tmp_path, SWE_BENCH))
    assert task.FAIL_TO_PASS == ["astropy/modeling/tests/test_separable.py::test_separable[a]"]
    assert task.PASS_TO_PASS == ["astropy/modeling/tests/test_separable.py::test_coord_matrix"]
    assert task.golem_remote is None
    assert task.golem_test_commands == []
    again = tmp_path / "again.jsonl"
    write_tasks(again, [task])
    kept = json.loads(again.read_text())
    assert kept["difficulty"] == "15 min - 1 hour"  # a field golem does not know survives
    assert kept["FAIL_TO_PASS"] == task.FAIL_TO_PASS


def test_swe_bench_pros_names_read_as_the_same_task_with_its_requirements_told(
    tmp_path: Path,
) -> None:
    pro = {k: v for k, v in SWE_BENCH.items() if k not in ("FAIL_TO_PASS", "PASS_TO_PASS")}
    pro |= {"fail_to_pass": SWE_BENCH["FAIL_TO_PASS"], "pass_to_pass": "[]",
            "requirements": "Keep the public API.", "interface": "def f(x) -> int"}  # fmt: skip
    [task] = read_tasks(write(tmp_path, pro))
    assert task.FAIL_TO_PASS == ["astropy/modeling/tests/test_separable.py::test_separable[a]"]
    assert task.PASS_TO_PASS == []
    assert "Requirements:\nKeep the public API." in task.problem_statement
    assert "Interface:\ndef f(x) -> int" in task.problem_statement


def test_a_multi_swe_bench_instance_reads_as_a_task_of_its_fixed_tests_and_issues(
    tmp_path: Path,
) -> None:
    multi = {
        "org": "cli", "repo": "cli", "number": 513, "base": {"label": "x", "ref": "trunk",
        "sha": BASE}, "resolved_issues": [{"number": 1, "title": "Crash on empty",
        "body": "It panics."}], "fix_patch": "diff --git a/a.go b/a.go\n",
        "test_patch": "diff --git a/a_test.go b/a_test.go\n",
        "f2p_tests": {"TestA": {"run": "NONE", "test": "FAIL", "fix": "PASS"}},
        "n2p_tests": {"TestNew": {}}, "s2p_tests": {}, "p2p_tests": {"TestOld": {}},
    }  # fmt: skip
    [task] = read_tasks(write(tmp_path, multi))
    assert (task.instance_id, task.repo, task.base_commit) == ("cli__cli-513", "cli/cli", BASE)
    assert task.FAIL_TO_PASS == ["TestA", "TestNew"]
    assert task.PASS_TO_PASS == ["TestOld"]
    assert task.patch.startswith("diff --git a/a.go")
    assert task.problem_statement == "Crash on empty\n\nIt panics."


@pytest.mark.parametrize(
    "instance_id", ["../outside", "a/b", "..", ".hidden", "", "x" * 300, "a\nb", "/etc"]
)
def test_an_instance_id_that_would_name_another_directory_is_refused_with_its_line(
    tmp_path: Path, instance_id: str
) -> None:
    good = {**SWE_BENCH, "instance_id": "fine-1"}
    file = write(tmp_path, good, {**SWE_BENCH, "instance_id": instance_id})
    with pytest.raises(TaskFileError, match=r"tasks\.jsonl:2: instance_id: "):
        read_tasks(file)


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ({"base_commit": "main; rm -rf /"}, r":1: base_commit: .*not a commit id"),
        ({"FAIL_TO_PASS": "[]"}, r":1: FAIL_TO_PASS: .*at least one test"),
        ({"FAIL_TO_PASS": "not json"}, r":1: FAIL_TO_PASS: .*not a JSON list"),
        ({"test_patch": None}, r":1: test_patch: "),
    ],
)
def test_a_task_that_cannot_be_run_is_refused_naming_its_line_and_field(
    tmp_path: Path, change: dict[str, object], says: str
) -> None:
    with pytest.raises(TaskFileError, match=says):
        read_tasks(write(tmp_path, {**SWE_BENCH, **change}))


def test_twice_the_same_instance_and_broken_lines_are_refused_with_their_lines(
    tmp_path: Path,
) -> None:
    with pytest.raises(TaskFileError, match=r":2: instance_id .* is the task of line 1 too"):
        read_tasks(write(tmp_path, SWE_BENCH, SWE_BENCH))
    broken = tmp_path / "broken.jsonl"
    broken.write_text(json.dumps(SWE_BENCH) + "\n{not json\n")
    with pytest.raises(TaskFileError, match=r"broken\.jsonl:2: not a JSON object"):
        read_tasks(broken)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    with pytest.raises(TaskFileError, match="holds no task"):
        read_tasks(empty)


def test_a_json_array_of_tasks_reads_as_its_lines_would(tmp_path: Path) -> None:
    array = tmp_path / "tasks.json"
    array.write_text(json.dumps([SWE_BENCH, {**SWE_BENCH, "instance_id": "other-1"}]))
    assert [t.instance_id for t in read_tasks(array)] == ["astropy__astropy-12907", "other-1"]


def test_a_changes_tests_are_told_from_its_source_in_every_ecosystem() -> None:
    tests = [
        "tests/test_x.py", "pkg/tests/data/input.txt", "test_cli.py", "cli_test.py",
        "conftest.py", "clamp_test.go", "src/app.test.ts", "web/__tests__/App.jsx",
        "spec/models/user_spec.rb", "src/test/java/FooTest.java", "t/basic.t",
        "testdata/golden.json",
    ]  # fmt: skip
    sources = ["src/lib.rs", "textkit/slugify.py", "contest.py", "latest/notes.md",
               "src/testing_utils_impl.c", "protest.go", "README.md"]  # fmt: skip
    assert split_paths(tests + sources) == (tests, sources)
    assert not is_test_path("attestation.py")
