"""Blueprints from YAML: the built-in minion, and every kind of mistake reported with the
file and line where it is."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from golem.blueprint import AgentNode, GateNode, LoopNode, draw, load_blueprint, parse_blueprint
from golem.core import ConfigError

GOOD = """\
name: small
nodes:
  - id: work
    kind: agent
    prompt: "{{ task }}"
    next: check
  - id: check
    kind: box
    run: [make test]
    next: {success: end, failure: ask}
  - id: ask
    kind: gate
    timeout: 60
    default: approved
"""


def problem(text: str) -> str:
    with pytest.raises(ConfigError) as caught:
        parse_blueprint(textwrap.dedent(text), "bp.yaml")
    return caught.value.message


def test_the_minion_blueprint_is_the_standard_one() -> None:
    minion = load_blueprint("minion")
    assert [n.id for n in minion.nodes] == [
        "prepare", "hydrate", "install", "setup", "baseline", "implement", "verify", "ship",
        "ci", "escalate",
    ]  # fmt: skip
    verify = minion.node("verify")
    assert isinstance(verify, LoopNode)
    assert (verify.max_rounds, verify.checks) == (2, ["lint", "build", "test"])
    assert verify.successor("failure") == "escalate"
    assert isinstance(minion.node("implement"), AgentNode)


def test_a_blueprint_file_loads_with_its_edges(tmp_path: Path) -> None:
    path = tmp_path / "small.yaml"
    path.write_text(GOOD)
    blueprint = load_blueprint(path)
    assert blueprint.first == "work"
    assert blueprint.node("check").successor("failure") == "ask"
    gate = blueprint.node("ask")
    assert isinstance(gate, GateNode)
    assert (gate.timeout, gate.default) == (60, "approved")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (GOOD.replace("kind: box\n", "kind: box\n    colour: red\n"), "bp.yaml:9: nodes.1.colour: unknown field"),
        (GOOD.replace("next: check", "next: nowhere"), "bp.yaml:3: blueprint: node 'work' leads to unknown node 'nowhere'"),
        (GOOD.replace("id: ask", "id: work"), "node ids must be unique: work"),
        (GOOD.replace("failure: ask", "failure: end"), "bp.yaml:11: blueprint: nodes no edge reaches: 'ask'"),
        (GOOD.replace("{{ task }}", "{{ tsak }}"), "bp.yaml:5: nodes.0.prompt: unknown template variable {{ tsak }}"),
        (GOOD.replace("kind: box\n    run: [make test]", 'kind: ci\n    fix: {prompt: "{{ falures }}"}'), "nodes.1.prompt: unknown template variable {{ falures }}"),
        (GOOD.replace("kind: gate", "kind: teleport"), "bp.yaml:11: nodes.2: Input tag 'teleport'"),
        (GOOD.replace("run: [make test]", "run: []"), "give one of check, run or baseline"),
        ("name: x\nnodes: [\n", "bp.yaml:3: not valid YAML"),
        ("- just\n- a list\n", "bp.yaml:1: a blueprint is a mapping"),
        ("box: {secrets: {T: x}}\n" + GOOD, "bp.yaml:1: box: box.secrets would keep secret values"),
        ("box: {workspace: /x}\n" + GOOD, "box.workspace is set by the run itself"),
        ("box: {memroy: 1g}\n" + GOOD, "box.memroy is not a box setting"),
        ("box: {snapshot: prepared}\n" + GOOD, "box.snapshot is not a blueprint setting"),
    ],
)  # fmt: skip
def test_mistakes_name_the_file_and_line(text: str, expected: str) -> None:
    assert expected in problem(text)


def test_an_unknown_blueprint_name_says_what_exists() -> None:
    with pytest.raises(ConfigError, match="give a YAML file or one of: minion"):
        load_blueprint("maxion")


def test_the_graph_is_drawn_happy_path_first() -> None:
    drawing = draw(load_blueprint("minion")).splitlines()
    order = [line[2:].split()[0] for line in drawing[1::2]]
    assert order == [
        "prepare", "hydrate", "install", "setup", "baseline", "implement", "verify", "ship",
        "ci", "escalate",
    ]  # fmt: skip
    verify = next(i for i, line in enumerate(drawing) if line[2:].startswith("verify "))
    assert "success -> ship  failure -> escalate" in drawing[verify + 1]
