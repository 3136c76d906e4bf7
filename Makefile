# Two test stacks, both on the local Python 3:
#   modern: current transformers / optimum / huggingface_hub, bundled base class, and scipy, whose solver
#           tests/placement/test_time_model_limits.py uses
#   host:   the IPU-host pins (transformers 4.29.2, optimum 1.6.1), optimum-graphcore 0.7.1's IPUConfig as base,
#           and scipy, which its BERT models import (the reference placement tests run them) and that test uses
# torch is pinned to the CPU build first: optimum asks for torch, and an unpinned one is a multi-GB CUDA build.
PYTHON ?= python3
TORCH := torch==2.13.0
# Test-only: the Lightning example runs with lightning-graphcore 0.1.0, which imports PyTorch Lightning 2.0's modules
# (2.1 moved them); Lightning 2.0 imports pkg_resources, which setuptools 81 removed and 80.9 warns about on stderr.
LIGHTNING := pytorch-lightning==2.0.9.post0 lightning-graphcore==0.1.0 "setuptools>=61,<80.9"
# the linter, in the modern environment (`make lint`)
RUFF_PIN := ruff==0.17.6
MODERN := .venv/modern/bin/python
RUFF := .venv/modern/bin/ruff
HOST := .venv/host/bin/python

.PHONY: demo test lint test-modern test-host py38-syntax bench mutation documents clean

demo: $(MODERN)
	$(MODERN) examples/quickstart.py

test: lint py38-syntax test-modern test-host

# the rules are in pyproject.toml ([tool.ruff])
lint: $(RUFF)
	$(RUFF) check optimum_ipu_ext tests examples benchmarks scripts

test-modern: $(MODERN)
	OPTIMUM_IPU_EXT_TEST_BASE=bundled $(MODERN) -m pytest -q -rs

test-host: $(HOST)
	OPTIMUM_IPU_EXT_TEST_BASE=upstream $(HOST) -m pytest -q -rs

py38-syntax: $(MODERN)
	.venv/modern/bin/vermin --no-tips --violations --target=3.8- optimum_ipu_ext examples benchmarks

# The README's attribute tables and the shipped JSON Schema, generated from the settings table
documents: $(MODERN)
	$(MODERN) scripts/regenerate_documents.py

bench: $(MODERN)
	for benchmark in benchmarks/*.py; do $(MODERN) $$benchmark || exit 1; done

# Mutation testing (not part of `test`: about an hour on two cores). The modules mutated and the tests run are
# set in pyproject.toml ([tool.mutmut]); equivalent mutants are listed in tests/mutation/equivalent.txt. One OpenMP
# thread: mutmut forks each mutant's tests from a process that ran torch, and such children hung without it.
mutation: $(MODERN)
	$(MODERN) -m pip install -q mutmut==3.8.1
	rm -rf mutants && mkdir -p out
	OMP_NUM_THREADS=1 OPTIMUM_IPU_EXT_TEST_BASE=bundled $(MODERN) -m mutmut run --max-children 2 > out/mutation.log 2>&1
	$(MODERN) tests/mutation/report.py

$(MODERN):
	$(PYTHON) -m venv .venv/modern
	$(MODERN) -m pip install -q --upgrade pip
	$(MODERN) -m pip install -q $(TORCH)
	$(MODERN) -m pip install -q -e . pytest scipy "hypothesis==6.120.0" hypothesis-jsonschema vermin typeguard jsonschema pre-commit argcomplete "vulture==2.16" "flit_core>=3.12,<4" $(RUFF_PIN)
	$(MODERN) -m pip install -q --no-deps optimum-graphcore==0.7.1
	$(MODERN) -m pip install -q $(LIGHTNING)

# a modern environment built before the linter was added to it
$(RUFF): $(MODERN)
	$(MODERN) -m pip install -q $(RUFF_PIN)

$(HOST):
	$(PYTHON) -m venv .venv/host
	$(HOST) -m pip install -q --upgrade pip
	$(HOST) -m pip install -q $(TORCH)
	$(HOST) -m pip install -q transformers==4.29.2 optimum==1.6.1 "huggingface_hub==0.36.*" safetensors scipy pytest "hypothesis==6.120.0" hypothesis-jsonschema typeguard jsonschema pre-commit argcomplete "flit_core>=3.12,<4"
	$(HOST) -m pip install -q --no-deps -e . optimum-graphcore==0.7.1
	$(HOST) -m pip install -q $(LIGHTNING)

clean:
	rm -rf .venv
