# Hands-on JAX. Two entry points on a fresh machine:
#   make book   build the website into _build/html, the Chinese edition into _build/html/zh
#   make test   run the whole test suite (nbval, structure, ruff, site, browser)
#   make test-compat   run every chapter alone with Colab's versions (Python 3.13, JAX 0.7.2)
SHELL := /bin/bash
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export JAXBOOK_DATA ?= $(CURDIR)/data
SHARED_MNIST ?= $(CURDIR)/../shared/data/mnist
SHARED_SHAKESPEARE ?= $(CURDIR)/../shared/data/tinyshakespeare
MNIST_FILES := train-images-idx3-ubyte.gz train-labels-idx1-ubyte.gz t10k-images-idx3-ubyte.gz t10k-labels-idx1-ubyte.gz
# Stable hashing, so nothing in an output depends on a random seed.
export PYTHONHASHSEED := 0

.PHONY: help install data book test test-compat test-isa test-tpu-vm test-aot aot-record test-mutants tpu-run conclusions lint bench bench-gpt execute execute-all clean

help:
	@echo "make book    build the website into _build/html"
	@echo "make test    run every test (installs what it needs)"
	@echo "make test-compat   run every chapter alone with Colab's versions (.venv-colab)"
	@echo "make test-isa      re-run the training chapters with XLA capped at another instruction set"
	@echo "make test-tpu-vm   walk the TPU VM path (install script from Python 3.10, Jupyter server)"
	@echo "make test-aot      compile chapter 16's strategies for TPU slices (libtpu, .venv-aot); check the cost model"
	@echo "make test-mutants  plant each fault of tests/mutants/ in its chapter; every one must be caught"
	@echo "make tpu-run CHAPTERS=\"02 03\"  on a TPU: run chapters, record them in tests/tpu_record.json"
	@echo "make conclusions PLATFORM=cpu CHAPTERS=\"08 10\"  record each asserted comparison's margin (tests/conclusions.json)"
	@echo "make bench   run the Part II training benchmark"
	@echo "make bench-gpt  run chapter 18's GPT-step benchmark"
	@echo "make execute NB=notebooks/01_jax_numpy.ipynb   re-run one notebook in place"
	@echo "make clean   remove the build, the venv and the data copy"

# .venv needs Python >= 3.12 (jax 0.12): dev/find_python.sh finds or installs one, and an
# older .venv is replaced.
$(STAMP): requirements.txt
	@if ! $(BIN)/python -c 'import sys; sys.exit(sys.version_info[:2] < (3, 12))' 2>/dev/null; then \
	  PY=$$(bash dev/find_python.sh) && rm -rf $(VENV) && echo "creating $(VENV) with $$PY" \
	  && "$$PY" -m venv $(VENV); \
	fi
	$(BIN)/python -m pip install --quiet -r requirements.txt
	touch $(STAMP)

install: $(STAMP)

# Seed the data root from ../shared/data (MNIST, Tiny Shakespeare) when it exists, so
# nothing is downloaded.
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
	@if [ -f "$(SHARED_SHAKESPEARE)/input.txt" ]; then \
	  mkdir -p "$(JAXBOOK_DATA)/tinyshakespeare"; \
	  [ -f "$(JAXBOOK_DATA)/tinyshakespeare/input.txt" ] \
	    || cp "$(SHARED_SHAKESPEARE)/input.txt" "$(JAXBOOK_DATA)/tinyshakespeare/input.txt"; \
	  chmod u+w "$(JAXBOOK_DATA)/tinyshakespeare/input.txt"; \
	  echo "Tiny Shakespeare seeded from $(SHARED_SHAKESPEARE)"; \
	else \
	  echo "No $(SHARED_SHAKESPEARE): Part IV's GPT chapters will download it into $(JAXBOOK_DATA)"; \
	fi

