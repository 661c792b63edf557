"""The fingerprint of the scored stages (judgments, rewards, check_results): the whole ``env`` section less
the declared exclusions, so a setting nobody listed still re-scores when it changes."""
from __future__ import annotations

from typing import Any, Iterator

import pytest

from schemas.config.env import FINGERPRINT_EXCLUDED, EnvConfig
from tasks.env.publish import env_fingerprint, fingerprint_of, without

EXCLUDED = {p for p, _why in FINGERPRINT_EXCLUDED}


def leaves(data: dict[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    for k, v in data.items():
        if isinstance(v, dict) and v:
            yield from leaves(v, f"{prefix}{k}.")
        else:
            yield f"{prefix}{k}", v


def changed(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + 1
    if isinstance(value, str):
        return value + "x"
    if isinstance(value, list):
        return [*value, value[-1] if value else 0]
    if isinstance(value, dict):
        return {**value, "x": 1}
    return "x"  # None


def set_path(data: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    out = {k: (dict(v) if isinstance(v, dict) else v) for k, v in data.items()}
    *parents, leaf = path.split(".")
    node = out
    for p in parents:
        node[p] = dict(node[p])
        node = node[p]
    node[leaf] = value
    return out


def test_every_setting_of_the_env_section_enters_the_fingerprint_unless_excluded():
    base = EnvConfig().model_dump(mode="json")
    before = fingerprint_of(base, None)
    paths = dict(leaves(base))
    assert len(paths) > 40 and "judge.prompt" in paths and "checks.step_timeout_ms" in paths
    moved = {p for p, v in paths.items() if fingerprint_of(set_path(base, p, changed(v)), None) != before}
    assert moved == set(paths) - EXCLUDED


def test_a_new_setting_changes_the_fingerprint_without_being_listed():
    class Grown(EnvConfig):
        new_gate: bool = False

    assert env_fingerprint(Grown()) != env_fingerprint(Grown(new_gate=True))
    assert env_fingerprint(Grown()) != env_fingerprint(EnvConfig())  # a new setting is a new configuration
    base = EnvConfig().model_dump(mode="json")
    nested = set_path(base, "runtime.probe.new_limit_s", 2.0)
    assert fingerprint_of(nested, None) != fingerprint_of(base, None)


def test_excluded_settings_leave_it_alone_and_each_names_its_reason():
    a = EnvConfig()
    b = EnvConfig.model_validate({"workers": 7, "task_runner": "ray", "judge": {"concurrency": 3},
                                  "runtime": {"concurrency": 2}, "checks": {"parallel": 4}})
    assert env_fingerprint(a) == env_fingerprint(b)
    assert all(why.strip() for _p, why in FINGERPRINT_EXCLUDED)
    assert env_fingerprint(a) != env_fingerprint(EnvConfig.model_validate({"runtime": {"settle_s": 0.7}}))


def test_the_mirror_enters_by_its_content_and_a_misspelt_exclusion_is_refused():
    base = EnvConfig().model_dump(mode="json")
    assert fingerprint_of(base, "lock-a") != fingerprint_of(base, "lock-b")
    with pytest.raises(KeyError, match="env.runtime.concurency is not a setting"):
        without(base, ["runtime.concurency"])
