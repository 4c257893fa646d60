"""The Ray backend (``executor: {type: ray}``): per-example work shipped to a cluster, results streamed back.

What is shipped, each example's call as one Ray task:

* the python lane's call (a sync function; an async one only with ``ship_async: true``) and the command lane's call,
  through :attr:`~evalglass.lanes.executor.Executor.offload` under the executor's usual limits;
* a host ``python`` metric's call and a per-example ``check`` metric's check: the cluster is the
  :class:`~evalglass.metrics.base.MetricShipper` a ``shippable`` metric is built with (:meth:`RayCluster.metric`,
  :meth:`RayCluster.check_runner`; they block a driver thread while their task runs, so as many run at once as the
  metric pool has threads).

What stays on the driver: the dataset stream, the cache, chat lanes and LLM judges (I/O: an event loop already
overlaps thousands of them), the builtin metrics (cheaper to compute than to ship), the writers. So the artifacts are
written by the same code, in the same order, as a local run's.

Faults. A worker process that dies mid-task is Ray's to retry (``max_retries``, default 3). A builtin metric is a pure
function of its arguments, so a retry computes the same result; host code is run again, side effects included
(docs/cluster.md says so and how to turn it off). The driver receives exactly one result per call, so no example is
lost or scored twice. When the retries are spent (or the cluster refuses the call) the call
raises :class:`~evalglass.lanes.shipping.WorkLost` with a stable reason, and that example is ``error``, never 0.0.
EvalGlass's own retries (chat calls' ``retry:``) are for answers; a lost process is Ray's business. Losing the
cluster itself (its head stops answering on the GCS port for :data:`LOST_AFTER_S`) raises
:class:`~evalglass.lanes.shipping.ClusterLost`, a ``KeyboardInterrupt``: the run stops as on Ctrl-C and
``--resume`` finishes it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import logging
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from evalglass.core.score import Score
from evalglass.engine.produce import rayworker
from evalglass.engine.spec.executorspec import RayExecutorSpec
from evalglass.errors import SetupError
from evalglass.lanes.shipping import SHIPPED_BASE_ENV, ClusterLost, WorkLost, abandon_connection
from evalglass.version import __version__

if TYPE_CHECKING:
    from evalglass.core.checks import CheckResult
    from evalglass.engine.spec.config import LoadedConfig
    from evalglass.lanes.checkspec import CheckSpec
    from evalglass.metrics.base import MetricFn

R = TypeVar("R")

RAY_EXTRA_HINT = "install the ray extra: pip install 'evalglass[ray]'"
#: How often a waiting call looks at the cluster's health (and at a closing run).
_POLL_S = 0.5
#: The cluster counts as lost once its GCS port has refused connections for this long.
LOST_AFTER_S = 2.0
#: How long the first task (the version check) may take to start: workers may still be starting.
_FIRST_TASK_S = 120.0
#: Module name prefixes under which EvalGlass loads host files (``x.py:function``): no worker could import them by
#: name, so their functions travel by value.
_HOST_MODULE_PREFIXES = ("evalglass_user_", "_evalglass_host_")


class RayCluster:
    """One connection to a Ray cluster for one run: ships calls, watches the cluster, closes."""

    def __init__(self, loaded: LoadedConfig) -> None:
        spec = loaded.config.executor
        assert isinstance(spec, RayExecutorSpec)
        self.spec = spec
        self.where = str(loaded.path)
        self.base_dir = loaded.base_dir.resolve()
        self.declared = loaded.config.secret_names
        self.address = ""
        self._ray: Any = None
        self._remotes: dict[tuple[str, int], tuple[Callable[..., Any], Any]] = {}
        self._lock = threading.Lock()
        self._lost: str | None = None
        self._closing = threading.Event()
        self._watcher: threading.Thread | None = None
        #: Called (from the watching thread) once the cluster is lost: a live run stops its event loop with it.
        self.on_lost: Callable[[], None] | None = None

    # ------------------------------------------------------------------ connection
    def connect(self) -> RayCluster:
        address = self.spec.resolved_address(os.environ)
        if address is None:
            raise SetupError(
                "executor type ray: no cluster address (executor.address is not set and RAY_ADDRESS is empty)",
                where=self.where,
                fix="set executor.address to auto, host:port or ray://host:10001, or export RAY_ADDRESS",
            )
        self.address = address
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # a tool run is not a Ray user's session
        try:
            import ray
        except ImportError:
            raise SetupError(
                "executor type ray needs the ray package, which is not installed", where=self.where, fix=RAY_EXTRA_HINT
            ) from None
        self._ray = ray
        main = threading.current_thread() is threading.main_thread()
        on_term = signal.getsignal(signal.SIGTERM) if main else None
        try:
            ray.init(
                address=address,
                runtime_env=self._runtime_env(),
                logging_level=logging.ERROR,
                log_to_driver=False,
            )
        except Exception as exc:
            raise SetupError(
                f"cannot connect to the Ray cluster at {address}: {type(exc).__name__}: {_first_line(exc)}",
                where=self.where,
                fix="start the cluster (ray start --head), or correct executor.address / RAY_ADDRESS",
            ) from None
        finally:
            if on_term is not None:  # ray.init makes SIGTERM exit the process; a run treats it like Ctrl-C
                signal.signal(signal.SIGTERM, on_term)
        try:
            self._check_workers()
        except BaseException:
            self._shutdown()
            raise
        self._watch()
        return self

    def _runtime_env(self) -> dict[str, Any]:
        """The declared runtime environment, its paths made absolute from the config's folder (Ray would read them
        from the driver's current folder); a shipped copy of the evals folder is made known to the workers."""
        env = dict(self.spec.runtime_env)
        if "working_dir" in env:
            folder = (self.base_dir / env["working_dir"]).resolve()
            if not folder.is_dir():
                raise SetupError(
                    f"executor.runtime_env.working_dir {env['working_dir']!r} is not a folder (looked for {folder})",
                    where=self.where,
                )
            env["working_dir"] = str(folder)
            if folder == self.base_dir:
                env["env_vars"] = {**env.get("env_vars", {}), SHIPPED_BASE_ENV: str(self.base_dir)}
        if "py_modules" in env and isinstance(env["py_modules"], list):
            env["py_modules"] = [
                str((self.base_dir / entry).resolve()) if isinstance(entry, str) and "://" not in entry else entry
                for entry in env["py_modules"]
            ]
        return env

    def _check_workers(self) -> None:
        """One task before any work: the workers run this EvalGlass version, and some node can take each call."""
        ray = self._ray
        nodes = [node.get("Resources", {}) for node in ray.nodes() if node.get("Alive")]
        for key, resources in (("resources", self.spec.resources), *self.spec.overrides.items()):
            wanted = {"CPU": resources.num_cpus, "GPU": resources.num_gpus, **resources.custom}
            if resources.memory is not None:
                wanted["memory"] = resources.memory
            if not any(all(node.get(name, 0) >= amount for name, amount in wanted.items() if amount) for node in nodes):
                asked = ", ".join(f"{name}={amount:g}" for name, amount in wanted.items() if amount)
                raise SetupError(
                    f"no node of the Ray cluster at {self.address} offers what executor.{_where(key)} asks for "
                    f"({asked})",
                    where=self.where,
                    fix="ask for less, or add a node that has it",
                )
        probe = ray.remote(rayworker.version).options(num_cpus=0, max_retries=self.spec.max_retries)
        try:
            found = ray.get(probe.remote(), timeout=_FIRST_TASK_S)
        except Exception as exc:
            raise SetupError(
                f"the Ray cluster at {self.address} could not run EvalGlass's first task: {type(exc).__name__}: "
                f"{_first_line(exc)}",
                where=self.where,
                fix="install evalglass on every node (or ship it with executor.runtime_env.pip) and check the "
                "cluster's logs",
            ) from None
        if found != __version__:
            raise SetupError(
                f"the Ray cluster's workers run EvalGlass {found}, this driver runs {__version__}",
                where=self.where,
                fix=f"install evalglass=={__version__} on every node, or ship it with executor.runtime_env.pip",
            )

    def _watch(self) -> None:
        target = _gcs_endpoint(self._ray, self.address)
        if target is None:
            return
        thread = threading.Thread(target=self._watch_loop, args=target, name="evalglass-ray-watch", daemon=True)
        thread.start()
        self._watcher = thread

    def _watch_loop(self, host: str, port: int) -> None:
        """Probe the head's GCS port; bounded: ends when the run closes or once the cluster is declared lost."""
        down_since: float | None = None
        while not self._closing.wait(_POLL_S / 2):
            try:
                socket.create_connection((host, port), timeout=1.0).close()
                down_since = None
            except OSError:
                now = time.monotonic()
                down_since = down_since if down_since is not None else now
                if now - down_since >= LOST_AFTER_S:
                    self._lost = f"lost the Ray cluster at {self.address}: its head ({host}:{port}) stopped answering"
                    if self.on_lost is not None:
                        self.on_lost()
                    return

    @property
    def lost(self) -> str | None:
        """Why the cluster counts as lost, or None while it answers."""
        return self._lost

    def close(self) -> None:
        """Stop waiting calls and disconnect. After a lost cluster, the disconnect is skipped: it would wait on a
        head that is gone (the process's exit releases the connection)."""
        self._closing.set()
        if self._watcher is not None:
            self._watcher.join(timeout=2 * _POLL_S)
        if self._lost is None:
            self._shutdown()
        else:
            # Ray's exit hook would disconnect too, waiting up to a minute for the head before killing the process
            # (exit 1), and tearing the interpreter down under Ray's client threads can crash it (SIGSEGV): the
            # interrupted run has already said what happened and must exit like Ctrl-C, so the CLI ends it with
            # os._exit once its output is flushed.
            abandon_connection(self._lost)
            with contextlib.suppress(Exception):
                import atexit

                from ray._private import worker

                atexit.unregister(worker.shutdown)

    def _shutdown(self) -> None:
        with contextlib.suppress(Exception):
            self._ray.shutdown()

    # ------------------------------------------------------------------ shipping
    def _remote(self, key: str, fn: Callable[..., Any]) -> Any:
        """The Ray remote function for ``fn`` with ``key``'s resources, made once per (key, fn): ``fn`` (with the
        host code it closes over) is exported to the cluster once, not pickled into every call."""
        with self._lock:
            found = self._remotes.get((key, id(fn)))
            if found is not None:
                return found[1]
            _host_code_by_value(self.base_dir)
            options = {
                **self.spec.resources_for(key).ray_options(),
                "max_retries": self.spec.max_retries,
                "retry_exceptions": False,
                "name": f"evalglass:{key}",
            }
            remote = self._ray.remote(rayworker.bind(fn, self.declared)).options(**options)
            self._remotes[(key, id(fn))] = (fn, remote)  # holds fn, so its id is never reused for another
            return remote

    def _submit(self, key: str, fn: Callable[..., Any], args: tuple[Any, ...]) -> Any:
        if self._lost is not None:
            raise ClusterLost(self._lost)
        remote = self._remote(key, fn)
        try:
            ref = remote.remote(*args)
        except Exception as exc:
            raise self._failure(exc) from None
        return ref

    async def run(self, key: str, fn: Callable[..., R], *args: Any, timeout: float | None = None) -> R:
        """``fn(*args)`` on a worker, awaited without blocking the event loop (the :class:`Offload` port)."""
        ref = self._submit(key, fn, args)
        future = asyncio.wrap_future(ref.future())
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        try:
            while True:
                wait = _POLL_S if deadline is None else max(0.0, min(_POLL_S, deadline - loop.time()))
                done, _ = await asyncio.wait({future}, timeout=wait)
                if done:
                    break
                if self._lost is not None and self.on_lost is None:
                    raise ClusterLost(self._lost)  # else the run's loop is being stopped, this task cancelled
                if deadline is not None and loop.time() >= deadline:
                    self._cancel(ref)
                    raise TimeoutError(f"no result within {timeout:g}s")
        except asyncio.CancelledError:
            self._cancel(ref)
            raise
        try:
            result: R = future.result()
        except Exception as exc:
            raise self._failure(exc) from None
        return result

    def call(self, key: str, fn: Callable[..., R], *args: Any) -> R:
        """``fn(*args)`` on a worker, waited for in this (pool) thread."""
        ref = self._submit(key, fn, args)
        future = ref.future()
        while True:
            try:
                result: R = future.result(timeout=_POLL_S)
            except concurrent.futures.TimeoutError:
                if self._lost is not None:
                    raise ClusterLost(self._lost) from None
                if self._closing.is_set():  # the run stopped: nobody waits for this any more
                    self._cancel(ref)
                    raise ClusterLost("the run is stopping") from None
                continue
            except Exception as exc:
                raise self._failure(exc) from None
            return result

    def _cancel(self, ref: Any) -> None:
        if self._lost is None:
            with contextlib.suppress(Exception):
                self._ray.cancel(ref, force=True)

    def _failure(self, exc: BaseException) -> BaseException:
        """What a failed call means: the cluster is gone (stop the run), or this call's work is lost (its example is
        ``error``). Reasons name what happened, never a process or node id, so a rerun records the same."""
        if self._lost is not None or isinstance(exc, ConnectionError):
            return ClusterLost(self._lost or f"lost the Ray cluster at {self.address}: {type(exc).__name__}")
        from ray import exceptions as rx

        retries = self.spec.max_retries
        if isinstance(exc, rx.WorkerCrashedError):
            return WorkLost(
                f"the worker process running it died {retries + 1} time(s) (executor.max_retries is {retries})"
            )
        if isinstance(exc, rx.OutOfMemoryError):
            return WorkLost("the worker running it ran out of memory and was killed by Ray")
        if isinstance(exc, rx.NodeDiedError):
            return WorkLost("the node running it died")
        if isinstance(exc, rx.RuntimeEnvSetupError):
            return WorkLost("the worker's runtime_env could not be set up (see the cluster's logs)")
        if isinstance(exc, rx.TaskCancelledError):
            return WorkLost("it was cancelled on the cluster")
        if isinstance(exc, rx.RayTaskError):
            cause = getattr(exc, "cause", None) or exc
            return WorkLost(f"the worker could not run it: {type(cause).__name__}: {_first_line(cause)}")
        return WorkLost(f"{type(exc).__name__}: {_first_line(exc)}")

    # ------------------------------------------------------------------ metrics
    def metric(self, name: str, function: MetricFn) -> MetricFn:
        """A host ``python`` metric whose every call is a task; a call whose work is lost is that example's
        ``error`` (``worker_lost``)."""
        bound = functools.partial(rayworker.metric_call, name, function)

        def shipped_metric(example: Any) -> Any:
            try:
                return self.call(name, bound, example)
            except WorkLost as exc:
                return Score.error("worker_lost", f"metric '{name}' could not run on the cluster: {exc}")

        return shipped_metric

    def check_runner(self, name: str) -> Callable[..., CheckResult]:
        """A per-example check runner (what a shipped ``check`` metric runs each check with) that runs each check on a
        worker; :class:`WorkLost` propagates, and the check metric makes it that example's ``error``."""
        bound: dict[int, Callable[..., CheckResult]] = {}

        def run_shipped(
            spec: CheckSpec, base_dir: str | os.PathLike[str], output: object, *, check_id: str, example_id: str
        ) -> CheckResult:
            fn = bound.get(id(spec))
            if fn is None:
                fn = bound[id(spec)] = functools.partial(rayworker.example_check, spec, str(Path(base_dir).resolve()))
            return self.call(name, fn, output, check_id, example_id)

        return run_shipped


