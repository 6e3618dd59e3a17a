# The two commands a fresh machine needs:  make grade  (grade assignments/)  and  make test  (the course's tests).
# Each creates .venv from the pinned versions in pyproject.toml on first use, and reuses it after.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: grade test lab doctor release release-check bench solutions clean-venv

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[dev]"
	@touch $(STAMP)

# The tests also run the course's kernels inside a Hugging Face model: transformers, an optional extra that
# grading never needs, is installed for `make test` only.
$(VENV)/.installed-hf: $(STAMP)
	$(PY) -m pip install --quiet -e ".[dev,hf]"
	@touch $@

grade: $(STAMP)  ## grade your kernels in assignments/ (CPU tier without a GPU, GPU tier with one)
	$(PY) -m autograder grade $(ARGS)

# Two processes: the tests wait on grader subprocesses much of the time. A file's tests (a notebook's cells)
# stay together in one process (--dist loadfile).
test: $(VENV)/.installed-hf  ## the course's own tests, notebooks included
	$(PY) -m pytest -n 2 --dist loadfile --nbval-lax $(ARGS)

lab: $(STAMP)  ## open the notebooks in JupyterLab
	$(VENV)/bin/jupyter lab notebooks/

doctor: $(STAMP)  ## check the install
	$(PY) -m autograder doctor

solutions: $(STAMP)  ## grade the reference solutions
	$(PY) -m autograder grade --solutions $(ARGS)

release: $(STAMP)  ## instructors: write assignments/ and notebooks/ from solutions/
	$(PY) -m autograder release

release-check: $(STAMP)
	$(PY) -m autograder release --check

bench: $(STAMP)  ## instructors, on a GPU: time the solutions against PyTorch
	$(PY) -m autograder bench $(ARGS)

clean-venv:
	rm -rf $(VENV)
