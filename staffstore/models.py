"""The values that flow between staffstore's layers, as pydantic models.

A Claim is a verified finding with provenance; a Turn is what a user asked; a Decision is the
gate's answer to a Turn; a Receipt records what one turn cost. Usage a provider did not report
is None, never 0: the ledger counts unknowns instead of pretending they were free.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator

ClaimStatus = Literal["live", "superseded", "retracted", "expired"]
ClaimSource = Literal["job", "chat", "manual"]
#: What a gate candidate may come from: a stored claim's source, or a kept answer (a paid
#: reply whose prompt the gate compares with a turn, as it compares a claim's question).
CandidateSource = Literal["job", "chat", "manual", "kept_answer"]
#: Where a hit's answer came from: a claim, or a kept answer (an exact repeat or a reworded
#: context-free question reusing a paid reply).
HitSource = Literal["claim", "kept_answer"]
Outcome = Literal["hit", "miss"]
Role = Literal["system", "user", "assistant"]

#: Receipt statuses: "ok" a model answered; "hit" served from a claim or a kept answer;
#: the rest are failures, of which only "no_api_key" was not an inference attempt.
ReceiptStatus = Literal[
    "ok", "hit", "error", "timeout", "unreachable", "no_api_key", "cancelled", "rejected"
]


#: The moments a date from a request may name, in UTC. Python's calendar ends at years 1 and
#: 9999, so "0001-01-01T00:00:00+23:59" is a day before it begins in UTC: stored, it would make
#: every later read of its row fail. A year's room at the top keeps arithmetic on it in range.
EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
LATEST = datetime(9999, 1, 1, tzinfo=UTC)


def in_calendar(moment: datetime) -> datetime:
    """`moment` in UTC (naive read as UTC) when it lies from EARLIEST to LATEST, else a
    ValueError that pydantic reports as the field's problem (a 400, never a 500)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    try:
        utc = moment.astimezone(UTC)
    except OverflowError:  # the offset carries it past year 1 or 9999
        utc = None
    if utc is None or not EARLIEST <= utc < LATEST:
        raise ValueError(f"must lie from {EARLIEST:%Y-%m-%d} to {LATEST:%Y-%m-%d} (UTC)")
    return utc


#: A date a request may give: see in_calendar.
Moment = Annotated[datetime, AfterValidator(in_calendar)]


#: How long work tells how far it has come: called with (items done, items in all). The
#: library calls it; only the command line draws anything (a bar on a terminal), so the layers
#: below stay free of any UI.
Progress = Callable[[int, int], None]


def utcnow() -> datetime:
    return datetime.now(UTC)


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be blank")
    return value


#: Text with something in it besides whitespace: an owner, a question or a task of spaces
#: would pass a length check and name nothing.
NonBlank = Annotated[str, AfterValidator(_not_blank)]


class FrozenModel(BaseModel):
    """The base of staffstore's records: immutable, and refusing fields it does not know."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class NewClaim(FrozenModel):
    """A finding to store. Identity is a hash over these fields (see identity.claim_id)."""

    owner: NonBlank = Field(min_length=1, max_length=200)
    question: NonBlank = Field(min_length=1, max_length=20_000)
    answer: NonBlank = Field(min_length=1, max_length=200_000)
    agent: str | None = None
    source: ClaimSource = "manual"
    job_id: str | None = None
    repository: str | None = None
    profile: str | None = None
    revision: str | None = None
    inputs_fingerprint: str | None = None
    expires_at: datetime | None = None

    @field_validator("expires_at")
    @classmethod
    def _aware(cls, value: datetime | None) -> datetime | None:
        # In the calendar, in UTC: a moment past its edges stored would break every later read.
        return None if value is None else in_calendar(value)


class Claim(NewClaim):
    """A stored claim: the finding plus its id, lifecycle status and timestamps. (The gate
    also reads a kept answer as one, source "kept_answer": see gate/kept_reuse.py.)"""

    id: str
    source: CandidateSource = "manual"  # type: ignore[assignment]
    status: ClaimStatus = "live"
    created_at: datetime
    superseded_by: str | None = None


class Turn(FrozenModel):
    """One user turn as the gate sees it. `now` pins the clock for deterministic replays."""

    owner: str = Field(min_length=1)
    text: str
    session: str | None = None
    #: The agent whose working state the prompt carries (the default agent when None).
    agent: str | None = None
    repository: str | None = None
    revision: str | None = None
    now: datetime | None = None
    #: The share of turns that may be served another question's answer (the gate's error
    #: budget); None takes the default (gate.scoring.DEFAULT_BUDGET).
    gate_budget: float | None = Field(default=None, ge=0.0, le=1.0)


class Decision(FrozenModel):
    """The gate's verdict: a hit names the claim that answers the turn; a miss says why."""

    outcome: Outcome
    reason: str
    claim_id: str | None = None
    score: float | None = None
    answer: str | None = None
    claim: Claim | None = None
    #: On a miss against a nearest stored question, the words that differ as each side typed
    #: them: in the turn only, and in the stored question only (empty when only order differs).
    asked_only: list[str] = Field(default_factory=list)
    stored_only: list[str] = Field(default_factory=list)
    #: When the second look scored the turn: the calibrated threshold `score` was held against,
    #: and the error budget it was calibrated for. None on a strict match.
    threshold: float | None = None
    budget: float | None = None
    #: When the second look refused the nearest question outright: the slot in which it differs
    #: ("number", "environment", "focus", ...), "word_order" or "substitution".
    differs_in: str | None = None

    @property
    def hit(self) -> bool:
        return self.outcome == "hit"


