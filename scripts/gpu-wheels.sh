#!/usr/bin/env bash
# Wheels for the GPU machine that training/gpu_check.sh runs on (`make gpu-wheels`): it has no network, and its
# python3 (3.12) already holds torch, numpy, pandas and most of what the job needs. This folder holds the rest, at
# the project's own versions (read from .venv), as cp312 wheels; DeepSpeed publishes none, so it is built here as a
# pure-Python wheel (DS_BUILD_OPS=0: its ops are compiled on the GPU machine when first used). On that machine:
#   python3 -m pip install --no-index --no-deps .gpuwheels/*.whl && PYTHON=python3 bash training/gpu_check.sh
# (the device tool: carry .gpuwheels). Seen working on one H200, 2026-12-04; about 37 MB.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-.gpuwheels}
PIP=.venv/bin/pip
PKGS="hjson pydantic pydantic-core annotated-types typing-inspection typing-extensions great-expectations altair
marshmallow mistune ruamel.yaml sqlalchemy greenlet jsonschema jsonschema-specifications referencing rpds-py
rfc3339-validator jsonpointer pytz tzlocal tzdata dill docstring-parser transformers tokenizers safetensors
huggingface-hub httpx2 httpcore2 truststore narwhals cloudpickle tqdm"
rm -rf "$OUT" && mkdir -p "$OUT"
"$PIP" freeze 2>/dev/null | .venv/bin/python -c '
import sys
want = {p.lower().replace("_", "-") for p in sys.argv[1].split()}
for line in sys.stdin:
    name, _, version = line.strip().partition("==")
    if version and name.lower().replace("_", "-") in want:
        print(f"{name}=={version}")' "$PKGS" > "$OUT/requirements.txt"
"$PIP" download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64 --platform any \
  -d "$OUT" -r "$OUT/requirements.txt"
DS=$("$PIP" freeze 2>/dev/null | grep -i '^deepspeed==')
(cd /tmp && DS_BUILD_OPS=0 "$OLDPWD/$PIP" wheel -q --no-deps --no-build-isolation "$DS" -w "$OLDPWD/$OUT")
echo "gpu-wheels: $(ls "$OUT"/*.whl | wc -l) wheels in $OUT ($(du -sh "$OUT" | cut -f1))"
