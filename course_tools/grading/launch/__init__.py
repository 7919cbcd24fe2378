"""Where gradings run, each through route.grade_one: a fork-server pool whose children start
with the grading modules loaded (pool.py, preload.py), a fresh ``python -m
course_tools.grading.suite`` process (runner.py), the same fork server on each Dask worker
(on_dask.py), and the fan-out over a class, locally or on Dask (fanout.py).

May import: route, suite/, results, settings and below; never api or nbgrader/.
"""