# The English site into _build/html, then the Chinese edition (book root zh/) into
# _build/html/zh, where the language switch on every page expects it.
# A build that started from nothing (every page read) leaves a stamp that lets `make test`
# reuse it while no file changes (dev/site_stamp.py).
book: $(STAMP)
	@rm -f _build/html/.built-from
	$(eval BOOK_FULL := $(if $(wildcard _build/.doctrees zh/_build/.doctrees),,yes))
	$(eval BOOK_START := $(shell date +%s))
	$(BIN)/jupyter-book build . --toc book/_toc.yml --config _config.yml -W -n --keep-going
	$(BIN)/jupyter-book build zh -W -n --keep-going  # its own zh/_toc.yml and zh/_config.yml
	rm -rf _build/html/zh && cp -r zh/_build/html _build/html/zh
	$(if $(BOOK_FULL),$(BIN)/python dev/site_stamp.py write $$(( $$(date +%s) - $(BOOK_START) )))

lint: $(STAMP)
	$(BIN)/ruff check notebooks benchmarks tests tools dev book/_ext

# TEST_ARGS: more pytest arguments (.ci/run leaves out the chapters its `make test-isa` compares)
test: $(STAMP) data
	bash dev/ensure_chromium.sh
	$(BIN)/python -m pytest $(TEST_ARGS)

# Every chapter alone in an empty folder, with Colab's versions on Python 3.13
# (requirements-colab.txt); any error cell fails. Outputs are not compared.
# COMPAT_ARGS="--recorded 08 09 10": those chapters only where the conclusions table has no
# Colab run of their current code (dev/run_compat.py; CI passes it).
test-compat: data
	bash dev/compat_venv.sh
	.venv-colab/bin/python dev/run_compat.py $(COMPAT_ARGS)

# The chapters whose stored results depend on floating-point order, re-executed with XLA's
# CPU code capped at another instruction set (SSE4_2 unless told: ISA=AVX) and compared
# with the stored outputs through the same tolerance plugin as `make test`.
ISA ?= SSE4_2
ISA_CHAPTERS ?= notebooks/07_mlp_from_scratch.ipynb notebooks/08_optax_training.ipynb \
  notebooks/10_fast_tuned_recipe.ipynb notebooks/14_jax_ai_stack.ipynb \
  notebooks/15_small_gpt.ipynb notebooks/16_sharding_transformer.ipynb
test-isa: $(STAMP) data
	XLA_FLAGS="$$XLA_FLAGS --xla_cpu_max_isa=$(ISA)" $(BIN)/python -m pytest $(ISA_CHAPTERS)

# The TPU VM path for real, without a TPU: tools/tpu_vm_install.sh from a Python-3.10-only
# PATH (a uv shim hands over a local 3.12), jax[tpu] with libtpu, a Jupyter server that runs
# chapter 1. About 3 minutes and a second .venv of ~7 GB in a temporary folder, removed after.
test-tpu-vm: $(STAMP) data
	$(BIN)/python dev/tpu_vm_walk.py

# Chapter 16's strategies compiled ahead of time for TPU slices by libtpu's compiler on this
# CPU (dev/aot_tpu.py, in .venv-aot, which dev/aot_venv.sh builds: the book's .venv never gets
# libtpu). `make aot-record` compiles every strategy for every slice (about 14 minutes of one
# core) into the committed record tests/aot_tpu.json, which tests/test_aot_tpu.py checks against
# the chapter's cost model (in `make test`; CONTRIBUTING.md, "Chapter 16 against the TPU
# compiler"). Run it when chapter 16's cells that the tool executes, the tool or the pins change:
# the record names their hashes and versions, and a stale one fails the test. `make test-aot`
# (CI) compiles a sample again, one strategy on each slice plus its remat choice on the v5e-8,
# requires each to equal the committed record's (`--compare`, timings aside), then runs the
# checks on the record. One libtpu process at a time: the compiles run one after another in one
# process. ALLOW_MULTIPLE_LIBTPU_LOAD: the compiles use no chip, so they do not take libtpu's
# lock on the chips (/tmp/libtpu_lockfile), which another process of this machine (the TPU VM
# walk's kernel) may hold. The multi-host v4 slice is a manual option of dev/aot_tpu.py
# (--topology v4:2x2x4; the cost model has no row for it: its records are printed, not checked).
AOT_RECORD := tests/aot_tpu.json
AOT_TOPOLOGIES ?= v5e:2x4 v6e:2x4 v4:2x2x1
AOT_STRATEGIES ?= "data parallel" "FSDP (annotated)" "tensor + sequence" "2-D (data x model)" \
  "FSDP x tensor"
