"""The property child's job and result records, declared once for both sides of the channel.

The parent (``lanes.property``: ``plan``, ``faults``, ``audit``) builds a ``Job`` and sends it as JSON on the child's
stdin; the child reads it back as one (the parent is trusted, so the child does not check
it). The child (``child.properties``) builds its records as these shapes and writes each as one
JSON line; the parent (``lanes.property.judge``) believes a line only once a validator has
proved it has exactly one of these shapes, and from then on reads it through the type.
``TypedDict`` (not a class with attributes): a record is plain data on both sides, and
building one in the child looks nothing up that the code under test could have rebound.

Standard library only: the child imports this before the repository is on ``sys.path``.
"""

from __future__ import annotations

from typing import Literal, NotRequired, TypedDict, final

# The dependency recorder's context names (``child.recorder``), read by ``formats.depmap``
# without importing the recorder (which imports pytest and coverage).
FIXTURE = "fixture:"  # the context of a fixture's setup: FIXTURE + its name
IMPORT = ""  # the context outside every test and fixture: imports, collection


class Job(TypedDict):
    """What one property child is asked to do.

    ``mode`` is ``run``, ``audit`` or ``import``; ``module`` is imported from ``paths``
    and must load from ``expect_file``; ``names`` are the properties to report; ``trees``
    are the roots file names are shown relative to; ``guarded`` the directories the
    child's sandbox must not write into. ``tests``: the names are test node ids of a
    Hypothesis test module; ``record``: the child records what it reads (for the result
    cache). ``result_fd`` and ``token`` are added when the child is started. The audit's
    keys: ``project_root`` and ``exclude`` (which called functions count),
    ``mutants``, ``per_mutant_timeout_s`` (by property) and ``budget_s``.
    """

    mode: Literal["run", "audit", "import"]
    module: str
    names: list[str]
    expect_file: str
    paths: list[str]
    cwd: str
    trees: list[str]
    seed: int
    cases: int
    case: int | None
    hypothesis: bool
    guarded: list[str]
    home: NotRequired[str]
    tests: NotRequired[bool]
    record: NotRequired[bool]
    result_fd: NotRequired[int]
    token: NotRequired[str]
    project_root: NotRequired[str]
    exclude: NotRequired[list[str]]
    mutants: NotRequired[int]
    per_mutant_timeout_s: NotRequired[dict[str, float]]
    budget_s: NotRequired[float]


class ReplayJob(TypedDict):
    """What one replay child (``replay_collect``, ``replay_run``) is asked to do: pytest's
    ``args``, and where its records go (``result_fd``, ``token``: added when it is started).

    The run child runs ``nodeids`` (with the whole ``files`` they stand for) or, given an
    ``answer_fd``, asks the parent which to run after collecting; ``record`` names the file
    the dependency recorder writes (``replay map``). What is collected: ``extra_paths``
    besides the suite's, ``doctest_only`` files for their doctests alone, ``only_files``
    (``None``: all) and never ``exclude_files``. ``project``: the project's importable names,
    whose modules' origins the run child reports (``child.origins``). ``then_files``: every
    test of these files that ``nodeids`` does not name runs after those (a slice widened by
    what it left behind, in one process: ``lanes.replay.widen``). ``preload``: files of the
    tree imported before the tests run (``child.leftover.preload``). ``calls``: the changed
    functions whose calls the run records for the witness (``child.calls``).
    """

    args: list[str]
    result_fd: NotRequired[int]
    token: NotRequired[str]
    nodeids: NotRequired[list[str]]
    files: NotRequired[list[str]]
    record: NotRequired[str | None]
    answer_fd: NotRequired[int]
    extra_paths: NotRequired[list[str]]
    doctest_only: NotRequired[list[str]]
    only_files: NotRequired[list[str] | None]
    exclude_files: NotRequired[list[str]]
    then_files: NotRequired[list[str]]
    preload: NotRequired[list[str]]
    # Dotted names of changed modules whose import the run child watches for what it changes
    # outside the module (``child.importstate``; the asking run child only).
    watch_imports: NotRequired[list[str]]
    # Those modules' files (repository paths): a run of their code the watch did not wrap
    # (a loader of a test tool's own, ``exec`` of the file) is reported.
    watch_files: NotRequired[list[str]]
    # The run's Hypothesis seed (the drawn hash seed): in the job, never in the environment.
    seed: NotRequired[int]
    project: NotRequired[list[str]]
    # Files (as the child sees them) -> qualified names of the functions whose calls the
    # run records for the witness (``child.calls``; the vacuity check's run only).
    calls: NotRequired[dict[str, list[str]]]
    # patchlane's store of rewritten test modules (``child.rewritten``), read-only to the run.
    rewritten: NotRequired[str]


# A JSON value as the child wrote it (a failing case's arguments, made JSON-safe).
JSONValue = object


@final
class RunPassed(TypedDict):
    """A property that passed in a ``run`` child: every failure field is ``None``."""

    property: str
    style: str
    outcome: Literal["pass"]
    kind: None
    case_index: None
    arguments: None
    message: None
    missing: None
    seconds: float


@final
class RunFailed(TypedDict):
    """A property that failed in a ``run`` child: ``kind`` says what failed
    (``assertion``, ``error``, ``sandbox``, ``module``), ``message`` how, and
    ``case_index``/``arguments`` keep the counterexample when there is one; ``missing``
    names the package an import could not find."""

    property: str
    style: str
    outcome: Literal["fail"]
    kind: str
    case_index: int | None
    arguments: JSONValue
    message: str
    missing: str | None
    seconds: float


# One property's outcome in a ``run`` child, told apart by ``outcome``.
RunResult = RunPassed | RunFailed


@final
class ImportResult(TypedDict):
    """An ``import`` child's answer for one property: ``message`` is ``None`` when the
    module imported, else why not, with the ``missing`` top-level package if one was."""

    property: str
    missing: str | None
    message: str | None
    seconds: float


@final
class AuditFindings(TypedDict):
    """The oracle audit of one property: ``[kind, detail]`` findings and mutant counts."""

    findings: list[list[str]]
    mutants: int
    killed: int


@final
class AuditError(TypedDict):
    """Why one property was not audited."""

    error: str


@final
class AuditResult(TypedDict):
    """An ``audit`` child's record for one property."""

    property: str
    audit: AuditFindings | AuditError
    seconds: float
