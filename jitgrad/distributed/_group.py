"""The MPI process group: the communicator, the order of operations, work handles, timeouts.

Every operation is an MPI nonblocking call (``Iallreduce``, ``Ibcast``, ...) issued at once by
the calling thread, in program order, so all ranks issue the same sequence. Completing it:

* synchronous: the caller polls ``Test`` until it completes or the group's timeout passes
  (MPI's own ``Wait`` spins the same way, but cannot time out);
* ``async_op=True``: the call returns a ``Work`` at once. While the caller computes, a progress
  thread calls ``Test`` on the outstanding requests with short sleeps in between (mpi4py
  releases the GIL inside each call; the core stays the caller's), which is what moves an MPI
  nonblocking collective forward. ``Work.wait()`` takes the request over and polls it itself,
  so no thread hand-off sits on the critical path at either end.

A timed-out operation leaves MPI inside a collective that can never finish: the group is then
broken (later calls raise at once) and the process calls ``MPI_Abort`` when it exits, as
``MPI_Finalize`` would wait forever. An exception nobody catches on any rank would leave that
rank in ``MPI_Finalize`` and the others in their next collective, forever (measured with
MPICH 5). Instead the failing rank sends a failure notice to every other rank on a separate
communicator, gives them a moment, and aborts the job (what ``python -m mpi4py`` does, plus the
notice); a rank waiting for an operation checks for notices while it waits and raises
``DistBackendError`` naming the failed rank and its exception.
"""
from __future__ import annotations

import atexit
import os
import sys
import threading
import time
from datetime import timedelta

__all__ = ["ProcessGroup", "Work", "Future", "DistError", "DistBackendError",
           "default_group", "DEFAULT_TIMEOUT"]

# PyTorch's default_pg_timeout
DEFAULT_TIMEOUT = timedelta(minutes=30)
_yield = getattr(os, "sched_yield", lambda: time.sleep(0))

NOT_INITIALIZED = ("Default process group has not been initialized, please make sure to call "
                   "init_process_group.")


class DistError(RuntimeError):
    """``torch.distributed.DistError``."""


class DistBackendError(DistError):
    """``torch.distributed.DistBackendError``: the transport failed or timed out."""


DistError.__module__ = DistBackendError.__module__ = "jitgrad.distributed"


class PeerFailure(DistBackendError):
    """Raised on the ranks that wait for a rank that died (not re-announced to others)."""


PeerFailure.__module__ = "jitgrad.distributed"
PeerFailure.__name__ = PeerFailure.__qualname__ = "DistBackendError"  # what the user sees
ALARM_TAG = 7


class Future:
    """The subset of ``torch.futures.Future`` that DDP communication hooks use: ``wait()`` /
    ``value()``, ``done()``, ``then(callback)``."""

    def __init__(self, wait_fn, done_fn=lambda: True):
        self._wait_fn, self._done_fn = wait_fn, done_fn
        self._has_value, self._value = False, None

    def done(self) -> bool:
        return self._has_value or self._done_fn()

    def wait(self):
        if not self._has_value:
            self._value, self._has_value = self._wait_fn(), True
        return self._value

    value = wait

    def then(self, callback):
        """A future whose value is ``callback(self)`` (computed when it is waited on)."""
        def chained():
            self.wait()
            return callback(self)
        return Future(chained, self.done)


class Work:
    """What ``async_op=True`` returns: ``wait()`` blocks until the operation finished (and its
    result is in the tensors), ``is_completed()``, ``get_future()``."""

    def __init__(self, group, name, seq, request, finish, result, status=None):
        self._group, self._name, self._seq = group, name, seq
        self._request = request  # the MPI request until it completed
        self._status = status  # an MPI.Status filled on completion (recv's source)
        self._finish, self._result = finish, result
        self._lock = threading.Lock()  # held by whichever thread is testing the request
        self._error = None
        self._finished = False

    def is_completed(self) -> bool:
        if self._request is not None and self._lock.acquire(blocking=False):
            try:
                self._group._test(self)
            finally:
                self._lock.release()
        return self._request is None

    def is_success(self) -> bool:
        return self.is_completed() and self._error is None

    def wait(self, timeout=None) -> bool:
        if not self._finished:
            if self._request is not None:
                with self._lock:
                    self._group._poll(self, timeout)
            if self._error is not None:
                raise self._error
            self._finished = True
            if self._finish is not None:
                self._finish()  # AVG's division, copies back from staging buffers
        return True

    def result(self):
        return self._result

    def get_future(self) -> Future:
        """Its value: the list of result tensors (PyTorch's convention)."""
        def wait():
            self.wait()
            return self._result
        return Future(wait, self.is_completed)

    def exception(self):
        return self._error


