"""Leases on an MLflow tracking store: one holder at a time of a league, or of a model's title.

MLflow's tags and aliases are last-writer-wins, and it has no compare-and-set. The one atomic
step that every store offers (SQLite, Postgres, a tracking server) is creating an object under a
unique name: a second experiment of one name is refused, even while the first is deleted. So a
lease is a numbered series of experiments, ``.lease <key> <digest>#<epoch>``, and whoever creates
epoch n+1 holds it from then on. Only one process can create a given epoch, so taking a lease
over never races.

- The **owner** tags its epoch with a heartbeat every quarter of its **ttl**. An epoch whose
  heartbeat is older than its ttl has expired: its holder died, and the next epoch may be created
  over it.
- The **epoch is the fencing token**: the holder of epoch n writes only while epoch n+1 does not
  exist (`Lease.check`), and stops by itself once it has failed to heartbeat for most of its ttl,
  before anyone could take the lease over.
- **Releasing** deletes the epoch's experiment. Its name stays taken, so epochs never repeat.
- **One owner, many processes.** A process whose owner is the holder's adopts the lease: the tasks
  of one Airflow DAG run, or a league's learner processes, share one lease.

Heartbeats carry the holder's wall clock and are read against the reader's, so the clocks of the
machines that share a store must agree to well within a ttl.
"""

from __future__ import annotations

import hashlib
import os
import random
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # mlflow loads when a lease is first used: the `c4` command imports this early
    from mlflow.tracking import MlflowClient

DEFAULT_TTL = 120.0
"""Seconds a holder may go without a heartbeat before its lease can be taken over."""
OWNER, TTL, HEARTBEAT, SINCE, KEY = (f"c4.lease.{k}" for k in ("owner", "ttl", "heartbeat", "since", "key"))
"""The tags of a lease's epoch."""


class LeaseError(ValueError):
    """A lease could not be had, or was lost: the message says who holds it."""


class LeaseHeld(LeaseError):
    """Another owner holds the lease, and did not let go in time."""


class LeaseLost(LeaseError):
    """This holder's lease was taken over, released, or went without a heartbeat too long."""


def process_owner(what: str) -> str:
    """An owner name unique to this process and call: ``<what> on <host> pid <pid> <uuid>``."""
    return f"{what} on {socket.gethostname()} pid {os.getpid()} {uuid.uuid4().hex[:8]}"


@dataclass(frozen=True)
class Holder:
    """Who holds a lease's newest epoch, as its tags say."""

    epoch: int
    experiment_id: str
    owner: str
    since: float
    heartbeat: float
    ttl: float
    deleted: bool

    def expired(self, now: float) -> bool:
        return self.deleted or now - self.heartbeat > self.ttl

    def describe(self, now: float) -> str:
        return (
            f"held by {self.owner} since {time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(self.since))}, "
            f"last heartbeat {now - self.heartbeat:.0f} s ago; it expires after {self.ttl:.0f} s "
            "without one"
        )


