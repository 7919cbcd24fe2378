"""The worker process of a session: start it in the sandbox, run the notebook's cells in it,
read its next message, and stop it (and everything it started), saying whose fault a failure is.

A mixin of StudentSession (session.py): it uses the session's settings (limits, timeouts), its
job folder and cgroup, and the time budget's CPU count (budget.py) while it waits.
"""
from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

from ..sandbox import bwrap as sandbox
from ..sandbox.cgroups import Cgroup
from .channel import Channel, ChannelClosed, ChannelGarbage, ChannelTimeout
from .errors import GradingError, StudentError, WorkerTimeout

READY_TIMEOUT_S = 60


class WorkerProcess:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        self._stop()
        if self.job is not None:
            self.job.remove()
            self.job = None

    def _stop(self):
        if self.process is None:
            return
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        if self.cgroup is not None:
            self._cpu_of_past_workers += self.cgroup.cpu_seconds() or 0.0
            self.cgroup.remove()  # every process the worker started, daemons included
            self.cgroup = None
        self.process.wait()
        if self.channel is not None:
            self.channel.close()
            self.channel = None
        if self.kind == "unsandboxed":
            for path in sandbox.scratch_files_of(self.account, self._started_at):
                _remove(path)
        self.process = None

    def _start(self, budget: float):
        """Start a worker and run the notebook's cells in it, within ``budget`` seconds (the load
        timeout for the first start; what the current task has left for a restart)."""
        if self.broken:
            raise GradingError(self.broken)
        if self.fatal:
            raise StudentError(self.fatal)
        began = time.monotonic()  # the sandbox's set-up counts as its start
        try:
            self.kind = sandbox.sandbox_kind(self.unsandboxed)
            self.account = sandbox.grading_account()
            if self.job is None:
                self.job = sandbox.JobFolder(self.assignment, self.cells, self.cell_timeout, self.account,
                                             self.limits.wall_factor, course_lib=self.student_lib)
            if self.kind == "unsandboxed":
                self.job.fresh_work_folder(self.account)
            self.cgroup = (Cgroup(self.limits.processes, self.limits.cgroup_memory_bytes, self.limits.cpus)
                           if Cgroup.available() else None)
            if self.kind == "unsandboxed" and (self.cgroup is None or not self.cgroup.holds_processes()):
                raise sandbox.SandboxUnavailable(
                    "grading without bubblewrap needs a cgroup to kill every process a submission starts, and this "
                    "machine does not let the grader create one (run it as root, or install bubblewrap)")
        except sandbox.SandboxUnavailable as err:
            self.broken = str(err)
            raise GradingError(self.broken) from None
        self.starts += 1
        self._started_at = time.time()
        request_read, request_write = os.pipe()
        response_read, response_write = os.pipe()
        command = sandbox.worker_command(self.kind, self.job, self.account, request_read, response_write, self.limits)
        try:
            self.process = subprocess.Popen(
                command, pass_fds=(request_read, response_write), env=sandbox.worker_env(self.kind, self.job),
                cwd="/", stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                preexec_fn=sandbox.preexec(self.limits, self.cgroup, self.account, self.kind == "unsandboxed"))
        except OSError as err:
            self.broken = f"the grading worker could not be started: {err}"
            raise GradingError(self.broken) from None
        finally:
            os.close(request_read)
            os.close(response_write)
        self.channel = Channel(response_read, request_write)
        # Until "ready", only the grader's own code has run: any failure is ours, not the student's.
        try:
            ready = self.channel.receive(time.monotonic() + READY_TIMEOUT_S)
            if not (isinstance(ready, dict) and ready.get("type") == "ready"):
                raise ChannelGarbage("an unexpected first message")
        except (ChannelClosed, ChannelTimeout, ChannelGarbage) as err:
            why = self._stderr_tail()
            self._stop()
            self.broken = f"the sandboxed grading worker did not start ({err}): {why or 'no message'}"
            raise GradingError(self.broken) from None
        self.process.stderr.close()
        self.timing["start"] += time.monotonic() - began
        began = time.monotonic()
        cut_short = budget < self.load_timeout
        limit = min(self.load_timeout, budget)
        deadline = time.monotonic() + limit * self.limits.wall_factor
        try:
            loaded = self._receive(deadline, "running the notebook's code cells", loading=not cut_short,
                                   cpu_seconds=limit)
        except WorkerTimeout:
            if cut_short:
                raise self._out_of_time() from None
            raise
        if not (isinstance(loaded, dict) and loaded.get("type") == "loaded" and isinstance(loaded.get("cells"), list)):
            self._stop()
            self.fatal = "the notebook's code wrote into the grader's channel while its cells ran"
            raise StudentError(self.fatal)
        self.load_report = [c for c in loaded["cells"] if isinstance(c, dict)]
        self.timing["cells"] += time.monotonic() - began

    def _stderr_tail(self) -> str:
        try:
            os.set_blocking(self.process.stderr.fileno(), False)
            return (self.process.stderr.read(4000) or b"").decode(errors="replace").strip()[-600:]
        except (OSError, ValueError, TypeError):
            return ""

    def _poll(self):
        """Called while waiting: a dead worker, or (unsandboxed) one that wrote too much, ends the wait."""
        if self.process is not None and self.process.poll() is not None:
            raise ChannelClosed(f"the process ended with exit status {self.process.returncode}")
        if self.kind == "unsandboxed" and self.job is not None:
            written = sandbox.disk_usage(self.job.work) + sum(
                _size(p) for p in sandbox.scratch_files_of(self.account, self._started_at))
            if written > self.limits.disk_bytes:
                raise ChannelClosed(f"it wrote {written // 2 ** 20} MB of files, more than the limit of "
                                    f"{self.limits.disk_bytes // 2 ** 20} MB")

    def _receive(self, deadline: float, doing: str, loading: bool = False, cpu_seconds: float | None = None):
        """The worker's next message; a wait ends at ``deadline`` (wall clock) or, where the CPU
        time can be counted, once the worker has used ``cpu_seconds`` of it while we waited."""
        poll, started = self._poll, self._student_cpu()
        if cpu_seconds is not None:
            # While we wait, the worker is the one to work. Time in which none of its threads
            # could run (sleeping, or stopped: SIGSTOP) is its own choice, charged as CPU time, so
            # a notebook that sleeps or stops itself holds a worker for its CPU budget, not the
            # wall factor times it; time it waited for a CPU that others held is not charged.
            idle, last = [0.0], [time.monotonic()]

            def poll():
                self._poll()
                now = time.monotonic()
                if self._runnable() is False:
                    idle[0] += now - last[0]
                last[0] = now
                used = (self._student_cpu() or started) - started if started is not None else 0.0
                if used + idle[0] > cpu_seconds:
                    raise ChannelTimeout(f"it used more than {cpu_seconds:g} s of CPU time (time it spent "
                                         f"sleeping or stopped counts)")
        try:
            return self.channel.receive(deadline, poll=poll)
        except ChannelTimeout:
            self._stop()
            message = f"stopped after running out of time while {doing} (an endless loop?)"
            if loading:
                self.fatal = message
            raise WorkerTimeout(message) from None
        except ChannelClosed as err:
            code = None
            if self.process is not None:
                try:  # the pipe closes a moment before the process is reaped: wait for its status
                    code = self.process.wait(timeout=3)
                except subprocess.TimeoutExpired:
                    pass
            killed_for_memory = self.cgroup is not None and self.cgroup.out_of_memory_kills() > 0
            self._stop()
            message = (f"the notebook's code ended the grading process ({_describe_exit(code)}; {err}) "
                       f"while {doing}")
            if killed_for_memory:
                message = (f"the notebook ran out of memory: its processes together reached the limit of "
                           f"{self.limits.cgroup_memory_bytes // 2 ** 20} MB and the kernel stopped them "
                           f"while {doing}")
        except ChannelGarbage as err:
            self._stop()
            message = f"the notebook's code wrote into the grader's channel while {doing} ({err})"
        if loading:
            # The notebook's own code killed or hung the worker: running it again would too.
            self.fatal = message
        raise StudentError(message)


def _size(path: Path) -> int:
    try:
        return path.lstat().st_size
    except OSError:
        return 0


def _remove(path: Path) -> None:
    import shutil

    try:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink()
    except OSError:
        pass


def _describe_exit(code: int | None) -> str:
    if code is None:
        return "exit status unknown"
    if code > 128 and code - 128 in signal.Signals._value2member_map_:
        code = -(code - 128)  # bubblewrap reports a child killed by signal N as 128 + N
    if code < 0:
        name = signal.Signals(-code).name if -code in signal.Signals._value2member_map_ else str(-code)
        hint = {"SIGKILL": "killed: out of memory or a resource limit", "SIGXCPU": "CPU-time limit",
                "SIGSEGV": "crashed"}.get(name, "killed")
        return f"exit status {name}, {hint}"
    return f"exit status {code}, " + ("sys.exit/os._exit" if code else "exited")
