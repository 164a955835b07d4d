"""Configuration layering and its errors: defaults < user file < project file < env < flags."""

from __future__ import annotations

from pathlib import Path

import pytest

from golem.core import ConfigError, GolemConfig, load_config, parse_size


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_defaults_are_safe_for_unattended_agents() -> None:
    spec = load_config(files=[]).engine.defaults
    assert spec.network == "none"
    assert spec.read_only_root is True
    assert spec.uid_gid != (0, 0)
    assert spec.memory is not None
    assert spec.pids is not None


def test_layers_override_in_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    user = _write(tmp_path / "user.toml", "[engine.defaults]\nmemory='1g'\ncpus=3\npids=99\n")
    project = _write(tmp_path / "project.toml", "[engine.defaults]\ncpus=2\npids=77\n")
    monkeypatch.setenv("GOLEM_ENGINE__DEFAULTS__PIDS", "55")
    config = load_config({"engine": {"defaults": {"timeout": 9}}}, files=[user, project])
    spec = config.engine.defaults
    assert spec.memory == parse_size("1g")  # only the user file sets it
    assert spec.cpus == 2  # project beats user
    assert spec.pids == 55  # env beats files
    assert spec.timeout == 9  # flags beat everything


def test_project_and_user_files_are_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    _write(tmp_path / "cfg" / "golem" / "golem.toml", "[engine.defaults]\npids=11\ncpus=4\n")
    _write(tmp_path / "proj" / "golem.toml", "[engine.defaults]\npids=22\n")
    spec = load_config(project_dir=tmp_path / "proj").engine.defaults
    assert (spec.pids, spec.cpus) == (22, 4)


def test_bad_toml_names_the_file(tmp_path: Path) -> None:
    bad = _write(tmp_path / "golem.toml", "[engine\n")
    with pytest.raises(ConfigError, match=r"golem\.toml"):
        load_config(files=[bad])


def test_unknown_option_is_refused_with_a_pointer(tmp_path: Path) -> None:
    bad = _write(tmp_path / "golem.toml", "[engine.defaults]\nmemroy='1g'\n")
    with pytest.raises(ConfigError, match=r"engine\.defaults\.memroy: unknown option"):
        load_config(files=[bad])


def test_bad_value_from_env_is_explained(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOLEM_ENGINE__DEFAULTS__MEMORY", "lots")
    with pytest.raises(ConfigError, match="not a size") as info:
        load_config(files=[])
    assert "GOLEM_* environment" in str(info.value)


def test_workdir_outside_workspace_is_refused() -> None:
    with pytest.raises(ConfigError, match="outside /workspace"):
        load_config({"engine": {"defaults": {"workdir": "../etc"}}}, files=[])


def test_secrets_do_not_show_in_dumps() -> None:
    config = load_config({"engine": {"defaults": {"secrets": {"T": "hunter2"}}}}, files=[])
    assert "hunter2" not in config.model_dump_json()
    assert config.engine.defaults.secret_values() == {"T": "hunter2"}


def test_json_schema_describes_every_option() -> None:
    schema = GolemConfig.model_json_schema()
    box = schema["$defs"]["BoxSpec"]["properties"]
    assert {"memory", "network", "secrets", "setup", "workdir"} <= set(box)


@pytest.mark.parametrize(
    ("text", "size"),
    [("512k", 512 * 1024), ("256m", 256 * 1024**2), ("1.5g", 1536 * 1024**2), (7, 7)],
)
def test_sizes_parse(text: str | int, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["", "12q", "-1", "m"])
def test_bad_sizes_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match="size"):
        parse_size(text)


def test_pool_options_come_from_the_file(tmp_path: Path) -> None:
    path = _write(tmp_path / "golem.toml", '[engine.pool]\nstrategy = "secure"\nclean = 4\n')
    pool = load_config(files=[path]).engine.pool
    assert (pool.strategy, pool.clean, pool.dirty) == ("secure", 4, 2)


def test_unknown_pool_strategy_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path / "golem.toml", '[engine.pool]\nstrategy = "lazy"\n')
    with pytest.raises(ConfigError, match=r"engine\.pool\.strategy"):
        load_config(files=[path])
