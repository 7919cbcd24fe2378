"""The grading service (`course serve`): each submission graded as it lands in the exchange.

    intake.py    finds new submissions in the exchange's inbound/ (through inbound.py, which
                 trusts nothing a student controls), copies each into the course folder and
                 enqueues it; watcher.py wakes it on filesystem events, a rescan catches the rest
    queue.py     the durable queue: one row per submission in the course's own database (the
                 gradebook's db_url, SQLite or PostgreSQL), claimed by one service process at a time
    hosts.py     each serving host's heartbeat (course_grading_hosts): the lease its rows keep while
                 it lives, which host is dead, for `course status`, and which one publishes the
                 pending pages; heartbeat.py beats it
    claimants.py the name of a claiming process (host:pid:start:random) and whether it is known dead
    policy.py    the instructor's policy per assignment (nbgrader_config.py's c.GradingService)
    worker.py    claims a row, applies the policy, grades it through route.grade_one (pool's
                 fork server), and publishes what the student may see
    dispatch.py  where one notebook is graded: a process forked here, or a task on a Dask cluster
    pages.py     the feedback pages (checks, scores, pending, not graded yet), all text escaped
    publish.py   puts a page where nbgrader's fetch_feedback finds it (the exchange's feedback/,
                 named by nbgrader's notebook_hash of the submission's secret)
    deadline_api.py  GET <prefix>deadlines: the hub-authenticated student's own deadlines as JSON
                 (for their `course fetch` / `course submit` and Assignments tab), nobody else's
    serve.py     the long-running process: intake, workers, restart recovery
    stats.py     what `course status` and `course report` show of the queue
    progress.py  the LMS's view of each submission (c.LMS.post_progress): "Submitted" and
                 "Pending"/"PendingManual" posted by a thread of its own (lms/progress.py), never
                 a score, never after `course lms push`

The final grading (`course collect`, `course grade`) is unchanged: it reads the same inbound
folders and, for the same notebook, finds the result the service stored (results.py's key).
"""
