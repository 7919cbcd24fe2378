# Two commands on a fresh machine: `make demo` and `make test`. Both create .venv first.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: venv prerequisites-demo prerequisites-test demo test docs bench bench-grading gpu-check course student-package hub hub-update hub-test hub-screenshots report-screenshot clean

venv: $(STAMP)

# torch==2.13.0 is pinned here (not in pyproject's range) because it installs the CPU build
# from this workplace's local disk; a bare range would pull a multi-GB CUDA build.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -e '.[test,hub,docs]'
	touch $(STAMP)

# What the machine must provide, checked before anything long runs (course_tools/prerequisites.py):
# as root with apt-get it installs what is missing, as .ci/run does; otherwise it stops at once,
# naming each missing piece and the command that installs it.
prerequisites-demo prerequisites-test: prerequisites-%:
	@$(PYTHON) -m course_tools.prerequisites $*

# A simulated class end to end (build, release, submissions, grading, feedback); a few minutes.
demo: prerequisites-demo
	@$(MAKE) --no-print-directory venv
	$(VENV)/bin/course demo

# Two pytest processes by default (pytest-xdist; TEST_WORKERS=0 runs in one), each taking whole test
# files, so a file's fixtures are built once; tests/conftest.py starts the longest files first, by
# tests/file_seconds.json, which `python tests/file_seconds.py .pytest-junit.xml` regenerates from
# the junit XML written here.
TEST_WORKERS ?= 2
test: prerequisites-test
	@$(MAKE) --no-print-directory venv
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder --junitxml=.pytest-junit.xml

# The documentation site into docs/_build/html: warnings are errors, internal links and anchors checked;
# the reference pages (commands, environment variables, settings) are generated from the code.
docs: venv
	$(VENV)/bin/sphinx-build -W --keep-going -q -b html docs docs/_build/html
	@echo "open docs/_build/html/index.html"

# Rebuild assignments/ and solutions/ from source/ (releases with nbgrader, solutions executed).
course: venv
	$(PY) -m course_tools.build

# The student install (a wheel, and the folder it is built from) into dist/student: what a hub's
# students get instead of this repository. See course_tools/student_package.py.
student-package: venv
	$(VENV)/bin/course student-package --out dist/student

# The course on a JupyterHub on localhost with demo accounts (hub/roster.csv), an assignment
# released; prints the address and the logins. Ctrl-C stops it and removes the accounts.
# Needs root and configurable-http-proxy (npm install -g configurable-http-proxy).
hub: venv
	$(PY) -m course_tools.hub

# A fix made in this checkout (after `course build ID`) into the running hub of `make hub`, which
# keeps its semester: the bundle copy, the students' install if it changed, the course's services
# started again; then `course release ID` in the course's terminal (docs/hub.md).
hub-update: venv
	$(PY) -m course_tools.hub.update

# The end-to-end browser test on that hub alone (a few minutes; Debian's chromium).
hub-test: venv
	$(PY) -m pytest -q tests/test_hub.py

# The same test, writing the documentation's screenshots into docs/.
hub-screenshots: venv
	COURSE_HUB_SCREENSHOTS=docs $(PY) -m pytest -q tests/test_hub.py

# Conv (all presets), pooling and the demo CNN's step against PyTorch: with the default threads,
# then single-threaded (the steadier figures on a shared machine). About 2 minutes.
# The instructor report's picture in the docs (docs/report.png), from the tests' simulated class.
report-screenshot: venv
	COURSE_REPORT_SCREENSHOT=docs $(PY) -m pytest -q tests/test_course_workflow.py -k report_page

bench: venv
	$(PY) benchmarks/bench_conv.py --all
	OPENBLAS_NUM_THREADS=1 $(PY) benchmarks/bench_conv.py --all --threads 1
	$(PY) benchmarks/bench_layers.py
	OPENBLAS_NUM_THREADS=1 $(PY) benchmarks/bench_layers.py --threads 1

bench-grading: venv
	$(PY) benchmarks/bench_grading.py

# On a GPU machine with CuPy: the CUDA tests, the demo CNN on cuda and the conv benchmark on cuda
# vs PyTorch, one summary, under 8 minutes. Installs nothing (so no `venv` prerequisite: it uses
# .venv when there is one). Exit 1 on any failure, 2 where there is no GPU with CuPy.
gpu-check:
	$(if $(wildcard $(PY)),$(PY),$(PYTHON)) benchmarks/gpu_check.py

clean:
	rm -rf $(VENV) .pytest_cache demo-course dist
