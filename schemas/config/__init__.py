"""One typed configuration for every stage, with profiles and environment overrides.

Profiles: ``demo`` (small, fast; the default) and ``full`` (the paper's scale: 55,000 queries).
Overrides: ``RUBRICRL_PROFILE``, ``RUBRICRL_DATA_DIR`` and ``RUBRICRL_<SECTION>__<FIELD>``
(e.g. ``RUBRICRL_SYNTH__N_QUERIES=1000``), or ``--set synth.n_queries=1000`` on the CLI.
A bad value raises ``ValueError`` naming the field and its allowed values.
"""
from __future__ import annotations

import copy
import hashlib
import json
import os
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError

from schemas.config.attribution import AttributionConfig
from schemas.config.base import Section
from schemas.config.cost import CostConfig
from schemas.config.env import EnvConfig
from schemas.config.environments import EnvironmentsConfig
from schemas.config.evaluation import EVAL_DEMO_OVERRIDES, EvalConfig
from schemas.config.llm import LLMConfig
from schemas.config.rubrics import RubricsConfig
from schemas.config.selection import SELECTION_DEMO_OVERRIDES, SelectionConfig
from schemas.config.service import ServiceConfig
from schemas.config.sft import SFTConfig
from schemas.config.synth import SynthConfig
from schemas.config.train import TrainRLConfig, TrainSFTConfig
from schemas.config.train import DEMO_OVERRIDES as TRAIN_DEMO
from schemas.config.train import SFT_DEMO_OVERRIDES as TRAIN_SFT_DEMO

PROFILES = ("demo", "full")


class Config(Section):
    profile: Literal["demo", "full"] = "demo"
    data_dir: Path = Field(Path("data"), description="Stage outputs and catalog.duckdb")
    llm: LLMConfig = Field(default_factory=LLMConfig)
    synth: SynthConfig = Field(default_factory=SynthConfig)
    rubrics: RubricsConfig = Field(default_factory=RubricsConfig)
    env: EnvConfig = Field(default_factory=EnvConfig)
    attribution: AttributionConfig = Field(default_factory=AttributionConfig)
    selection: SelectionConfig = Field(default_factory=SelectionConfig)
    evaluation: EvalConfig = Field(default_factory=EvalConfig)
    sft: SFTConfig = Field(default_factory=SFTConfig)
    train_sft: TrainSFTConfig = Field(default_factory=TrainSFTConfig)
    train: TrainRLConfig = Field(default_factory=TrainRLConfig)
    cost: CostConfig = Field(default_factory=CostConfig)
    service: ServiceConfig = Field(default_factory=ServiceConfig)
    environments: EnvironmentsConfig = Field(default_factory=EnvironmentsConfig)

    def resolved_llm(self) -> LLMConfig:
        """The LLM settings with a relative ``store_path`` placed under ``data_dir``."""
        path = Path(self.llm.store_path)
        return self.llm if path.is_absolute() else self.llm.model_copy(update={"store_path": str(self.data_dir / path)})

    def section_hash(self, *names: str) -> str:
        """Hash of the named sections: a stage's fingerprint covers only what it depends on."""
        data = {n: self.model_dump(mode="json")[n] for n in names}
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]


PROFILE_OVERRIDES: dict[str, dict[str, Any]] = {
    "demo": {"synth": {"n_queries": 200, "n_personas": 60, "chunk_size": 50}, "rubrics": {"chunk_size": 50},
             "sft": {"max_queries": 24, "chunk_size": 12}, "train_sft": TRAIN_SFT_DEMO, "train": TRAIN_DEMO,
             "selection": SELECTION_DEMO_OVERRIDES, "evaluation": EVAL_DEMO_OVERRIDES},
    "full": {},
}


def _deep_update(base: dict[str, Any], upd: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for k, v in upd.items():
        out[k] = _deep_update(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else copy.deepcopy(v)
    return out


def _set_path(data: dict[str, Any], dotted: str, value: Any) -> None:
    parts = dotted.split(".")
    cur = data
    for p in parts[:-1]:
        cur = cur.setdefault(p, {})
    cur[parts[-1]] = value


def _parse_scalar(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def env_overrides(environ: dict[str, str] | None = None) -> dict[str, Any]:
    environ = dict(os.environ if environ is None else environ)
    out: dict[str, Any] = {}
    for key, raw in environ.items():
        if not key.startswith("RUBRICRL_") or key in ("RUBRICRL_PROFILE",):
            continue
        rest = key[len("RUBRICRL_"):].lower()
        if rest == "data_dir":
            out["data_dir"] = raw
        elif "__" in rest:
            _set_path(out, rest.replace("__", "."), _parse_scalar(raw))
    return out


def _explain(e: ValidationError) -> str:
    lines = []
    for err in e.errors():
        loc = ".".join(str(p) for p in err["loc"])
        allowed = ""
        ctx = err.get("ctx") or {}
        if "expected" in ctx:
            allowed = f"; allowed values: {ctx['expected']}"
        if err["type"] == "extra_forbidden":
            allowed = "; no such setting (check the spelling against `rubricrl config` or schemas/config/)"
        lines.append(f"config field '{loc}' = {err.get('input')!r}: {err['msg']}{allowed}")
    return "invalid configuration:\n  " + "\n  ".join(lines)


def load_config(profile: str | None = None, overrides: dict[str, Any] | None = None,
                sets: list[str] | None = None, environ: dict[str, str] | None = None,
                file: str | Path | None = None) -> Config:
    """Resolve profile -> environment -> explicit overrides -> ``--set a.b=v`` items, in that order.

    ``file``: a resolved configuration written before (``Config.model_dump_json``, e.g. a training
    run's ``config.json``) replaces the profile and environment steps; overrides and sets still apply.
    """
    if file is not None:
        data = _read_config_file(Path(file))
    else:
        env = dict(os.environ if environ is None else environ)
        profile = profile or env.get("RUBRICRL_PROFILE") or "demo"
        if profile not in PROFILES:
            raise ValueError(f"config field 'profile' = {profile!r}: unknown profile; allowed values: "
                             f"{', '.join(PROFILES)}")
        data = {"profile": profile}
        data = _deep_update(data, PROFILE_OVERRIDES[profile])
        data = _deep_update(data, env_overrides(env))
    data = _deep_update(data, overrides or {})
    for item in sets or []:
        if "=" not in item:
            raise ValueError(f"--set {item!r}: write it as section.field=value, e.g. synth.n_queries=500")
        k, v = item.split("=", 1)
        _set_path(data, k.strip(), _parse_scalar(v.strip()))
    try:
        cfg = Config.model_validate(data)
    except ValidationError as e:
        raise ValueError(_explain(e)) from None
    if cfg.synth.min_capabilities > cfg.synth.max_capabilities:
        raise ValueError("config field 'synth.min_capabilities' exceeds 'synth.max_capabilities'; make min <= max")
    return cfg


def _read_config_file(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise ValueError(f"config file {path} does not exist; write one with `rubricrl config > {path.name}`")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise ValueError(f"config file {path} is not valid JSON ({e.msg} at line {e.lineno}); rewrite it with "
                         "`rubricrl config`") from None
    if not isinstance(data, dict) or "profile" not in data:
        raise ValueError(f"config file {path} is not a whole configuration (no 'profile'); write one with "
                         "`rubricrl config`")
    return data


def write_config(cfg: Config, path: str | Path) -> Path:
    """Write the whole resolved configuration (what ``load_config(file=path)`` reads back)."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(cfg.model_dump_json(indent=2), encoding="utf-8")
    return p