class ProcessGroup:
    def __init__(self, comm, timeout: timedelta, alarm=None):
        self.comm = comm
        self.alarm = alarm  # a communicator of its own for failure notices (tag ALARM_TAG)
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()
        self.timeout = timeout
        self._lock = threading.Lock()  # issue order
        self._seq = 0
        self._active: list = []  # async work not known to be complete
        self._wake = threading.Condition()
        self._stop = False
        self._polling = 0  # > 0 while a caller polls (it drives MPI's progress then)
        self._broken = None  # the error that broke the group
        self._progress = threading.Thread(target=self._progress_loop, daemon=True,
                                          name="jitgrad-mpi-progress")
        self._progress.start()

    # ------------------------------------------------------------------ issuing

    def submit(self, name, start, finish=None, result=None, async_op=False, status=None):
        """Issue ``start(comm) -> MPI.Request`` now (program order); returns the Work, waited
        on already unless ``async_op``."""
        with self._lock:
            if self._broken is not None:
                raise DistBackendError(
                    f"[rank {self.rank}] {name}: the process group is unusable after an earlier "
                    f"failure ({self._broken})")
            self._seq += 1
            work = Work(self, name, self._seq, start(self.comm), finish, result, status)
        if async_op:
            with self._wake:
                self._active.append(work)
                self._wake.notify()
        else:
            work.wait()
        return work

    def _progress_loop(self):
        """Drive outstanding async requests while their callers compute."""
        idle = 0
        while True:
            with self._wake:
                self._active = [w for w in self._active if w._request is not None]
                while not self._active and not self._stop:
                    self._wake.wait()
                    idle = 0
                if self._stop:
                    return
                if self._polling:
                    # a caller is polling: MPI progresses inside its Test calls, and testing
                    # here too would only make the two threads trade the GIL
                    self._wake.wait(0.002)
                    continue
                active = list(self._active)
            for work in active:
                if work._lock.acquire(blocking=False):  # else its caller is polling it
                    try:
                        self._test(work)
                    finally:
                        work._lock.release()
            idle += 1
            time.sleep(0 if idle < 64 else 5e-5)

    def _test(self, work):
        """One ``Test`` of ``work``'s request (the caller holds ``work._lock``)."""
        request = work._request
        if request is None:
            return
        try:
            if request.Test(work._status):
                work._request = None
        except Exception as e:  # MPI.Exception: a peer vanished, a bad buffer, ...
            work._error = DistBackendError(f"[rank {self.rank}] {work._name} failed: {e}")
            self._broken = str(e)
            work._request = None

    # ------------------------------------------------------------------ completing

    def _deadline(self, timeout):
        t = self.timeout if timeout is None else timeout
        if isinstance(t, timedelta):
            t = t.total_seconds()
        return time.monotonic() + float(t), float(t)

    def _poll(self, work, timeout):
        """Poll ``work`` until it completes (the caller holds ``work._lock``)."""
        request, status, spins = work._request, work._status, 0
        if request is None:
            return
        self._polling += 1
        try:
            while not request.Test(status):
                spins += 1
                if spins & 255 == 0:
                    now = time.monotonic()
                    if spins == 256:
                        first = now
                        deadline, seconds = self._deadline(timeout)
                    self._check_alarm(work)
                    if now > deadline:
                        self._timed_out(work, seconds)
                    if now - first > 0.05:
                        time.sleep(2e-4)  # a long wait (a slow peer): stop burning a core
                    else:
                        _yield()  # as MPICH's own polling does: a peer may need this core
        except DistBackendError:
            raise
        except Exception as e:  # MPI.Exception: a peer vanished, a bad buffer, ...
            work._error = DistBackendError(f"[rank {self.rank}] {work._name} failed: {e}")
            self._broken = str(e)
        finally:
            self._polling -= 1
        work._request = None

    # ------------------------------------------------------------------ failure notices

    def notify_failure(self, text: str) -> None:
        """Tell every other rank that this one failed (nonblocking sends of a short message,
        which MPI delivers eagerly); wait up to a second for them to go out."""
        if self.alarm is None or self.size == 1:
            return
        from mpi4py import MPI
        payload = text.encode("utf-8", "replace")[:2000]
        requests = [self.alarm.Isend([payload, MPI.BYTE], dest=k, tag=ALARM_TAG)
                    for k in range(self.size) if k != self.rank]
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline and not MPI.Request.Testall(requests):
            time.sleep(1e-3)

    def _check_alarm(self, work):
        if self.alarm is None:
            return
        from mpi4py import MPI
        status = MPI.Status()
        if not self.alarm.Iprobe(source=MPI.ANY_SOURCE, tag=ALARM_TAG, status=status):
            return
        buf = bytearray(status.Get_count(MPI.BYTE))
        self.alarm.Recv([buf, MPI.BYTE], source=status.Get_source(), tag=ALARM_TAG)
        self._broken = f"rank {status.Get_source()} failed"
        _EXIT_GUARD.abort_at_exit = True
        raise PeerFailure(
            f"[rank {self.rank}] {work._name} (operation #{work._seq} of this process group) "
            f"cannot complete: rank {status.Get_source()} failed with "
            f"{buf.decode('utf-8', 'replace')}")

    def _timed_out(self, work, seconds):
        msg = (f"[rank {self.rank}] {work._name} (operation #{work._seq} of this process group) "
               f"did not complete within the timeout of {seconds:g} s: another rank did not "
               "call it (it raised, is stuck, or called collectives in a different order). "
               "The process group is unusable now; this process will call MPI_Abort when it "
               "exits.")
        self._broken = f"{work._name} #{work._seq} timed out"
        _EXIT_GUARD.abort_at_exit = True
        raise DistBackendError(msg)

    def shutdown(self):
        """Stop the progress thread (destroy_process_group)."""
        with self._wake:
            self._stop = True
            self._wake.notify()
        self._progress.join(timeout=5.0)


