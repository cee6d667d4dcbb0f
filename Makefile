# Two entry points for a fresh clone: `make demo` (the built-in demo) and `make test`.
# Both create .venv first: torch's CPU wheel pinned by constraints.txt, then this package.
VENV ?= .venv
PYTHON := $(VENV)/bin/python
export PIP_CONSTRAINT := $(CURDIR)/constraints.txt
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)

.PHONY: setup demo test lint bench browser gpu-kit gpu-check

setup: $(VENV)/.installed

$(VENV)/.installed: setup.cfg pyproject.toml constraints.txt
	python3 -m venv $(VENV)
	$(PYTHON) -m pip install --quiet torch==2.13.0
	$(PYTHON) -m pip install --quiet -e '.[test]'
	touch $@

demo: setup
	bash scripts/demo.sh

# One pytest worker per core (at most 4), each test file whole in one worker: its module-scoped
# fixtures are computed once, and most of a test's time is a tool's start in a process of its own.
# The files go out in the order tests/conftest.py gives them (the long ones first), not by their
# number of tests.
test: setup browser lint
	$(PYTHON) -m pytest --numprocesses auto --maxprocesses 4 --dist loadfile --no-loadscope-reorder

# The formatting and the lint rules of pyproject.toml ([tool.ruff]): CI fails on unformatted code.
lint: setup
	$(PYTHON) -m ruff format --check .
	$(PYTHON) -m ruff check .

# Debian's chromium and chromium-driver for the page's browser test, installed when missing.
browser:
	bash scripts/install_chromium.sh

bench: setup
	$(PYTHON) -m bench.benchmark

# The GPU kit (docs/gpu-kit.md): gather its wheels here, where PyPI is reachable, then run every
# GPU check in one command on a GPU machine (which needs no setup: it installs the gathered
# wheels); bash bench/gpu/run.sh --copy-to DIR also copies the results to DIR as they come.
gpu-kit:
	bash bench/gpu/gather.sh

gpu-check:
	bash bench/gpu/run.sh
