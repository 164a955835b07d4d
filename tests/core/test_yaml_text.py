"""golem.core.yaml_text: libyaml's parser where PyYAML has it, giving what PyYAML's own
safe loader gives, data and lines, from one parse; a broken document still says where."""

from __future__ import annotations

import pytest
import yaml

from golem.core.yaml_text import Loader, load_yaml, nodes_and_data

DOCUMENT = """\
name: minion  # a comment
nodes:
  - id: implement
    kind: agent
    prompt: |
      Fix it.
      Then finish.
    limits: {turns: 30, usd: 1.5, off: null, on: yes}
  - &check
    id: verify
    run: ["pytest -q", 'echo "done"']
  - *check
when: 2026-11-29
"""


def test_the_fast_loader_is_libyamls_and_reads_what_pyyamls_own_reads() -> None:
    assert Loader is yaml.CSafeLoader  # scripts/setup installs PyYAML's wheel, built with it
    assert load_yaml(DOCUMENT) == yaml.load(DOCUMENT, Loader=yaml.SafeLoader)


def test_one_parse_gives_the_data_and_each_keys_line() -> None:
    node, data = nodes_and_data(DOCUMENT)

    assert data == yaml.load(DOCUMENT, Loader=yaml.SafeLoader)
    assert isinstance(node, yaml.MappingNode)
    lines = {key.value: key.start_mark.line + 1 for key, _ in node.value}
    assert lines == {"name": 1, "nodes": 2, "when": 13}


def test_an_empty_document_has_no_nodes_and_no_data() -> None:
    assert nodes_and_data("# nothing\n") == (None, None)


@pytest.mark.parametrize(
    ("text", "line"), [("name: x\nnodes: [\n  - a\n", 3), ("a: 1\nb: : 2\n", 2)]
)
def test_a_broken_document_says_on_which_line_as_pyyamls_own_does(text: str, line: int) -> None:
    with pytest.raises(yaml.MarkedYAMLError) as broken:
        nodes_and_data(text)
    with pytest.raises(yaml.MarkedYAMLError) as own:
        yaml.load(text, Loader=yaml.SafeLoader)

    assert broken.value.problem_mark is not None
    assert own.value.problem_mark is not None
    assert broken.value.problem_mark.line + 1 == own.value.problem_mark.line + 1 == line
