"""A session's requests: send one scenario to the worker, answer the grader-provided functions
it calls meanwhile (bounded in size, time and number), compare the strided views it was given
with the fresh arrays, and the arrays it handed to the student's code with what was sent (handed.py).

A mixin of StudentSession (session.py): it starts the worker when needed (process.py) and charges
each request to the current task's budget (budget.py).
"""
from __future__ import annotations

import contextlib
import secrets
import signal
import threading
import time

import numpy as np

from .. import views
from ..diagnosis.diagnosis import Call
from ..sandbox.worker.protocol import GraderFunction, StridedView, ValueRefused
from .channel import ChannelClosed, ChannelTimeout
from .errors import GradingError, StudentError, WorkerTimeout
from .handed import check_unchanged, handed_arrays

MAX_CRASHES_PER_TASK = 3
MAX_CALLBACKS = 20000  # messages of one request to grader-provided functions: calls, and values sent back
MAX_CALLBACK_DEPTH = 8  # a grader function calling back a function that calls a grader function ...
GRADER_READ_ELEMENTS = views.GRADER_READ_ELEMENTS  # the most array elements grader-side work takes from one call


class Requests:
    def grader_function(self, fn) -> GraderFunction:
        """Offer ``fn`` (grader-side code) to the next request: the worker sees an opaque token
        it can call, valid only while that request runs."""
        token = secrets.token_hex(12)
        self._offered[token] = fn
        return GraderFunction(token)

    def substitute(self, target: str, kind: str, fn) -> dict:
        """One entry of a request's ``substitutes`` option (see worker/scenarios.py)."""
        return {target: {"kind": kind, "function": self.grader_function(fn)}}

    def request(self, scenario: str, *args, options: dict | None = None, views: bool = False,
                timeout: float | None = None, what: str | None = None):
        options = dict(options or {})
        lent = self.lend(self.current_task) if self.lend else None
        if lent and self.student_lib is not None:  # an earlier release's course_lib may lack a lent class
            lent = {target: {**spec, "optional": True} for target, spec in lent.items()}
        if lent:
            options["substitutes"] = {**lent, **(options.get("substitutes") or {})}
        functions, self._offered = self._offered, {}
        if self.remaining() <= 0:
            raise self._out_of_time()
        task = self.current_task
        if self.crashes.get(task, 0) >= MAX_CRASHES_PER_TASK:
            raise StudentError(f"the checks of {task} crashed or hung the grading process {MAX_CRASHES_PER_TASK} "
                               f"times; its remaining checks were skipped (the other tasks are graded as usual)")
        started = self._clock()
        try:
            if self.process is None:
                if self.starts == 0:
                    self._start(self.load_timeout)
                    started = self._clock()  # running the notebook's cells the first time is no task's time
                else:
                    self._start(self.remaining())
            value = self._exchange(scenario, args, options, views, functions, timeout, what or scenario)
            call = Call(scenario, tuple(args), {k: v for k, v in options.items() if k != "substitutes"})
            self._remember(value, call)
            return value
        finally:
            self._charge(self._cost_since(started))
            if self.process is None and not self.broken:  # this check crashed, hung or failed to restart it
                self.crashes[task] = self.crashes.get(task, 0) + 1

    def _exchange(self, scenario, args, options, with_views, functions, timeout, what):
        budget = self.remaining()
        if budget <= 0:
            raise self._out_of_time()
        requested = timeout or self.call_timeout
        limit = min(requested, budget)
        self._next_id += 1
        rid = self._next_id
        message = {"type": "request", "id": rid, "scenario": scenario, "args": list(args), "options": options,
                   "timeout": max(1, int(limit))}
        layouts = []
        if with_views:
            message["view_args"], layouts = self.rotation.views(args)
        sent = time.monotonic()
        deadline = sent + limit * self.limits.wall_factor + 5  # the worker's own CPU-time limit comes first
        try:
            self.channel.send(message, deadline)
        except (ChannelClosed, ChannelTimeout):
            self._stop()
            raise StudentError(f"the grading process was gone before {what} could run") from None
        cut_short = limit < requested  # the task's budget, not the call's own limit, set the deadline
        self._callbacks_left, self._refusal = MAX_CALLBACKS, None
        try:
            while True:
                reply = self._receive(deadline, f"running {what}", cpu_seconds=limit + 5)
                if not (isinstance(reply, dict) and reply.get("type") == "callback"):
                    break
                # Grader-side work stops when the worker's own alarm would (sent + limit): past
                # it, the worker has given up waiting and its answer would be out of step.
                self._answer_callback(reply, functions, sent + limit, deadline, what)
        except WorkerTimeout:
            if cut_short:
                raise self._out_of_time() from None
            raise
        if not (isinstance(reply, dict) and reply.get("type") == "reply" and reply.get("id") == rid):
            self._stop()
            raise StudentError("the notebook's code tampered with the grader's channel")
        if self._refusal:
            raise StudentError(self._refusal)
        if not reply.get("ok"):
            if cut_short and time.monotonic() - sent >= limit - 0.5:
                raise self._out_of_time()  # the worker's own alarm, set to what the budget had left
            raise StudentError(str(reply.get("error", "failed"))[:1500])
        named = handed_arrays(scenario, list(args), options)
        if named is not None:
            check_unchanged(what, named, reply.get("inputs_after"))
        if with_views and message.get("view_args") is not None:
            self._compare_views(what, reply, layouts)
        return reply.get("value")

    def _answer_callback(self, call: dict, functions: dict, stop_at: float, deadline: float, what: str,
                         depth: int = 0) -> None:
        """Run the grader-provided function the worker called, on its arguments, and send the answer.

        Its work is bounded: arguments of at most GRADER_READ_ELEMENTS array elements, a result
        the protocol can carry, no MemoryError, and (SIGALRM, in the grading process's main thread)
        no time past ``stop_at``. A refusal is answered as an error (the worker's code goes on, in
        step) and fails the check once the request ends (``self._refusal``); running out of time
        stops the worker (WorkerTimeout)."""
        self._count_message()
        fn = functions.get(call.get("token"))
        if fn is None:
            answer = {"type": "callback_reply", "ok": False, "kind": "RuntimeError",
                      "error": "this grader-provided function is not available now"}
        else:
            args = call.get("args") if isinstance(call.get("args"), list) else []
            kwargs = call.get("kwargs") if isinstance(call.get("kwargs"), dict) else {}
            try:
                elements = _elements(args) + _elements(kwargs)
                if elements > GRADER_READ_ELEMENTS:
                    raise _Refused(f"its arguments hold {elements:.3g} array elements, more than the "
                                   f"{GRADER_READ_ELEMENTS} (2**{GRADER_READ_ELEMENTS.bit_length() - 1}) it works on")
                with _stopping_at(stop_at) if depth == 0 else contextlib.nullcontext():
                    if call.get("calls_back"):
                        args = [self._calling_back(functions, stop_at, deadline, what, depth)] + args
                    answer = {"type": "callback_reply", "ok": True, "value": fn(*args, **kwargs)}
            except _OutOfTime:
                self._stop()
                raise WorkerTimeout(f"stopped after running out of time while running {what}: the grader-provided "
                                    f"functions it called, on the arguments it gave them, ran past the time the "
                                    f"check allows") from None
            except (StudentError, GradingError):
                raise  # the channel failed while the function called back into the worker
            except _Abandoned:
                answer = {"type": "callback_reply", "ok": False, "kind": "RuntimeError",
                          "error": "the function the grader called back raised"}
            except _Refused as err:
                answer = self._refuse(what, str(err))
            except MemoryError:
                answer = self._refuse(what, "on its arguments it needed more memory than the grader allows")
            except (ValueError, TypeError) as err:
                answer = {"type": "callback_reply", "ok": False, "kind": type(err).__name__, "error": str(err)[:500]}
            except Exception as err:  # noqa: BLE001 - grader code on the student's arguments
                answer = {"type": "callback_reply", "ok": False, "kind": "RuntimeError",
                          "error": f"{type(err).__name__}: {str(err)[:500]}"}
        try:
            try:
                self.channel.send(answer, deadline)
            except ValueRefused as err:  # checked before a byte is written: the channel is still in step
                self.channel.send(self._refuse(what, f"its result cannot be sent back ({err})"), deadline)
        except (ChannelClosed, ChannelTimeout):
            self._stop()
            raise StudentError("the grading process stopped listening") from None

    def _refuse(self, what: str, why: str) -> dict:
        """The answer to a call the grader will not complete; the check fails with ``why``."""
        message = (f"{what} called a grader-provided function in a way it refuses: {why}. The checks call it on "
                   f"small arrays; does your code pass it something much larger, or loop over it?")
        self._refusal = self._refusal or message
        return {"type": "callback_reply", "ok": False, "kind": "RuntimeError", "error": message[:500]}

    def _count_message(self) -> None:
        self._callbacks_left -= 1
        if self._callbacks_left < 0:
            self._stop()
            raise StudentError(f"the notebook's code sent more than {MAX_CALLBACKS} calls and values to "
                               f"grader-provided functions during one check")

    def _calling_back(self, functions: dict, stop_at: float, deadline: float, what: str, depth: int):
        """The ``f`` a grader function of kind "calls_back" gets: f(*point) sends the point to the
        worker, which evaluates its own function there (the student's f) and sends the value back.
        Meanwhile that function may call grader functions itself: those are answered here too."""
        def evaluate(*point):
            try:
                self.channel.send({"type": "evaluate", "args": list(point)}, deadline)
            except (ChannelClosed, ChannelTimeout):
                self._stop()
                raise StudentError("the grading process stopped listening") from None
            while True:
                message = self._receive(deadline, f"running {what}")
                kind = message.get("type") if isinstance(message, dict) else None
                if kind == "callback" and depth < MAX_CALLBACK_DEPTH:
                    self._answer_callback(message, functions, stop_at, deadline, what, depth + 1)
                    continue
                if kind != "evaluated":
                    self._stop()
                    raise StudentError("the notebook's code tampered with the grader's channel")
                self._count_message()
                if not message.get("ok"):
                    raise _Abandoned()
                return message.get("value")
        return evaluate

    def _compare_views(self, what: str, reply: dict, layouts: list[str]) -> None:
        viewed = reply.get("view")
        described = " and ".join(sorted({views.DESCRIPTIONS[layout] for layout in layouts}))
        if not isinstance(viewed, dict):
            problem = "it did not run"
        elif not viewed.get("ok"):
            problem = f"it raised {str(viewed.get('error', ''))[:300]}"
        else:
            problem = views.difference(reply.get("value"), viewed.get("value"))
        if problem:
            self.view_problems.append(
                f"{what} is right when its inputs are fresh row-major arrays, but with the same values given as "
                f"{described}, {problem}: does it call .compact() where it needs a row-major array?")


