"""How much a workflow remembers, and how a step may narrow it.

The defaults are gathered in one literal (DEFAULTS). A workflow's settings and each step's are
stored (MemoryConfig, None where a field was not set) and combined by `effective`: a step can
only narrow its workflow's setting. `enabled=False` on a step turns memory off for that step
(and withholds `remember`), a smaller budget lowers the cap, and `include` keeps only entries
the workflow also lists; a step cannot switch on memory its workflow turned off, and `retain`
and `digest_chars` are the workflow's alone (records are kept per workflow, not per step).

An include entry is `workflow:NAME` (same project), `workflow:PROJECT/NAME` (another project),
`project` (every other workflow of this project) or `global` (every other workflow of the
owner): the memory section then carries those workflows' lessons and runs too, labelled.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import InputError
from ..models import FrozenModel
from ..state.checks import shown
from ..state.scoped import check_part
from ..store.memory_tables import MemorySettingsRow, WorkflowName, WorkflowSet


@dataclass(frozen=True)
class MemoryDefaults:
    """Every limit of workflow memory; one instance, DEFAULTS, holds the defaults."""

    #: Tokens of memory one step's prompt may be given.
    budget: int = 1_500
    #: Raw run records a workflow keeps before the oldest fold into its digest.
    retain: int = 20
    #: Characters of the rolling digest: its oldest lines go first when it grows past this.
    digest_chars: int = 2_000
    #: Each field of a record is scrubbed, then cut to these many characters.
    input_chars: int = 500
    outcome_chars: int = 500
    step_chars: int = 300
    why_chars: int = 300
    lesson_chars: int = 1_000
    #: The most steps and human decisions one record keeps (the first ones).
    max_steps: int = 50
    max_decisions: int = 20
    #: The bounds a setting must stay within.
    min_budget: int = 100
    max_budget: int = 32_000
    max_retain: int = 1_000
    min_digest_chars: int = 200
    max_digest_chars: int = 20_000
    max_includes: int = 32
    #: The most lessons and runs a section or a listing reads.
    read_limit: int = 1_000


DEFAULTS = MemoryDefaults()


class MemoryConfig(FrozenModel):
    """Memory settings as stored for a workflow or a step; None where not set there."""

    enabled: bool | None = None
    budget: int | None = None
    retain: int | None = None
    include: tuple[str, ...] | None = None
    digest_chars: int | None = None


class EffectiveMemory(FrozenModel):
    """The settings in force for a workflow, or for one step of it."""

    project: str
    workflow: str
    step: str | None
    enabled: bool
    budget: int
    retain: int
    digest_chars: int
    include: tuple[str, ...]
    #: As stored: the workflow's own, and the step's (None when no step was named).
    workflow_config: MemoryConfig
    step_config: MemoryConfig | None = None


@dataclass(frozen=True)
class Included:
    """One include entry, parsed: a workflow, a whole project, or every workflow."""

    kind: str  # "workflow", "project" or "global"
    project: str = ""
    workflow: str = ""


def parse_include(entry: str, project: str) -> Included:
    """An include entry as written (`workflow:triage`, `workflow:infra/deploy`, `project`,
    `global`), or InputError."""
    if entry == "project":
        return Included("project", project)
    if entry == "global":
        return Included("global")
    name = entry.removeprefix("workflow:")
    if name == entry or not name:
        raise InputError(
            f"include entry {shown(entry)} must be workflow:NAME, workflow:PROJECT/NAME, "
            "project or global"
        )
    other, _, workflow = name.rpartition("/")
    return Included(
        "workflow", check_part(other or project, "a project name"),
        check_part(workflow, "a workflow name"),
    )  # fmt: skip


def check_config(config: MemoryConfig, *, step: bool, project: str) -> MemoryConfig:
    """`config` when every field is within DEFAULTS' bounds (and a step sets no workflow-only
    field), else InputError naming the field."""
    d = DEFAULTS
    if config.budget is not None and not d.min_budget <= config.budget <= d.max_budget:
        raise InputError(f"budget must be {d.min_budget}-{d.max_budget} tokens")
    if step and (config.retain is not None or config.digest_chars is not None):
        raise InputError(
            "retain and digest_chars are a workflow's settings: a step cannot set them"
        )
    if config.retain is not None and not 0 <= config.retain <= d.max_retain:
        raise InputError(f"retain must be 0-{d.max_retain} run records")
    chars = config.digest_chars
    if chars is not None and not d.min_digest_chars <= chars <= d.max_digest_chars:
        raise InputError(f"digest_chars must be {d.min_digest_chars}-{d.max_digest_chars}")
    if config.include is not None:
        if len(config.include) > d.max_includes:
            raise InputError(f"include may list at most {d.max_includes} entries")
        for entry in config.include:
            parse_include(entry, project)
        # Written once each, in the order given.
        config = config.model_copy(update={"include": tuple(dict.fromkeys(config.include))})
    return config


def config_of(row: MemorySettingsRow | None) -> MemoryConfig:
    if row is None:
        return MemoryConfig()
    return MemoryConfig(
        enabled=row.enabled, budget=row.budget, retain=row.retain,
        include=None if row.include is None else tuple(row.include),
        digest_chars=row.digest_chars,
    )  # fmt: skip


def effective(
    workflow: WorkflowName,
    rows: list[MemorySettingsRow],
    step: str | None = None,
) -> EffectiveMemory:
    """The settings in force for the workflow (and `step` of it) from its stored rows."""
    by_step = {row.step: row for row in rows}
    own = config_of(by_step.get(""))
    narrowed = config_of(by_step.get(step)) if step is not None else None
    enabled = own.enabled is not False
    budget = own.budget if own.budget is not None else DEFAULTS.budget
    include = own.include or ()
    if narrowed is not None:
        # A step only narrows: it can turn memory off, never on.
        enabled = enabled and narrowed.enabled is not False
        if narrowed.budget is not None:
            budget = min(budget, narrowed.budget)
        if narrowed.include is not None:
            include = tuple(entry for entry in include if entry in narrowed.include)
    project, name = workflow
    return EffectiveMemory(
        project=project, workflow=name, step=step, enabled=enabled, budget=budget,
        retain=own.retain if own.retain is not None else DEFAULTS.retain,
        digest_chars=own.digest_chars if own.digest_chars is not None else DEFAULTS.digest_chars,
        include=include, workflow_config=own, step_config=narrowed,
    )  # fmt: skip


def covered(settings: EffectiveMemory) -> WorkflowSet:
    """The workflows whose memory these settings read: the workflow itself and its includes."""
    own = (settings.project, settings.workflow)
    workflows: list[WorkflowName] = [own]
    projects: list[str] = []
    for entry in settings.include:
        included = parse_include(entry, settings.project)
        if included.kind == "global":
            return WorkflowSet(everything=True)
        if included.kind == "project":
            projects.append(included.project)
        else:
            workflows.append((included.project, included.workflow))
    return WorkflowSet(tuple(dict.fromkeys(workflows)), tuple(dict.fromkeys(projects)))
