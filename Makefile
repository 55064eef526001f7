# Two entry points, each self-sufficient on a fresh machine with python3 >= 3.10:
#   make demo   creates .venv if missing, installs what the demo needs, runs it (offline)
#   make test   creates .venv if missing, installs every extra and the dev tools, runs the tests
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip install --disable-pip-version-check -q -c constraints.txt

.PHONY: demo test lint bench clean

$(PY):
	$(PYTHON) -m venv $(VENV)

$(VENV)/.demo-installed: pyproject.toml constraints.txt | $(PY)
	$(PIP) -e .
	touch $@

$(VENV)/.test-installed: pyproject.toml constraints.txt | $(PY)
	$(PIP) -e '.[all,dev]'
	touch $@ $(VENV)/.demo-installed

demo: $(VENV)/.demo-installed
	$(VENV)/bin/cuemap demo

test: $(VENV)/.test-installed
	$(PY) -m pytest -q

lint: $(VENV)/.test-installed
	$(PY) -m ruff check cuemap_integrations tests
	$(PY) -m mypy

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .hypothesis
