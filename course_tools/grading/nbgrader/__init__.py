"""nbgrader's side: the autograde preprocessor that grades through the hidden suites
(plugin.py: HiddenSuiteGrader) and the sanitize steps that clear the flags of a cell without a grade_id
(dedupe_ids.py) and restore deleted graded cells (restore_cells.py). A course folder's nbgrader_config.py
names all three.

The top of grading: may import any of it (launch/, route, results, target, suite/, settings).
"""
