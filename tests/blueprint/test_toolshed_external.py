"""A blueprint that gives an external CLI agent toolshed tools is checked when its run is
submitted: the CLI must read MCP configuration (claude, codex, goose), or the run is
refused, naming the step, before anything is cloned or started."""

from __future__ import annotations

import pytest

from golem.blueprint import parse_blueprint
from golem.blueprint.steps.agent import check_toolshed
from golem.core import ConfigError, load_config

BLUEPRINT = """
name: tools-for-a-cli
nodes:
  - id: implement
    kind: agent
    external: {cli}
    prompt: "{{{{ task }}}}"
    toolshed: [every.echo]
    next: end
"""
SHED = {"toolshed": {"servers": [{"name": "every", "url": "http://x/"}]}}


@pytest.mark.parametrize("cli", ["pi", "aider"])
def test_a_cli_without_mcp_support_is_refused_with_the_step_named(cli: str) -> None:
    config = load_config(SHED, files=[])
    blueprint = parse_blueprint(BLUEPRINT.format(cli=cli))
    with pytest.raises(ConfigError) as refused:
        check_toolshed(blueprint, config)
    assert "step implement" in refused.value.message
    assert f"the {cli} agent takes no MCP configuration" in refused.value.message


@pytest.mark.parametrize("cli", ["claude", "codex", "goose"])
def test_a_cli_that_reads_mcp_config_may_be_given_toolshed_tools(cli: str) -> None:
    config = load_config(SHED, files=[])
    check_toolshed(parse_blueprint(BLUEPRINT.format(cli=cli)), config)