AOT_SAMPLE ?= "tensor + sequence"
AOT_RUN = JAX_PLATFORMS=cpu TPU_SKIP_MDS_QUERY=1 ALLOW_MULTIPLE_LIBTPU_LOAD=1 .venv-aot/bin/python \
  dev/aot_tpu.py --topology $(AOT_TOPOLOGIES) --remat-choice v5e:2x4
aot-record: $(STAMP)
	bash dev/aot_venv.sh
	$(AOT_RUN) --strategy $(AOT_STRATEGIES) --json $(AOT_RECORD)
	JAXBOOK_AOT_JSON=$(AOT_RECORD) $(BIN)/python -m pytest tests/test_aot_tpu.py

test-aot: $(STAMP)
	bash dev/aot_venv.sh
	$(AOT_RUN) --strategy $(AOT_SAMPLE) --compare $(AOT_RECORD) --json _build/aot/sample.json
	JAXBOOK_AOT_JSON=$(AOT_RECORD) $(BIN)/python -m pytest tests/test_aot_tpu.py

# On a TPU (a TPU VM set up by tools/tpu_vm_install.sh): run chapters, each in a process of
# its own (one process holds the chip), and put the runs into tests/tpu_record.json, which
# tests/test_tpu_record.py checks (README, "Testing on a TPU"). CHAPTERS="02 03" (all by
# default); TPU_BUDGET=540 starts no chapter that no longer fits in that many seconds.
TPU_OUT ?= _build/tpu
tpu-run: $(STAMP) data
	$(BIN)/python dev/tpu_run.py --out $(TPU_OUT) $(if $(TPU_BUDGET),--budget $(TPU_BUDGET)) $(CHAPTERS)
	$(BIN)/python dev/tpu_record.py merge $(TPU_OUT)/tpu_bundle.json
	$(BIN)/python dev/tpu_record.py summary

# Each asserted comparison's margin on one platform, into tests/conclusions.json
# (dev/conclusions.py; CONTRIBUTING.md, "Conclusions across platforms"). For example
#   make conclusions PLATFORM=cpu-avx ENV="XLA_FLAGS=--xla_cpu_max_isa=AVX" CHAPTERS="08 10"
#   make conclusions PLATFORM=colab PY=.venv-colab/bin/python CHAPTERS=14
PLATFORM ?= cpu
conclusions: $(STAMP) data
	$(BIN)/python dev/conclusions.py matrix --platform $(PLATFORM) $(if $(ENV),--env $(ENV)) $(if $(PY),--python $(PY)) --data "$(JAXBOOK_DATA)" $(CHAPTERS)
	$(BIN)/python dev/conclusions.py report

# Mutation testing: each planted fault of tests/mutants/NN_name.json is applied to a fresh
# copy of its chapter, whose nbval test (or, for prose, the prose-number check) must then
# fail. MUTANTS_ARGS=--ci runs the CI subset, --chapter 08 one chapter, --only ID one fault.
test-mutants: $(STAMP) data
	$(BIN)/python dev/mutants.py $(MUTANTS_ARGS)

# The Part II benchmark (a measurement: exit code 0 whatever its targets say);
# `make bench BENCH_ARGS=--check` exits 1 when a target is not met.
bench: $(STAMP) data
	$(BIN)/python benchmarks/train_mnist.py $(BENCH_ARGS)

# Chapter 18's benchmark: chapter 15's GPT step before and after the profile's fixes
# (a measurement: exit code 0; its target and verdict: benchmarks/gpt_step_targets.py).
bench-gpt: $(STAMP) data
	$(BIN)/python benchmarks/gpt_step.py $(BENCH_ARGS)

# Re-run a notebook top to bottom in a fresh kernel and store its outputs.
execute: $(STAMP) data
	$(BIN)/python dev/execute_notebook.py $(NB)

execute-all: $(STAMP) data
	$(BIN)/python dev/execute_notebook.py notebooks/*.ipynb

clean:
	rm -rf _build zh/_build $(VENV) .venv-colab .venv-aot data notebooks/data .pytest_cache .ruff_cache
