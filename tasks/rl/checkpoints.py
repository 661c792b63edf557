"""Where the policy checkpoints are, and which is the newest (select-rl-queries and evaluate use it).

Policy checkpoints are Hugging Face model directories (config, weights, tokenizer files):
``<data_dir>/checkpoints/sft/final_model`` (train-sft) and ``<data_dir>/checkpoints/rl-<UTC time>/final_model``
(train-rl). The newest one (by modification time of its ``config.json``) is "the current policy" of
paper D.2's nightly re-selection; when there is none the flows fall back to the tiny random model
and say so in logs and rows. Both training flows put their final model there with ``install_policy``
(atomic: the re-selection never reads a half-copied model).

Run: ``newest_policy(Path("data"))``.
"""
from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

from schemas.layout import CHECKPOINTS, FINAL_MODEL
from tasks.stages.files import fsync_path


def is_model_dir(path: Path) -> bool:
    """A Hugging Face model directory: a ``config.json`` and at least one weights file."""
    weights = any(path.glob("*.safetensors")) or any(path.glob("pytorch_model*.bin"))
    return (path / "config.json").is_file() and weights


def policy_dirs(data_dir: Path | str) -> list[Path]:
    """Every ``<data_dir>/checkpoints/*/final_model`` that is a complete model directory, oldest first."""
    root = Path(data_dir) / CHECKPOINTS
    if not root.is_dir():
        return []
    found = [d / FINAL_MODEL for d in root.iterdir() if d.is_dir() and is_model_dir(d / FINAL_MODEL)]
    # Ties in mtime (coarse file systems) fall back to the name, so the order is total.
    return sorted(found, key=lambda p: ((p / "config.json").stat().st_mtime_ns, str(p)))


def sft_policy_dir(data_dir: Path | str) -> Path:
    """Where train-sft installs its policy: ``<data_dir>/checkpoints/sft/final_model``."""
    return Path(data_dir) / CHECKPOINTS / "sft" / FINAL_MODEL


def newest_policy(data_dir: Path | str) -> Path | None:
    """The newest policy checkpoint under ``<data_dir>/checkpoints``, or ``None`` when there is none."""
    dirs = policy_dirs(data_dir)
    return dirs[-1] if dirs else None


def install_policy(src: Path, dest: Path) -> Path:
    """Copy the model directory ``src`` beside ``dest``, flush it to disk and swap it in by rename.

    A reader (``newest_policy``) sees the old model, none for the instant between the two renames, or
    the whole new one, never part of one: a copy killed half way leaves only the hidden ``.<name>.tmp``
    folder beside ``dest``, which the next install replaces. Both training flows install through it.
    """
    tmp, old = dest.with_name(f".{dest.name}.tmp"), dest.with_name(f".{dest.name}.old")
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(src, tmp)
    _fsync_tree(tmp)
    if dest.exists():
        shutil.rmtree(old, ignore_errors=True)
        os.replace(dest, old)
    os.replace(tmp, dest)
    fsync_path(dest.parent)
    shutil.rmtree(old, ignore_errors=True)
    return dest


def _fsync_tree(root: Path) -> None:
    """Every file and folder under ``root`` on disk before the rename publishes it (a crash after the
    rename must not leave empty weight files under the final name)."""
    for p in sorted(root.rglob("*"), reverse=True):
        fsync_path(p)
    fsync_path(root)


def model_identity(path: Path) -> str:
    """A short hash of a model directory's files (names, sizes, mtimes): changes when the weights do."""
    h = hashlib.sha256()
    for f in sorted(p for p in Path(path).rglob("*") if p.is_file()):
        st = f.stat()
        h.update(f"{f.relative_to(path)}:{st.st_size}:{st.st_mtime_ns};".encode())
    return h.hexdigest()[:16]

