#!/usr/bin/env bash
# GPU check for the GRPO job: a small random model, a few DeepSpeed bf16 steps on CUDA with transformers
# rollouts; prints step time, tokens/s and peak memory. Needs torch (CUDA), deepspeed, transformers,
# tokenizers, pydantic, pyarrow, tensorboard; no network (the model and tokenizer are built locally).
#
#   bash training/gpu_check.sh [OUT_DIR]        # env: GPU_CHECK_STEPS (5), GPU_CHECK_HIDDEN (1024),
#                                               #      GPU_CHECK_LAYERS (8), GPU_CHECK_NEW_TOKENS (256)
# About 1 minute on one H200 (2026-12-04, torch 2.11.0+cu130: 5 steps, 2.65 s a step, 6,060 generated tokens/s,
# 5.11 GiB peak). That machine has no network: its python3 holds torch, and the project's other pins travel as
# wheels built by `make gpu-wheels` (scripts/gpu-wheels.sh), installed with pip --no-index --no-deps first.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || echo python3 )}
OUT=${1:-runs/gpu-check}
STEPS=${GPU_CHECK_STEPS:-5}
export TORCH_EXTENSIONS_DIR=${TORCH_EXTENSIONS_DIR:-$PWD/.torch_extensions}
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}

"$PY" - <<'PY'
import importlib.util, sys
missing = [m for m in ("torch", "deepspeed", "transformers", "tokenizers", "pydantic", "pyarrow", "tensorboard")
           if importlib.util.find_spec(m) is None]
if missing:
    sys.exit(f"gpu_check: missing Python packages {missing}; install them (pip install -e . and the Makefile's train deps)")
import torch
if not torch.cuda.is_available():
    sys.exit("gpu_check: torch.cuda.is_available() is False; run this on the GPU machine")
print(f"gpu_check: {torch.cuda.get_device_name(0)}, torch {torch.__version__}, CUDA {torch.version.cuda}")
PY

rm -rf "$OUT" && mkdir -p "$(dirname "$OUT")"
"$PY" -m training --profile full \
  --set train.run.out_dir="$OUT" --set train.run.steps="$STEPS" --set train.run.save_every=1000 \
  --set train.model.tiny_hidden_size="${GPU_CHECK_HIDDEN:-1024}" --set train.model.tiny_layers="${GPU_CHECK_LAYERS:-8}" \
  --set train.rollout.engine=transformers --set train.rollout.queries_per_step=8 --set train.rollout.group_size=8 \
  --set train.rollout.max_new_tokens="${GPU_CHECK_NEW_TOKENS:-256}" --set train.rollout.max_prompt_tokens=1024 \
  --set train.deepspeed.precision=bf16 --set train.deepspeed.zero_stage=2 --set train.deepspeed.micro_batch_size=16 \
  --set train.optim.lr=1e-5 > "$OUT.log" 2>&1 || { tail -50 "$OUT.log"; exit 1; }

"$PY" - "$OUT" <<'PY'
import json, statistics, sys
s = json.load(open(f"{sys.argv[1]}/summary.json"))
h = s["history"][1:] or s["history"]  # the first step includes warm-up
m = lambda k: statistics.mean(x[k] for x in h)
print(f"steps: {s['steps_run']} (mean over {len(h)} after warm-up), world size {s['world_size']}")
print(f"step time: {m('time/step_s'):.3f} s  (generate {m('time/generate_s'):.3f}, score {m('time/score_s'):.3f}, "
      f"update {m('time/update_s'):.3f})")
print(f"tokens/s (generated): {m('time/tokens_per_s'):.1f}")
pm = s.get("peak_memory_gib")
print(f"peak memory: {pm:.2f} GiB" if pm is not None else "peak memory: n/a (no CUDA)")
print(f"reward/mean first -> last: {s['history'][0]['reward/mean']:.3f} -> {s['history'][-1]['reward/mean']:.3f}")
PY
