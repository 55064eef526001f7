# Two entry points, each self-sufficient on a fresh machine with python3 >= 3.10:
#   make demo   creates .venv if missing, installs what the demo needs, runs it (offline)
#   make test   creates .venv if missing, installs every extra and the dev tools, runs the tests
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip install --disable-pip-version-check -q -c constraints.txt

.PHONY: demo test lint bench clean kernel

$(PY):
	$(PYTHON) -m venv $(VENV)

# the install compiles the scoring kernel and the text extension (hatch_build.py): a change to it installs again
KERNEL := cuemap_integrations/_kernel.c cuemap_integrations/_textc.c hatch_build.py

$(VENV)/.demo-installed: pyproject.toml constraints.txt $(KERNEL) | $(PY)
	$(PIP) -e '.[langchain]'
	touch $@

$(VENV)/.test-installed: pyproject.toml constraints.txt $(KERNEL) | $(PY)
	$(PIP) -e '.[all,dev]'
	touch $@ $(VENV)/.demo-installed

# The main job: the LangChain chatbot replays its bundled script on a fresh store, offline.
demo: $(VENV)/.demo-installed
	$(PY) examples/langchain_chatbot.py --script examples/chatbot_script.txt --offline

test: $(VENV)/.test-installed
	$(PY) -m pytest -q

lint: $(VENV)/.test-installed
	$(PY) -m ruff check cuemap_integrations adapters tests examples benchmarks hatch_build.py
	$(PY) -m ruff format --check cuemap_integrations adapters tests examples benchmarks hatch_build.py
	$(PY) -m mypy

# compile the kernel and the text extension in place (a checkout used through PYTHONPATH, without installing)
kernel:
	$(PYTHON) hatch_build.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .hypothesis
