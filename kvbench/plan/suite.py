"""Suites: TOML files naming benchmarks and parameter sweeps, validated with pydantic."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from kvbench.errors import BadInput
from kvbench.input_files import read_toml_file, suites_dir
from kvbench.measure.engine import Settings

Scalar = int | float | str | bool


MIN_SAMPLES = 5  # p10 and p90 need five
MAX_SAMPLES = 10_000  # beyond these a suite would run for days: a typo, not a plan


class SuiteSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    samples: int = Field(7, ge=MIN_SAMPLES, le=MAX_SAMPLES)
    min_sample_s: float = Field(0.02, gt=0, le=60)
    warmup_s: float = Field(0.05, ge=0, le=600)
    precision: float = Field(0.01, gt=0, lt=1)  # the median's 95 % CI within ± this fraction of it
    max_time_s: float | None = Field(None, gt=0, le=3600)  # per case; None: samples × min_sample_s

    def engine_settings(self) -> Settings:
        return Settings(samples=self.samples, min_sample_s=self.min_sample_s, warmup_s=self.warmup_s,
                        precision=self.precision, max_time_s=self.max_time_s)


class BenchSweep(BaseModel):
    """One benchmark and its sweep: list values expand as a cartesian product."""

    model_config = ConfigDict(extra="forbid")
    id: str
    params: dict[str, Scalar | list[Scalar]] = {}
    exclude: list[dict[str, Scalar]] = []


class Suite(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    description: str = ""
    settings: SuiteSettings = SuiteSettings()
    bench: list[BenchSweep] = Field(min_length=1)


def suite_names() -> list[str]:
    return sorted(p.stem for p in suites_dir().glob("*.toml"))


def find_suite(name_or_path: str) -> Path:
    """A suite file from a path, or by name among the shipped suites."""
    path = Path(name_or_path)
    if path.suffix == ".toml" or path.exists():
        if path.is_dir():
            raise BadInput(f"suite '{name_or_path}' is a folder; give a .toml file")
        if not path.exists():
            raise BadInput(f"suite file '{name_or_path}' does not exist")
        return path  # a device or a pipe is refused by its reader, which says so
    shipped = suites_dir() / f"{name_or_path}.toml"
    if not shipped.is_file():
        from kvbench.errors import unknown_name

        raise unknown_name("suite", name_or_path, suite_names())
    return shipped


def _line_of(text: str, loc: tuple[Any, ...]) -> int | None:
    """Best-effort line number (1-based) of the key at pydantic location `loc` in the TOML text."""
    lines = text.splitlines()
    start = 0
    keys = [k for k in loc if isinstance(k, str)]
    if loc and loc[0] == "bench" and len(loc) > 1 and isinstance(loc[1], int):
        headers = [i for i, line in enumerate(lines) if line.strip().startswith("[[bench]]")]
        if loc[1] < len(headers):
            start = headers[loc[1]]
        keys = keys[1:]
    for key in reversed(keys):
        pattern = re.compile(rf"(^|[\s{{,\[.]){re.escape(key)}\s*(=|\])")
        for i in range(start, len(lines)):
            if pattern.search(lines[i]):
                return i + 1
    return start + 1 if start else None


def load_suite(name_or_path: str) -> tuple[Suite, Path, str]:
    """(suite, its file, sha256 of its text); every problem raises a one-line `BadInput`."""
    path = find_suite(name_or_path)
    text, data = read_toml_file(path, f"suite {path}")
    try:
        suite = Suite.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        key = ".".join(str(k) for k in err["loc"])
        line = _line_of(text, tuple(err["loc"]))
        where = f", line {line}" if line else ""
        raise BadInput(f"suite {path}{where}: key '{key}': {err['msg']}") from None
    return suite, path, hashlib.sha256(text.encode()).hexdigest()