def _host_code_by_value(base_dir: Path) -> None:
    """Host code (files EvalGlass loaded by path, modules inside the evals folder) travels with the call by value:
    the workers run exactly the code the driver hashed, whether or not they can import it. Installed packages
    travel by name and must be installed on the workers."""
    from ray import cloudpickle

    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None)
        if module is None or name == "evalglass" or name.startswith("evalglass."):
            continue
        if not name.startswith(_HOST_MODULE_PREFIXES) and not _inside(path, base_dir):
            continue
        with contextlib.suppress(ValueError):  # already registered, or a package cloudpickle refuses
            cloudpickle.register_pickle_by_value(module)  # type: ignore[no-untyped-call]


def _inside(path: str | None, folder: Path) -> bool:
    if not path:
        return False
    try:
        return Path(path).resolve().is_relative_to(folder) and "site-packages" not in path
    except OSError:
        return False


def _gcs_endpoint(ray: Any, address: str) -> tuple[str, int] | None:
    """Where to probe the cluster's head: the GCS address of a direct connection, the server of a ``ray://`` one."""
    target = address[len("ray://") :] if address.startswith("ray://") else None
    if target is None:
        try:
            target = ray.get_runtime_context().gcs_address
        except Exception:
            return None
    host, _, port = str(target).rpartition(":")
    if not host or not port.isdigit():
        return None
    return host.strip("[]"), int(port)


def _where(key: str) -> str:
    return "resources" if key == "resources" else f"overrides.{key}"


def _first_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[0][:300] if lines else type(exc).__name__


__all__ = ["LOST_AFTER_S", "RAY_EXTRA_HINT", "RayCluster"]
