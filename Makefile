# The two commands: `make demo` (the main job) and `make test` (the whole suite).
# Both create .venv on first use; CPU torch is installed before the package so that
# pip never pulls the CUDA build.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: demo test venv clean bench

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -e ".[test,bench,river,cli]"
	touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	$(PY) -m kernelstream.demo

test: $(STAMP)
	$(PY) -m pytest -q -n 2 --durations=15

bench: $(STAMP)
	$(PY) -m benchmarks.synthetic

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info
