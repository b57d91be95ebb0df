# The two commands: `make demo` (the main job) and `make test` (the whole suite, what CI runs);
# `make test-fast` is the developer's loop: every test not marked slow (under 5 minutes).
# Both create .venv on first use; CPU torch is installed before the package so that
# pip never pulls the CUDA build. `make docs` builds the site (docs/_build/html) with every
# gallery example; `make docs-quick` (CI) skips the slower examples. Both treat warnings as
# errors and start from a clean tree, so that no warning hides in a cached page.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
DOCS_STAMP := $(VENV)/.installed-docs
SPHINX := $(PY) -m sphinx -W --keep-going -b html docs docs/_build/html

.PHONY: demo test test-fast venv clean bench docs docs-quick docs-clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -e ".[test,bench,dask,parquet,river,cli]"
	touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	$(PY) -m kernelstream.demo

test: $(STAMP)
	$(PY) -m pytest -q -n 2 --durations=15

test-fast: $(STAMP)
	$(PY) -m pytest -q -n 2 -m "not slow" --durations=15

bench: $(STAMP)
	$(PY) -m benchmarks.synthetic

$(DOCS_STAMP): $(STAMP)
	$(PY) -m pip install --quiet -e ".[docs]"
	touch $(DOCS_STAMP)

docs: $(DOCS_STAMP) docs-clean
	$(SPHINX)

docs-quick: $(DOCS_STAMP) docs-clean
	KERNELSTREAM_DOCS_QUICK=1 $(SPHINX)

docs-clean:
	rm -rf docs/_build docs/auto_examples docs/api/generated docs/api/backreferences \
		docs/results docs/sg_execution_times.rst

clean: docs-clean
	rm -rf $(VENV) build *.egg-info src/*.egg-info
