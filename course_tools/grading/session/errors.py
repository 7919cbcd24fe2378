"""What can go wrong in a grading, by whose fault it is: the student's code (StudentError, and
WorkerTimeout, its kind for a worker that did not answer in time: a failed check) or the
grader's machinery (GradingError: a grading error, never a stored score). Their own module so
that the readers (expect.py) and the session both raise them without importing each other."""


class StudentError(Exception):
    """The student's code failed, or returned something that cannot be graded."""


class WorkerTimeout(StudentError):
    """The worker did not answer in time (it was stopped)."""


class GradingError(Exception):
    """The grader could not grade: a failure of the grading machinery, never the student's."""
