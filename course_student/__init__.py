"""The student side of the `course` command: fetch, submit and check.

This package is what a student's environment runs, and it ships in the student install
(`course student-package`, see course_tools/student_package.py) next to a course_lib whose
solution regions are all stubbed. It therefore imports nothing but course_lib.tasks, nbgrader,
nbformat, nbclient and the standard library: never course_tools, the hidden suites
(autograder/), solutions/ or source/. The full bundle's `course` command takes its student
commands from here, so students and instructors run the same code.

    errors.py        CourseError (a message that says what to do) and check_assignment
    env.py           the environment nbgrader and kernels run in
    nbgrader_run.py  `nbgrader <step>` as a subprocess, its errors picked out of the log
    check.py         `course check`: a notebook's visible checks, in a fresh kernel
    check_report.py  what `course check` found, and the report printed from it
    times.py         moments as students read them (UTC and the course's zone, "2 hours")
    deadlines.py     the student's own deadlines, asked of the course's grading service
    lab_deadlines.py the same for the Assignments tab: a Jupyter server extension of their server
    lab_landing.py   where a launch from the LMS lands: the assignment fetched and open (server extension)
    commands.py      fetch, submit, check as the command line runs them
    cli.py           the student commands' arguments, and the student-only `course` command
"""

import sys

# jsonschema (under nbformat) imports rfc3987_syntax when it is installed, and that module builds
# a parser for the IRI grammar at import: 1-4 s of every `course` command. Neither nbformat's
# schema nor any command here checks an IRI format, and jsonschema leaves that format out when the
# import fails, which a None entry in sys.modules makes it do. Only where nothing imported it yet.
sys.modules.setdefault("rfc3987_syntax", None)
