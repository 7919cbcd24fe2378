"""nbgrader's side: the autograde preprocessor that grades through the hidden suites
(plugin.py: HiddenSuiteGrader) and the sanitize step that restores deleted graded cells
(restore_cells.py). A course folder's nbgrader_config.py names both.

The top of grading: may import any of it (launch/, route, results, target, suite/, settings).
"""
