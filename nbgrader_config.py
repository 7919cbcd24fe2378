"""The course's nbgrader configuration: edit course_id, the exchange and the database here."""
import os

ROOT = os.path.dirname(os.path.abspath(__file__))

c = get_config()  # noqa: F821  (nbgrader provides get_config when it loads this file)

c.CourseDirectory.course_id = os.environ.get("COURSE_ID", "dlsys")
c.CourseDirectory.root = ROOT
c.CourseDirectory.source_directory = "source"
# Students and self-paced learners open assignments/, so nbgrader releases there.
c.CourseDirectory.release_directory = "assignments"
# SQLite needs nothing running; several graders at once can point this at PostgreSQL.
c.CourseDirectory.db_url = os.environ.get("COURSE_DB_URL", f"sqlite:///{ROOT}/gradebook.db")
c.Exchange.root = os.environ.get("COURSE_EXCHANGE", "/srv/nbgrader/exchange")

c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
c.ClearSolutions.text_stub = "YOUR ANSWER HERE"
c.ExecutePreprocessor.timeout = 300

# Grading: the hidden suites in autograder/ grade outside the student's kernel (see
# course_tools/grading). HiddenSuiteGrader takes the place of nbgrader's Execute step.
from nbconvert.preprocessors import ClearMetadataPreprocessor  # noqa: E402
from nbgrader.preprocessors import (AssignLatePenalties, CheckCellMetadata, IgnorePattern,  # noqa: E402
                                    LimitOutput, SaveAutoGrades)

from course_tools.grading.nbgrader.plugin import HiddenSuiteGrader  # noqa: E402

c.Autograde.autograde_preprocessors = [HiddenSuiteGrader, IgnorePattern, ClearMetadataPreprocessor, LimitOutput,
                                       SaveAutoGrades, AssignLatePenalties, CheckCellMetadata]
# A graded cell missing from a submission (deleted, or a task an earlier release version lacked) is
# restored where the release has it; nbgrader's own OverwriteCells stops with a KeyError on some.
# A flagged cell without a grade_id (the student deleted it) loses its flags first, where nbgrader's own
# DeduplicateIds stops with a KeyError; the restore step then puts the release's graded cells back.
from nbgrader.preprocessors import ClearOutput, OverwriteKernelspec  # noqa: E402

from course_tools.grading.nbgrader.dedupe_ids import DeduplicateIdsSafely  # noqa: E402
from course_tools.grading.nbgrader.restore_cells import RestoreGradedCells  # noqa: E402

c.Autograde.sanitize_preprocessors = [ClearOutput, DeduplicateIdsSafely, OverwriteKernelspec, RestoreGradedCells,
                                      CheckCellMetadata]
c.HiddenSuiteGrader.timeout = 0  # seconds one notebook may take in all; 0: what its time budgets allow
# Without bubblewrap, grading refuses to start; set True to grade anyway, unisolated (not recommended).
c.HiddenSuiteGrader.unsandboxed = False
# What one submission's sandboxed worker may use (course_tools/grading/sandbox/bwrap.py). These travel
# as environment variables to the grading processes; on Dask workers set them in their environment.
os.environ.setdefault("COURSE_GRADER_MEMORY_MB", "2048")   # address space; all its processes: 1.5x
os.environ.setdefault("COURSE_GRADER_CPU_SECONDS", "300")
os.environ.setdefault("COURSE_GRADER_PROCESSES", "32")
# Late work: each started day late costs 10% of the notebook's score (course_tools/late_penalty.py).
c.AssignLatePenalties.plugin_class = "course_tools.late_penalty.PercentPerDay"
c.PercentPerDay.percent_per_day = 10
c.PercentPerDay.max_percent = 100
# Collecting (formgrader's Collect button, `nbgrader collect`) as `course collect` does: regular files
# only, each folder owned by the student it names, the time from the exchange (course_tools/inbound.py).
c.ExchangeFactory.collect = "course_tools.exchange_collect.CourseCollect"
# Releasing (formgrader's Release button, `nbgrader release_assignment`) through `course release`:
# its checks, the version record and labels (course_tools/exchange_release.py).
c.ExchangeFactory.release_assignment = "course_tools.exchange_release.CourseRelease"
# Releasing feedback (formgrader's Release Feedback button, `nbgrader release_feedback`) as `course
# feedback` does: not to a classmate while a student with an extension can still submit
# (course_tools/exchange_feedback.py).
c.ExchangeFactory.release_feedback = "course_tools.exchange_feedback.CourseReleaseFeedback"
# grades.csv with its scores rounded as formgrader shows them (course_tools/grades_csv.py).
c.ExportApp.plugin_class = "course_tools.grades_csv.RoundedCsvExport"
# A graded cell a student deleted comes back (and scores what the hidden suite says).
c.OverwriteCells.add_missing_cells = True
# Feedback pages and formgrader's view of a submission render the student's markup: only an
# allow-list of it reaches a browser (course_tools/markup.py), never a script, handler or frame.
c.HTMLExporter.sanitize_html = True
c.HTMLExporter.filters = {"markdown2html": "course_tools.markup.SanitizedMarkdown",
                          "clean_html": "course_tools.markup.clean_html"}
c.HTMLExporter.preprocessors = ["course_tools.markup.TemplateFieldsEscaped"]
# Their math is typeset by the MathJax the Jupyter server itself serves, not a CDN (course_tools/mathjax.py).
from course_tools.mathjax import template_basedirs  # noqa: E402

c.HTMLExporter.extra_template_basedirs = template_basedirs()
