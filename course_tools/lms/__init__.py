"""The course inside the institution's LMS through LTI 1.3 Advantage (issue 42): the roster
from the platform (NRPS), the grades to it (AGS), and the import files where there is no LTI.

    registration.py  c.LMS in nbgrader_config.py: the platform's registration, checked (LmsError)
    keys.py          the tool's private key: made 0600 outside the bundle and the exchange, refused when exposed
    accounts.py      a platform user id -> a safe account name (the gradebook's student id)
    connector.py     PyLTI1p3's service connector with the fixes this course needs (token expiry, timeouts, paging)
    ledger.py        the course database's tables: members, line items, what each score post sent and its answer
    scores.py        each student's final score as `course export` writes it, as an AGS score
    lineitem.py      the assignment's grade column (AGS line item): the recorded one, the platform's, or a new one
    push.py          `course lms push`: what changed since the ledger, posted once, resumable
    progress.py      the grading service's progress posts (c.LMS.post_progress): Submitted, Pending or
                     PendingManual, never a score, never after the push (service/progress.py runs them)
    roster.py        `course lms roster`: NRPS members -> gradebook students; a drop marked inactive
    import_csv.py    `course export --format canvas|moodle`: the LMSs' own grade import files
    summary.py       what `course status` and `course report` say of the LMS: what it holds, what the next
                     push would send, the progress posts
    launch_urls.py   where the hub serves the LTI launch (login initiation, redirect, target link URIs)

The hub's login from the LMS (the LTI 1.3 launch) is course_tools/hub/lti_login.py and
lti_settings.py: it uses accounts.py's names and roster.py's roles.

Layers, top down (pyproject.toml's contract checks them): summary, then push | roster | progress, then lineitem,
then import_csv | scores | ledger | connector, then keys | accounts, then registration | launch_urls.
PyLTI1p3, SQLAlchemy and nbgrader are imported inside the functions that need them, so that
`course --help` stays quick (tests/test_cli_startup.py). Nothing here logs or prints a token.
"""
