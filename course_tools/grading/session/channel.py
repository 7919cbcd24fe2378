"""The grader's end of the pipes to a worker: every read and write has a deadline and a size limit.

The worker runs the submission's code, so whatever comes down the pipe is untrusted: a frame
may be huge, truncated, garbage, or never come. Nothing here blocks past its deadline or
holds more than ``protocol.MAX_FRAME_BYTES`` of one message.
"""
from __future__ import annotations

import os
import select
import time

from ..sandbox.worker import protocol


class ChannelClosed(Exception):
    """The worker closed its end (it exited or was killed)."""


class ChannelTimeout(Exception):
    """Nothing (or not all of a message) arrived before the deadline."""


class ChannelGarbage(Exception):
    """What arrived is not a frame of the protocol."""


class Channel:
    def __init__(self, read_fd: int, write_fd: int):
        self.read_fd, self.write_fd = read_fd, write_fd
        os.set_blocking(read_fd, False)
        os.set_blocking(write_fd, False)
        self._buffer = bytearray()

    def close(self) -> None:
        for fd in (self.read_fd, self.write_fd):
            try:
                os.close(fd)
            except OSError:
                pass

    def send(self, message, deadline: float) -> None:
        """Write one frame before ``deadline`` (time.monotonic()), or raise ChannelTimeout/ChannelClosed."""
        data = memoryview(protocol.encode(message))
        while data:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise ChannelTimeout("the worker did not read its request in time")
            _, ready, _ = select.select([], [self.write_fd], [], min(remaining, 1.0))
            if not ready:
                continue
            try:
                written = os.write(self.write_fd, data)
            except BlockingIOError:
                continue
            except (BrokenPipeError, OSError) as err:
                raise ChannelClosed(str(err)) from None
            data = data[written:]

    def receive(self, deadline: float, poll=None):
        """The next message, decoded; ``poll()`` is called about once a second while waiting
        (the session uses it to notice a worker that died or wrote too much)."""
        while True:
            message = self._take_frame()
            if message is not None:
                return message
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise ChannelTimeout("no answer in time")
            ready, _, _ = select.select([self.read_fd], [], [], min(remaining, 1.0))
            if not ready:
                if poll is not None:
                    poll()
                continue
            try:
                chunk = os.read(self.read_fd, 1 << 20)
            except BlockingIOError:
                continue
            if not chunk:
                raise ChannelClosed("the worker closed its pipe")
            self._buffer += chunk
            if len(self._buffer) > protocol.MAX_FRAME_BYTES + 8:
                raise ChannelGarbage("a message larger than the limit")

    def _take_frame(self):
        if len(self._buffer) < 8:
            return None
        length = int.from_bytes(self._buffer[:8], "big")
        if length > protocol.MAX_FRAME_BYTES:
            raise ChannelGarbage(f"a message announced as {length} bytes, more than the limit")
        if len(self._buffer) < 8 + length:
            return None
        body = bytes(self._buffer[8:8 + length])
        del self._buffer[:8 + length]
        try:
            return protocol.decode(body)
        except protocol.ValueRefused as err:
            raise ChannelGarbage(str(err)) from None
