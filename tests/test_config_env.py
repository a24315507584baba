"""Every setting from the environment: ``CHATGATE_<SECTION>__<KEY>``, the older names as
aliases, lists from JSON or commas, env over file over default, errors naming the var."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.errors import ConfigError
from gateway.config import load_settings, load_with_sources, settings_model
from gateway.env_settings import env_names
from gateway.features.cron import CronSettings
from gateway.features.skills import SkillsSettings


def test_a_core_key_with_no_older_name_is_set_by_its_canonical_variable(tmp_path: Path) -> None:
    s = load_settings(tmp_path, {"CHATGATE_SERVER__MAX_CONNECTIONS": "7"})
    assert s.server.max_connections == 7


def test_a_feature_key_is_set_by_its_canonical_variable(tmp_path: Path) -> None:
    s = load_settings(tmp_path, {"CHATGATE_CRON__TIMEZONE": "Europe/Paris"})
    assert s.section(CronSettings).timezone == "Europe/Paris"


def test_a_platform_key_is_set_by_its_canonical_variable(tmp_path: Path) -> None:
    s = load_settings(tmp_path, {"CHATGATE_WEBHOOK__MAX_BODY_BYTES": "4096"})
    assert s.platform("webhook").model_dump()["max_body_bytes"] == 4096


def test_the_older_names_still_work(tmp_path: Path) -> None:
    s = load_settings(tmp_path, {"CHATGATE_PORT": "9100", "CHATGATE_WEBHOOK_SECRET": "s3"})
    assert s.server.port == 9100
    assert s.platform("webhook").model_dump()["secret"] is not None


def test_the_canonical_name_wins_over_the_alias(tmp_path: Path) -> None:
    s = load_settings(tmp_path, {"CHATGATE_PORT": "9100", "CHATGATE_SERVER__PORT": "9200"})
    assert s.server.port == 9200


def test_env_beats_file_beats_default(tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text("server:\n  port: 9000\n  max_connections: 5\n")
    s, sources = load_with_sources(tmp_path, {"CHATGATE_SERVER__PORT": "9300"})
    assert (s.server.port, s.server.max_connections, s.server.host) == (9300, 5, "127.0.0.1")
    assert sources["server.port"] == "env CHATGATE_SERVER__PORT"
    assert sources["server.max_connections"] == "file"
    assert "server.host" not in sources


@pytest.mark.parametrize("raw", ['["deploy", "lint"]', "deploy, lint"])
def test_a_list_from_json_or_commas(tmp_path: Path, raw: str) -> None:
    s = load_settings(tmp_path, {"CHATGATE_SKILLS__DISABLED": raw})
    assert s.section(SkillsSettings).disabled == ["deploy", "lint"]


def test_a_mapping_from_json(tmp_path: Path) -> None:
    raw = '{"webhook:ops": "/srv/ops"}'
    s = load_settings(tmp_path, {"CHATGATE_PROMPT__CHAT_WORKSPACES": raw})
    assert s.prompt.chat_workspaces == {"webhook:ops": Path("/srv/ops")}


def test_a_bad_value_names_the_variable(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_settings(tmp_path, {"CHATGATE_SERVER__PORT": "many"})
    assert info.value.key == "server.port"
    assert "CHATGATE_SERVER__PORT" in str(info.value)


def test_a_mapping_that_is_not_json_names_the_variable(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_settings(tmp_path, {"CHATGATE_PROMPT__CHAT_WORKSPACES": "a=b"})
    assert info.value.key == "CHATGATE_PROMPT__CHAT_WORKSPACES"


def test_every_key_of_every_section_has_a_variable() -> None:
    model = settings_model()
    names = env_names(model)
    sections = [n for n, f in model.model_fields.items() if n != "home"]
    for section in sections:
        annotation = model.model_fields[section].annotation
        assert annotation is not None
        for name, field in annotation.model_fields.items():
            key = field.alias or name  # ``budgets.global`` (a keyword: field ``global_``)
            assert f"CHATGATE_{section.upper()}__{key.upper()}" in names[f"{section}.{key}"]