class Lease:
    """A lease on `key` for `owner` (see the module's docstring). Use as a context manager, or
    call `acquire` and `release`; `check` before every write."""

    def __init__(
        self,
        client: MlflowClient,
        key: str,
        owner: str,
        ttl: float = DEFAULT_TTL,
        clock: Callable[[], float] = time.time,
    ):
        if ttl <= 0:
            raise ValueError(f"a lease's ttl must be positive, got {ttl}")
        self.client, self.key, self.owner, self.ttl, self.clock = client, key, owner, float(ttl), clock
        # a digest in the name: LIKE matches it exactly, whatever the key holds ('_' and '%' included)
        self._digest = hashlib.sha1(key.encode()).hexdigest()[:16]
        self.epoch: int | None = None
        self._experiment_id: str | None = None
        self._beat_at = 0.0  # when the last heartbeat was written
        self._lost: str | None = None
        self._stop = threading.Event()
        self._beater: threading.Thread | None = None

    def __reduce__(self) -> tuple[Any, ...]:  # a process that unpickles it adopts the same lease
        return (type(self), (self.client, self.key, self.owner, self.ttl))

    def name(self, epoch: int) -> str:
        return f".lease {self.key} {self._digest}#{epoch}"

    # -- reading --
    def holder(self) -> Holder | None:
        """The newest epoch, released ones included; None when there has never been one."""
        from mlflow.entities import ViewType

        found = self.client.search_experiments(
            view_type=ViewType.ALL,
            filter_string=f"name LIKE '%{self._digest}#%'",
            max_results=10,
            order_by=["creation_time DESC"],  # epoch n+1 is made only once n exists
        )
        epochs = [(int(e.name.rsplit("#", 1)[1]), e) for e in found if e.name.startswith(self.name(0)[:-1])]
        if not epochs:
            return None
        epoch, exp = max(epochs, key=lambda t: t[0])
        tags = exp.tags
        return Holder(
            epoch=epoch,
            experiment_id=exp.experiment_id,
            owner=tags.get(OWNER, "?"),
            since=float(tags.get(SINCE, 0)),
            heartbeat=float(tags.get(HEARTBEAT, 0)),
            ttl=float(tags.get(TTL, DEFAULT_TTL)),
            deleted=exp.lifecycle_stage == "deleted",
        )

    # -- holding --
    def acquire(self, wait: float = 0.0) -> Lease:
        """Hold the lease: make the next epoch when the newest is released or expired, adopt it
        when its owner is ours, else retry until `wait` seconds have passed and raise
        `LeaseHeld`, naming the holder."""
        deadline = time.monotonic() + wait
        for _ in range(100_000):  # bounded: each pass either ends, or sleeps
            now = self.clock()
            top = self.holder()
            if top is not None and not top.deleted and top.owner == self.owner:
                self._hold(top.epoch, top.experiment_id)
                return self
            if top is None or top.expired(now):
                epoch = 1 if top is None else top.epoch + 1
                exp_id = self._create(epoch, now)
                if exp_id is not None:
                    if top is not None and not top.deleted:  # the dead holder's epoch: hide it
                        self._delete(top.experiment_id)
                    self._hold(epoch, exp_id)
                    return self
                continue  # another process made that epoch first: look again
            if time.monotonic() >= deadline:
                raise LeaseHeld(f"{self.key} is {top.describe(now)}")
            time.sleep(min(0.2 + random.random() * 0.3, max(deadline - time.monotonic(), 0.01)))
        raise LeaseHeld(f"{self.key}: gave up after too many attempts")

    def _create(self, epoch: int, now: float) -> str | None:
        from mlflow.exceptions import MlflowException

        tags = {KEY: self.key, OWNER: self.owner, TTL: repr(self.ttl), SINCE: repr(now), HEARTBEAT: repr(now)}
        try:
            return self.client.create_experiment(self.name(epoch), tags=tags)
        except MlflowException:
            if self.client.get_experiment_by_name(self.name(epoch)) is None:
                raise  # not a name clash: the store failed
            return None

    def _delete(self, experiment_id: str) -> None:
        from mlflow.exceptions import MlflowException

        try:
            self.client.delete_experiment(experiment_id)
        except MlflowException:  # deleted already
            pass

    def _hold(self, epoch: int, experiment_id: str) -> None:
        self.epoch, self._experiment_id, self._lost = epoch, experiment_id, None
        self._beat()
        self._stop.clear()
        self._beater = threading.Thread(target=self._beat_loop, name=f"lease {self.key}", daemon=True)
        self._beater.start()

    def _beat(self) -> None:
        assert self._experiment_id is not None
        now = self.clock()
        self.client.set_experiment_tag(self._experiment_id, HEARTBEAT, repr(now))
        self._beat_at = now

    def _beat_loop(self) -> None:
        from mlflow.exceptions import MlflowException

        while not self._stop.wait(self.ttl / 4):
            try:
                self._beat()
            except MlflowException as e:  # a deleted epoch refuses tags: it was taken over
                if self.client.get_experiment_by_name(self.name((self.epoch or 0) + 1)) is not None:
                    self._lost = f"{self.key} was taken over after a missed heartbeat ({e.message[:100]})"
                    return
            except Exception:  # the store is unreachable for now: `check` counts the silence
                pass

    def check(self) -> None:
        """The fence: raise `LeaseLost` unless this process still holds the lease."""
        if self.epoch is None:
            raise LeaseLost(f"{self.key} is not held by {self.owner}")
        if self._lost is not None:
            raise LeaseLost(self._lost)
        silent = self.clock() - self._beat_at
        if silent > 0.75 * self.ttl:  # stop before anyone may take it over, at a full ttl
            raise LeaseLost(f"{self.key}: no heartbeat could be written for {silent:.0f} s")
        successor = self.client.get_experiment_by_name(self.name(self.epoch + 1))
        if successor is not None:
            self._lost = f"{self.key} was taken over by {successor.tags.get(OWNER, '?')}"
            raise LeaseLost(self._lost)

    def stop_heartbeat(self) -> None:
        """Stop heartbeating and leave the lease held (another process of the owner goes on)."""
        self._stop.set()
        if self._beater is not None and self._beater is not threading.current_thread():
            self._beater.join()
        self._beater = None

    def release(self) -> None:
        """Let go: stop heartbeating, and delete the epoch if it is still ours."""
        self.stop_heartbeat()
        if self.epoch is None:
            return
        try:
            self.check()
        except LeaseLost:
            pass
        else:
            assert self._experiment_id is not None
            self._delete(self._experiment_id)
        self.epoch = self._experiment_id = None

    def __enter__(self) -> Lease:
        return self if self.epoch is not None else self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


_READS = ("get_", "search_", "list_", "download_")
"""`MlflowClient` methods that only read; every other public method writes."""


class FencedClient:
    """An `MlflowClient` whose every write first checks `lease` (`Lease.check`): a holder that
    has lost its lease stops at its next write, with `LeaseLost`."""

    def __init__(self, client: MlflowClient, lease: Lease):
        self.unfenced, self.lease = client, lease

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.unfenced, name)
        if name.startswith("_") or name.startswith(_READS) or not callable(attr):
            return attr

        def fenced(*args: Any, **kwargs: Any) -> Any:
            self.lease.check()
            return attr(*args, **kwargs)

        return fenced
