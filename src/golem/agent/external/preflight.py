"""Before an external CLI runs: is the box filtered, does it hold the CLI, and are the
provider keys it needs golem sentinels routed through the egress proxy (never real keys)?

One small call in the box answers the last two: ``command -v`` for the CLI and the
variables' values, which are sentinels and loopback routes, nothing secret.
"""

from __future__ import annotations

import re

from golem.agent.external.template import ExternalTemplate, ProviderCredential
from golem.core.errors import ConfigError, RuntimeNotAvailable
from golem.sandbox import Box, ExecRequest

__all__ = ["SENTINEL_PREFIX", "check_box", "probe_box"]

SENTINEL_PREFIX = "golem-sentinel-"
ROUTE = re.compile(r"^http://127\.0\.0\.1:\d+/_golem/[a-z0-9][a-z0-9_-]*/?$")
PROBE = """\
command -v "$1" || echo
shift
for name do
  eval "value=\\${$name-}"
  printf '%s=%s\\0' "$name" "$value"
done
"""
"""Prints where the CLI is (an empty line when it is not), then NAME=value NUL-separated.
Names are checked to be variable names before they reach eval."""
PROBE_TIMEOUT = 30.0


def check_box(box: Box, template: ExternalTemplate) -> None:
    """Refuse a box that could reach a model any other way than the egress proxy."""
    if box.spec.network != "filtered":
        raise ConfigError(
            f"the {template.name} agent runs only in a box with network = 'filtered' (this "
            f"one has {box.spec.network!r}): it reaches its model through golem's egress "
            "proxy, which adds the real key on the way out. Start the box with "
            "engine.spec(network='filtered', egress=...) or set network = \"filtered\" under "
            "[engine.defaults], and add:\n\n" + _credentials_toml(template)
        )


async def probe_box(box: Box, template: ExternalTemplate) -> dict[str, str]:
    """The box's values of the variables the CLI needs, after checking that the CLI is
    installed and that its keys are golem sentinels with golem routes."""
    names = template.env_names_needed()
    result = await box.execute(
        ExecRequest(
            cmd=["/bin/sh", "-c", PROBE, "golem-probe", template.program, *names],
            timeout=PROBE_TIMEOUT,
        )
    )
    where, _, listing = result.stdout_text.partition("\n")
    if result.exit_code != 0 or not where.strip():
        raise RuntimeNotAvailable(
            f"the box's image has no {template.program!r} ({template.name} agent); build an "
            f"image that installs it and run the box on it:\n\n[[images]]\n"
            f'tag = "my-org/{template.name}-devbox:1"\nbase = "golem/devbox:latest"\n'
            f"{template.image_recipe}"
        )
    values: dict[str, str] = {}
    for item in listing.split("\0"):
        name, equals, value = item.partition("=")
        if equals:
            values[name] = value
    for credential in template.credentials:
        _check_credential(template, credential, values)
    return {name: value for name, value in values.items() if value}


def _check_credential(
    template: ExternalTemplate, credential: ProviderCredential, values: dict[str, str]
) -> None:
    key = values.get(credential.key_env, "")
    base_url = values.get(credential.base_url_env, "") if credential.base_url_env else None
    if key and not key.startswith(SENTINEL_PREFIX):
        raise ConfigError(
            f"{credential.key_env} in the box holds a value golem did not put there (a real "
            f"key?); remove it from the box's env and secrets: the {template.name} agent "
            "gets provider keys only as sentinels that golem's egress proxy swaps for the "
            "real key. Add instead:\n\n" + credential.toml()
        )
    missing = [] if key else [credential.key_env]
    if credential.base_url_env and not ROUTE.match(base_url or ""):
        missing.append(credential.base_url_env)
    if missing:
        raise ConfigError(
            f"the {template.name} agent needs {' and '.join(missing)} in the box, set by "
            "golem's credential brokering (a sentinel key and golem's route to the API); "
            "add to golem.toml:\n\n" + credential.toml() + "\n\nand allow the API host in "
            "the box's egress policy."
        )


def _credentials_toml(template: ExternalTemplate) -> str:
    return "\n\n".join(c.toml() for c in template.credentials) or "(no credentials)"