class Message(FrozenModel):
    role: Role
    content: str


class WorkingSet(FrozenModel):
    """The bounded prompt for a miss: system, recalled claims, recent tail; never more."""

    messages: list[Message]
    tokens: int
    budget: int
    truncated: bool
    recalled_claim_ids: list[str]
    tail_messages: int
    #: UTF-8 bytes of the working-state section in the prompt (0: none).
    working_state_bytes: int = 0
    #: Tokens of the workflow-memory section in the prompt (0: none; see build_working_set).
    memory_tokens: int = 0
    #: Tokens sent per part (turn, system, claims, story, vault, tail, state, memory, marker).
    part_tokens: dict[str, int] = Field(default_factory=dict)
    #: The parts that had a budget of their own, with it (working_set.budgets.Budgets).
    part_budgets: dict[str, int] = Field(default_factory=dict)
    #: How the tokens were counted: "estimate" (four characters a token) or "tokenizer".
    counted_by: str = "estimate"
    #: The session's older messages sent as vault hits: recording the turn counts a recall
    #: for each (a message recalled often keeps its handle longer: working_set/rungs.py).
    vault_message_ids: list[int] = Field(default_factory=list)


class ChatReply(FrozenModel):
    """What one upstream call returned. Usage fields are None when the provider did not say."""

    text: str
    model: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cost_usd: float | None = None
    finish_reason: str | None = None
    response_id: str | None = None


class Receipt(FrozenModel):
    """What one turn did and cost. Written for every turn, hit or miss, success or failure."""

    id: str
    owner: str
    outcome: Outcome
    reason: str
    status: ReceiptStatus
    model: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cost_usd: float | None = None
    inference_avoided: bool
    inference_attempted: bool
    latency_ms: float
    started_at: datetime
    finished_at: datetime
    session_id: str | None = None
    claim_id: str | None = None
    question: str | None = None
    answer: str | None = None
    error: str | None = None
    #: On a hit: the receipt of the paid call whose answer was served (a kept answer's own
    #: receipt, or the one its claim was promoted from); None when no paid call is known
    #: (a job's or a person's claim).
    served_from: str | None = None
    #: On a hit: what that paid call cost, the estimate of the cost this hit avoided; None
    #: when unknown, never 0.
    avoided_cost_usd: float | None = None
    #: On a call with a prompt staffstore built (a working set): its tokens per part (turn,
    #: system, claims, memory, story, vault, tail, state, marker), as counted when it was
    #: built; None when the client's own messages were sent.
    prompt_parts: dict[str, int] | None = None
    #: On a hit: where its answer came from, "claim" or "kept_answer" (an exact repeat, or a
    #: reworded context-free question served a paid reply); None on a miss.
    source: HitSource | None = None


