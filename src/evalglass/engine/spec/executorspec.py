"""``executor:`` in evalglass.yaml: where a run's per-example work runs (validated config, no Ray import).

``type: local`` (the default) is today's in-process executor. ``type: ray`` ships each example's python- or
command-lane call, host-metric call and per-example check to a Ray cluster (``engine.produce.raycluster``); LLM calls
and the builtin metrics stay on the driver. Every key is checked strictly: an unknown one is refused, never ignored.

What a pull request could abuse is closed here or bound elsewhere: a secret can never be written into
``runtime_env.env_vars`` (workers read secrets from their own environment), and where shipped metrics run (the
address and the runtime environment) is part of the fingerprint an approval of their gates binds
(:meth:`RayExecutorSpec.binding_payload`), so pointing a run at another cluster makes those approvals stale.
"""

# No `from __future__ import annotations`: pydantic would compile each field's annotation text at class creation
# (a ForwardRef, ~75 k instructions a field on every run that imports this module).

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from evalglass.core.redact import is_secret_name

#: The ``runtime_env`` keys EvalGlass passes on to Ray (anything else is refused, so a typo is not ignored).
RUNTIME_ENV_KEYS = ("working_dir", "py_modules", "excludes", "pip", "uv", "conda", "env_vars", "config")
#: The key of ``overrides`` naming the task lane (metric names cannot contain ``:``, so neither clashes).
TASK_KEY = "task"


class ResourceSpec(BaseModel):
    """What one shipped call asks the cluster for (Ray's per-task resource requests)."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    num_cpus: float = Field(default=1, ge=0, le=1024, description="CPUs per call (fractions allowed).")
    num_gpus: float = Field(default=0, ge=0, le=64, description="GPUs per call.")
    memory: int | None = Field(default=None, ge=1, description="Bytes of memory per call, reserved by the scheduler.")
    custom: dict[str, float] = Field(
        default_factory=dict, description="Custom Ray resources per call, e.g. {sandbox: 1}."
    )

    @field_validator("custom")
    @classmethod
    def _positive(cls, entries: dict[str, float]) -> dict[str, float]:
        for name, amount in entries.items():
            if not name or amount < 0:
                raise ValueError(f"custom resource {name!r} needs a name and an amount >= 0")
        return entries

    def ray_options(self) -> dict[str, Any]:
        options: dict[str, Any] = {"num_cpus": self.num_cpus, "num_gpus": self.num_gpus}
        if self.memory is not None:
            options["memory"] = self.memory
        if self.custom:
            options["resources"] = dict(self.custom)
        return options


class LocalExecutorSpec(BaseModel):
    """Every call in this process (threads and one event loop): the default."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    type: Literal["local"] = "local"


class RayExecutorSpec(BaseModel):
    """Lane calls, host metrics and per-example checks as Ray tasks on a cluster (``pip install 'evalglass[ray]'``)."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    type: Literal["ray"]
    address: str | None = Field(
        default=None,
        description="`auto` (the cluster started on this machine), `host:port`, or `ray://host:10001`; default: "
        "the RAY_ADDRESS environment variable.",
    )
    resources: ResourceSpec = Field(default_factory=ResourceSpec, description="What each shipped call asks for.")
    overrides: dict[str, ResourceSpec] = Field(
        default_factory=dict,
        description="Per-call resources by `task` (the lane) or by the name of a `python` or `check` metric.",
    )
    runtime_env: dict[str, Any] = Field(
        default_factory=dict,
        description="Ray's runtime environment for the workers, e.g. {working_dir: .} to ship the evals folder "
        "(relative paths are relative to this config file). Never secrets: workers read them from their own "
        "environment.",
    )
    max_retries: int = Field(
        default=3,
        ge=0,
        le=100,
        description="Times Ray runs a call again when the worker process running it dies; past that, the example "
        "is an error.",
    )
    ship_async: bool = Field(
        default=False,
        description="Also ship an async python lane function (default: it runs on the driver's event loop, where "
        "I/O-bound calls belong).",
    )

    @field_validator("address")
    @classmethod
    def _address(cls, address: str | None) -> str | None:
        if address is not None and (not address.strip() or any(c.isspace() for c in address)):
            raise ValueError("address must be `auto`, `host:port` or `ray://host:port`, without spaces")
        return address

    @field_validator("overrides")
    @classmethod
    def _override_names(cls, entries: dict[str, ResourceSpec]) -> dict[str, ResourceSpec]:
        for name in entries:
            if not name:
                raise ValueError("an override needs a name: `task` or a metric's name")
        return entries

    @field_validator("runtime_env")
    @classmethod
    def _runtime_env(cls, env: dict[str, Any]) -> dict[str, Any]:
        unknown = sorted(set(env) - set(RUNTIME_ENV_KEYS))
        if unknown:
            raise ValueError(f"runtime_env key {unknown[0]!r} is not supported (known: {', '.join(RUNTIME_ENV_KEYS)})")
        for key in ("working_dir",):
            if key in env and (not isinstance(env[key], str) or not env[key].strip()):
                raise ValueError(f"runtime_env.{key} must be a folder path, relative to this config file")
        variables = env.get("env_vars", {})
        if not isinstance(variables, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in variables.items()
        ):
            raise ValueError("runtime_env.env_vars must map variable names to text")
        for name in variables:
            if is_secret_name(name):
                raise ValueError(
                    f"runtime_env.env_vars.{name} names a secret; a secret never goes in the config (it is recorded "
                    "in every run): set it in the workers' own environment instead"
                )
        return env

    def resolved_address(self, environ: dict[str, str] | Any) -> str | None:
        """The address to connect to: the declared one, else ``RAY_ADDRESS``; None when neither is set."""
        return self.address or (environ.get("RAY_ADDRESS") or "").strip() or None

    def resources_for(self, key: str) -> ResourceSpec:
        return self.overrides.get(key, self.resources)

    def binding_payload(self) -> dict[str, Any]:
        """What an approval of a gate on a shipped metric binds: where its work runs and in which environment
        (resources and retries change no value, so they are left out)."""
        return {"type": "ray", "address": self.address, "runtime_env": self.runtime_env}


AnyExecutor = Annotated[LocalExecutorSpec | RayExecutorSpec, Field(discriminator="type")]

__all__ = ["TASK_KEY", "AnyExecutor", "LocalExecutorSpec", "RayExecutorSpec", "ResourceSpec"]