class _ExitGuard:
    """Aborts the MPI job instead of hanging when a rank dies with an exception or after a
    collective timed out (see the module docstring)."""

    def __init__(self):
        self.installed = False
        self.abort_at_exit = False
        self.comm = None
        self._previous_hook = None

    def install(self, comm):
        self.comm = comm
        if self.installed:
            return
        self.installed = True
        self._previous_hook = sys.excepthook
        sys.excepthook = self._excepthook
        atexit.register(self._at_exit)

    def _excepthook(self, etype, value, tb):
        self._previous_hook(etype, value, tb)
        group = _DEFAULT[0]
        if self.comm is not None and group is not None and etype is not SystemExit:
            rank, size = self.comm.Get_rank(), self.comm.Get_size()
            if size > 1:
                sys.stderr.write(
                    f"jitgrad.distributed: rank {rank} of {size} raised an unhandled exception; "
                    "calling MPI_Abort so that the other ranks stop instead of waiting for it\n")
                sys.stderr.flush()
                sys.stdout.flush()
                if not issubclass(etype, PeerFailure):  # the first failure tells the others
                    group.notify_failure(f"{etype.__name__}: {value}")
                    time.sleep(1.0)  # let them report it before the launcher stops them
                else:
                    time.sleep(0.3)  # the other survivors are reporting it too
                self.comm.Abort(1)

    def _at_exit(self):
        if self.abort_at_exit and self.comm is not None:
            sys.stdout.flush()
            sys.stderr.flush()
            self.comm.Abort(1)


_EXIT_GUARD = _ExitGuard()
_DEFAULT: list = [None]  # the default (world) group while initialized


def default_group() -> ProcessGroup:
    g = _DEFAULT[0]
    if g is None:
        raise ValueError(NOT_INITIALIZED)
    return g


def install(group: ProcessGroup) -> None:
    _DEFAULT[0] = group
    _EXIT_GUARD.install(group.comm)


def uninstall() -> ProcessGroup:
    g = default_group()
    _DEFAULT[0] = None
    g.shutdown()
    return g


def env_int(name):
    v = os.environ.get(name)
    if v is None or v == "":
        return None
    try:
        return int(v)
    except ValueError:
        raise ValueError(f"Error initializing torch.distributed using env:// rendezvous: "
                         f"environment variable {name} is not an integer ({v!r})") from None