class Ledger(FrozenModel):
    """Totals over receipts. Known usage is summed; turns with unknown usage are counted.

    A request refused before the gate (bad JSON, no messages, an empty question) is not a
    turn: it is counted in `rejected` only, never as a miss.
    """

    turns: int
    hits: int
    misses: int
    avoided_calls: int
    attempted_calls: int
    failed_calls: int
    not_attempted: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    unknown_usage_turns: int
    unknown_cost_turns: int
    rejected: int = 0
    #: An estimate: the sum, over avoided calls, of what the paid call whose answer each one
    #: served cost (Receipt.avoided_cost_usd). None when calls were avoided and none of them
    #: has a known estimate; 0 when no call was avoided.
    estimated_avoided_cost_usd: float | None = None
    #: Avoided calls whose estimate is unknown, left out of estimated_avoided_cost_usd.
    unknown_avoided_cost_calls: int = 0

    @property
    def avoidance(self) -> float | None:
        """Hits per turn; None when there are no turns (nothing to divide, not 0%)."""
        return self.avoided_calls / self.turns if self.turns else None


class KeptFrom(FrozenModel):
    """Where a kept answer came from: the paid turn's receipt, its model and when it was kept."""

    receipt_id: str
    model: str | None = None
    kept_at: datetime


#: Where a turn's answer came from: a verified claim, an answer kept from an earlier paid turn
#: (an exact repeat), or a model call; None when there is no answer (a failed or refused turn).
AnswerSource = Literal["claim", "kept_answer", "model"]


class TurnResult(FrozenModel):
    """One turn end to end: the answer (None when the call failed), the decision, the receipt."""

    answer: str | None
    decision: Decision
    receipt: Receipt
    working_set: WorkingSet | None = None
    #: Set when the answer is a kept answer served for an exact repeat.
    kept_from: KeptFrom | None = None

    @property
    def source(self) -> AnswerSource | None:
        """Where the answer came from: "claim", "kept_answer", "model", or None (no answer)."""
        if self.answer is None:
            return None
        if self.kept_from is not None:
            return "kept_answer"
        return "claim" if self.decision.hit else "model"


# -- jobs: records of work a runner did, kept so the same work is paid for once ----------------

JobKind = Literal["analyze", "implement"]
JobStatus = Literal["pending", "running", "succeeded", "failed", "cancelled", "lost"]
#: What one ensure_dispatched call did; a reuse is a job avoided.
JobAction = Literal["launched", "reused", "attached", "lost"]
#: A job in one of these may still finish: its launch key is taken while it is.
ACTIVE_JOB_STATUSES: tuple[JobStatus, ...] = ("pending", "running")


class NewJob(FrozenModel):
    """A job to record before its runner is called. Identity fields are kept as given, with
    the task also normalised (`task_key`) and the inputs as canonical JSON and its SHA-256."""

    owner: str = Field(min_length=1, max_length=200)
    agent: str = Field(min_length=1, max_length=200)
    kind: JobKind
    task: str = Field(min_length=1, max_length=20_000)
    task_key: str
    repository: str | None = None
    profile: str | None = None
    revision: str | None = None
    inputs: str = "{}"
    inputs_fingerprint: str
    launch_key: str = Field(min_length=1, max_length=500)
    command: list[str] | None = None
    runner: str
    expires_at: datetime | None = None


class JobArtifact(FrozenModel):
    """One output of a job, stored content-addressed in the artifacts table."""

    name: str
    artifact_id: str
    kind: str
    size: int


class Job(NewJob):
    """A recorded job: its identity, where its runner put it, and what it left."""

    id: str
    status: JobStatus
    handle: str | None = None
    exit_code: int | None = None
    error: str | None = None
    #: True when the job left a finding or an output with something in it: only such a job
    #: may be reused as prior work.
    substantive: bool = False
    created_at: datetime
    updated_at: datetime
    finished_at: datetime | None = None
    artifacts: list[JobArtifact] = Field(default_factory=list)
    claim_ids: list[str] = Field(default_factory=list)

    @property
    def active(self) -> bool:
        return self.status in ACTIVE_JOB_STATUSES


class JobReceipt(FrozenModel):
    """What one dispatch did: launched, reused, attached or lost, which job, and why."""

    id: str
    owner: str
    job_id: str
    action: JobAction
    reason: str
    matched: list[str] = Field(default_factory=list)
    mismatched: list[str] = Field(default_factory=list)
    created_at: datetime


class JobLedger(FrozenModel):
    """Totals over job receipts. A reused job is a job avoided, as a hit is a call avoided."""

    dispatches: int
    launched: int
    reused: int
    attached: int
    lost: int

    @property
    def jobs_avoided(self) -> int:
        return self.reused
