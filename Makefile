# Hands-on JAX. Two entry points on a fresh machine:
#   make book   build the website into _build/html (warnings are errors)
#   make test   run the whole test suite (nbval, structure, ruff, site, browser)
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export JAXBOOK_DATA ?= $(CURDIR)/data
SHARED_MNIST ?= $(CURDIR)/../shared/data/mnist
MNIST_FILES := train-images-idx3-ubyte.gz train-labels-idx1-ubyte.gz t10k-images-idx3-ubyte.gz t10k-labels-idx1-ubyte.gz
# Stable hashing, so nothing in an output depends on a random seed.
export PYTHONHASHSEED := 0

.PHONY: help install data book test lint bench execute execute-all clean

help:
	@echo "make book    build the website into _build/html"
	@echo "make test    run every test (installs what it needs)"
	@echo "make bench   run the Part II training benchmark"
	@echo "make execute NB=notebooks/01_jax_numpy.ipynb   re-run one notebook in place"
	@echo "make clean   remove the build, the venv and the data copy"

$(STAMP): requirements.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet -r requirements.txt
	touch $(STAMP)

install: $(STAMP)

# Seed the MNIST root from ../shared/data/mnist when it exists, so nothing is downloaded.
data:
	@mkdir -p "$(JAXBOOK_DATA)/MNIST/raw"
	@if [ -d "$(SHARED_MNIST)" ]; then \
	  for f in $(MNIST_FILES); do \
	    [ -f "$(JAXBOOK_DATA)/MNIST/raw/$$f" ] || cp "$(SHARED_MNIST)/$$f" "$(JAXBOOK_DATA)/MNIST/raw/$$f"; \
	  done; \
	  chmod u+w "$(JAXBOOK_DATA)/MNIST/raw/"*; \
	  echo "MNIST root $(JAXBOOK_DATA) seeded from $(SHARED_MNIST)"; \
	else \
	  echo "No $(SHARED_MNIST): the notebooks will download MNIST into $(JAXBOOK_DATA)"; \
	fi

book: $(STAMP)
	$(BIN)/jupyter-book build . --toc book/_toc.yml --config _config.yml -W -n --keep-going

lint: $(STAMP)
	$(BIN)/ruff check notebooks benchmarks tests tools book/_ext

test: $(STAMP) data
	bash tools/ensure_chromium.sh
	$(BIN)/python -m pytest

bench: $(STAMP) data
	$(BIN)/python benchmarks/train_mnist.py

# Re-run a notebook top to bottom in a fresh kernel and store its outputs.
execute: $(STAMP) data
	$(BIN)/python tools/execute_notebook.py $(NB)

execute-all: $(STAMP) data
	$(BIN)/python tools/execute_notebook.py notebooks/*.ipynb

clean:
	rm -rf _build $(VENV) data notebooks/data .pytest_cache .ruff_cache
