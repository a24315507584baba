"""Settings: defaults, config.yaml, environment overrides and clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.errors import ConfigError
from core.messages import InboundMessage
from gateway.config import load_settings


def test_empty_home_gives_safe_defaults(tmp_path: Path) -> None:
    s = load_settings(tmp_path, {})
    assert (s.server.host, s.server.port) == ("127.0.0.1", 8080)
    assert s.database_url == f"sqlite+aiosqlite:///{tmp_path.resolve() / 'state.db'}"
    assert s.model_config_for_core().provider == "offline"


def test_env_overrides_the_file(tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text("server:\n  port: 9000\nmodel:\n  name: from-file\n")
    s = load_settings(tmp_path, {"CHATGATE_PORT": "9100", "CHATGATE_MODEL": "from-env"})
    assert s.server.port == 9100
    assert s.model.name == "from-env"


def test_openai_env_selects_openai_and_keeps_the_key_secret(tmp_path: Path) -> None:
    env = {"OPENAI_BASE_URL": "http://127.0.0.1:1/v1", "OPENAI_API_KEY": "sk-secret"}
    s = load_settings(tmp_path, env)
    cfg = s.model_config_for_core()
    assert (cfg.provider, cfg.base_url, cfg.api_key) == (
        "openai",
        env["OPENAI_BASE_URL"],
        "sk-secret",
    )
    assert "sk-secret" not in repr(s)
    assert "sk-secret" not in repr(cfg)


def test_anthropic_key_selects_anthropic(tmp_path: Path) -> None:
    cfg = load_settings(tmp_path, {"ANTHROPIC_API_KEY": "k"}).model_config_for_core()
    assert cfg.provider == "anthropic"
    assert cfg.api_key == "k"


@pytest.mark.parametrize(
    ("yaml_text", "env", "key"),
    [
        ("server:\n  port: 99999\n", {}, "server.port"),
        ("", {"CHATGATE_PORT": "abc"}, "server.port"),
        ("server:\n  prot: 1\n", {}, "server.prot"),
        ("model:\n  provider: gpt\n", {}, "model.provider"),
        ("database:\n  url: mysql://x\n", {}, "database.url"),
        ("model:\n  vision: sometimes\n", {}, "model.vision"),
        ("", {"CHATGATE_WEBHOOK__FETCH_PRIVATE_URLS": "maybe"}, "webhook.fetch_private_urls"),
        ("webhook:\n  max_body_bytes: 10\n", {}, "webhook.max_body_bytes"),
    ],
)
def test_invalid_settings_name_the_key(
    tmp_path: Path, yaml_text: str, env: dict[str, str], key: str
) -> None:
    (tmp_path / "config.yaml").write_text(yaml_text)
    with pytest.raises(ConfigError) as info:
        load_settings(tmp_path, env)
    assert info.value.key == key


def test_broken_yaml_names_the_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text("server:\n  port: [1,\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_settings(tmp_path, {})


@pytest.mark.parametrize(
    ("yaml_text", "key"),
    [
        ("model:\n  provider: anthropic\n", "model.anthropic_api_key"),
        ("model:\n  provider: openai\n", "model.api_key"),
    ],
)
def test_a_provider_without_credentials_is_refused(
    tmp_path: Path, yaml_text: str, key: str
) -> None:
    (tmp_path / "config.yaml").write_text(yaml_text)
    with pytest.raises(ConfigError) as info:
        load_settings(tmp_path, {})
    assert info.value.key == key


def test_workspace_per_chat_beats_route_beats_profile(tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text(
        "prompt:\n  workspace: /srv/profile\n  chat_workspaces: {'webhook:vip': /srv/vip}\n"
        "webhook:\n  routes:\n    support: {workspace: /srv/support, system_message: Hi}\n"
    )
    s = load_settings(tmp_path, {})

    def workspace(chat_id: str, route: str) -> Path | None:
        msg = InboundMessage(
            platform="webhook",
            chat_id=chat_id,
            user_id="u",
            text="x",
            platform_message_id="1",
            dedup_key="1",
            received_at=0.0,
            route=route,
        )
        return s.caller_context(msg).workspace

    assert workspace("vip", "support") == Path("/srv/vip")
    assert workspace("c1", "support") == Path("/srv/support")
    assert workspace("c1", "other") == Path("/srv/profile")


def test_settings_read_again_from_the_file_environment_and_options_they_came_from(
    tmp_path: Path,
) -> None:
    elsewhere = tmp_path / "etc" / "chatgate.yaml"
    elsewhere.parent.mkdir()
    elsewhere.write_text("sessions:\n  max_iterations: 7\n", encoding="utf-8")
    home = tmp_path / "home"
    env = {"CHATGATE_SESSIONS__TURN_TIMEOUT_SECONDS": "42"}
    settings = load_settings(
        home, env, overrides={"sessions.max_tool_calls_per_turn": "9"}, config_file=elsewhere
    )
    elsewhere.write_text("sessions:\n  max_iterations: 8\n", encoding="utf-8")
    (home / "config.yaml").parent.mkdir(parents=True, exist_ok=True)
    (home / "config.yaml").write_text("sessions:\n  max_iterations: 99\n", encoding="utf-8")

    again = settings.read_again()

    assert again is not None
    assert again.sessions.max_iterations == 8  # the file it started with, not the home's
    assert again.sessions.turn_timeout_seconds == 42
    assert again.sessions.max_tool_calls_per_turn == 9
    elsewhere.write_text("sessions:\n  max_iterations: 0\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="sessions.max_iterations"):
        settings.read_again()
