"""What the instructor learns from a graded assignment: `course report` and `course similarity`.

    data.py        the gradebook, the stored hidden-suite results and the grading-error record
    stats.py       per task, per hidden check, per student; the signals an instructor acts on
    similarity.py  pairs of submissions whose solution code is suspiciously alike (winnowing)
    figures.py     the report's charts, as embedded PNGs
    page.py        the self-contained HTML pages
    grading_log.py who entered each hand-given grade (formgrader does not record it)
"""