class _Refused(Exception):
    """Grader-side work the grader will not do on these arguments (too large)."""


class _Abandoned(BaseException):
    """The worker's function raised while a grader function called it back: that function unwinds.
    (A BaseException: grader code that catches Exception must not carry on past it.)"""


class _OutOfTime(BaseException):
    """Raised by SIGALRM when grader-side work on a submission's arguments reaches its deadline."""


def _raise_out_of_time(signum, frame):
    raise _OutOfTime()


@contextlib.contextmanager
def _stopping_at(deadline: float):
    """Grader-side work inside stops (``_OutOfTime``) at ``deadline`` (time.monotonic()). Signals
    reach only the main thread: elsewhere (no grading process runs suites there) the size bounds
    alone hold."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    seconds = deadline - time.monotonic()
    if seconds <= 0:
        raise _OutOfTime()
    began = time.monotonic()
    previous = signal.signal(signal.SIGALRM, _raise_out_of_time)
    previous_delay, _ = signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if previous_delay:  # someone else's alarm (a test runner's timeout, say) keeps its time
            signal.setitimer(signal.ITIMER_REAL, max(0.001, previous_delay - (time.monotonic() - began)))


def _elements(value, depth: int = 0) -> int:
    """Array elements in a decoded value (arrays, lists and dicts of them)."""
    if isinstance(value, np.ndarray):
        return int(value.size)
    if isinstance(value, StridedView):
        return int(value.buffer.size)
    if depth > 64:
        return 0  # the decoder refuses values nested this deep before they get here
    if isinstance(value, (list, tuple)):
        return sum(_elements(v, depth + 1) for v in value)
    if isinstance(value, dict):
        return sum(_elements(v, depth + 1) for v in value.values())
    return 0
