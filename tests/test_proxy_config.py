"""`staffstore serve`'s configuration: flags over a TOML file over defaults, keys kept as hashes."""

from __future__ import annotations

from pathlib import Path

import pytest

from staffstore.errors import InputError
from staffstore.proxy.config import (
    DEFAULTS,
    OwnerKey,
    build_config,
    hash_key,
    key_digest,
    parse_owner_key,
)

SECRET = "sk-local-alice-0001"
ENV = {"OPENROUTER_API_KEY": "sk-or-upstream"}


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "staffstore.toml"
    path.write_text(text)
    return path


def test_a_plaintext_key_is_kept_only_as_its_hash() -> None:
    digest, owner = parse_owner_key(f"alice={SECRET}")
    assert (digest, owner) == (hash_key(SECRET), OwnerKey("alice"))
    config = build_config(owner_keys=[f"alice={SECRET}"], environ=ENV)
    assert SECRET not in repr(config) and SECRET not in str(config.keys)
    assert "sk-or-upstream" not in repr(config)


def test_a_key_given_as_its_hash_is_used_as_is() -> None:
    digest = hash_key(SECRET)
    assert key_digest(f"sha256:{digest.upper()}") == digest


def test_a_malformed_hash_is_refused() -> None:
    with pytest.raises(InputError, match="64 hexadecimal"):
        key_digest("sha256:abc")


def test_a_malformed_flag_does_not_echo_the_key() -> None:
    with pytest.raises(InputError) as caught:
        parse_owner_key(SECRET)
    assert SECRET not in str(caught.value)


def test_the_file_is_read_and_flags_win(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        f"""
        [serve]
        host = "0.0.0.0"
        port = 9000
        working_set = "bounded"
        db = "state/proxy.db"
        timeout = 30

        [[serve.owners]]
        owner = "alice"
        key = "{SECRET}"

        [[serve.owners]]
        owner = "root"
        key_sha256 = "{hash_key("sk-root")}"
        admin = true
        """,
    )
    config = build_config(config_file=path, port=9100, environ=ENV)
    assert (config.host, config.port, config.working_set, config.timeout) == (
        "0.0.0.0",
        9100,
        "bounded",
        30.0,
    )
    assert config.db_path == tmp_path / "state" / "proxy.db"  # relative to the file
    assert config.keys == {
        hash_key(SECRET): OwnerKey("alice"),
        hash_key("sk-root"): OwnerKey("root", admin=True),
    }
    assert config.upstream_key == "sk-or-upstream"


def test_the_upstream_key_comes_from_the_environment_only(tmp_path: Path) -> None:
    config = build_config(trusted=True, environ={})
    assert config.upstream_key is None
    named = _write(tmp_path, 'upstream_key_env = "MY_KEY"\ntrusted = true\n')
    assert build_config(config_file=named, environ={"MY_KEY": "k"}).upstream_key == "k"


def test_defaults_apply_without_a_file() -> None:
    config = build_config(trusted=True, environ={"STAFFSTORE_DB": "/tmp/x.db"})
    assert (config.host, config.port, config.working_set) == (
        DEFAULTS.host,
        DEFAULTS.port,
        "forward",
    )
    assert config.db_path == Path("/tmp/x.db")


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("prot = 1\n", "unknown setting"),
        ('port = "80"\n', "wrong type"),
        ("trusted = true\nworking_set = 'all'\n", "working_set"),
        ('[[owners]]\nowner = "a"\n', "exactly one of key or key_sha256"),
        ('[[owners]]\nowner = "a"\nkey = "k"\nrole = "x"\n', "unknown field"),
        ("port = [\n", "cannot read"),
    ],
)
def test_a_bad_file_is_a_clear_error(tmp_path: Path, text: str, problem: str) -> None:
    with pytest.raises(InputError, match=problem):
        build_config(config_file=_write(tmp_path, text), environ=ENV)


def test_a_server_with_no_keys_must_be_trusted() -> None:
    with pytest.raises(InputError, match="--trusted"):
        build_config(environ=ENV)


def test_a_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="does not exist"):
        build_config(config_file=tmp_path / "nope.toml", environ=ENV)


def test_the_documented_example_file_is_valid(tmp_path: Path) -> None:
    from staffstore.proxy import config as serve_config

    assert serve_config.__doc__ is not None
    example = serve_config.__doc__.split("flags win over it):", 1)[1]
    text = "\n".join(line.removeprefix("    ") for line in example.splitlines())
    config = build_config(config_file=_write(tmp_path, text), environ={})
    assert config.keys[hash_key("sk-local-ops")] == OwnerKey("ops", admin=True)
    assert config.keys[hash_key("test")] == OwnerKey("alice")


def test_secret_env_names_variables_and_is_checked(tmp_path: Path) -> None:
    named = _write(tmp_path, '[serve]\ntrusted = true\nsecret_env = ["DEPLOY_NOTE", "DB_PASS"]\n')
    assert build_config(config_file=named, environ={}).secret_env == ("DEPLOY_NOTE", "DB_PASS")
    wrong = _write(tmp_path, '[serve]\ntrusted = true\nsecret_env = "DEPLOY_NOTE"\n')
    with pytest.raises(InputError, match="secret_env has the wrong type"):
        build_config(config_file=wrong, environ={})
    empty_name = _write(tmp_path, '[serve]\ntrusted = true\nsecret_env = ["DB_PASS", ""]\n')
    with pytest.raises(InputError, match="secret_env must be a list of environment variable"):
        build_config(config_file=empty_name, environ={})
