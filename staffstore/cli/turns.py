"""The turn commands: `query` (the gate's decision, no model call) and `ask` (a whole turn,
the model called only on a miss, its answer kept for an exact repeat).

Loaded first through `cli.app.EXTENSIONS`, so they lead the command list. `-` as the question
reads it from standard input. `ask --stream` prints the answer as the model writes it, through
a ChatFn that reads the upstream's stream; ensure_mouth writes the receipt whatever stops it.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Any

import typer
from pydantic import ValidationError

from ..config import DEFAULTS
from ..errors import InputError
from ..gate import query_first
from ..models import ChatReply, Decision, Message, Turn, TurnResult
from ..money import usd
from ..mouth import MAX_KEEP_SECONDS, CachePolicy, ChatFn, ensure_mouth
from ..settings import calibrated_gate_budget
from ..store import StaffStore
from ..store.importer import parse_json_object, validation_message
from ..store.location import StoreAddress
from ..upstream import DEFAULT_BASE_URL, DEFAULT_MODEL, OpenRouter
from ..working_set import DEFAULT_BUDGET, ROLES, budgets_for, parse_part_budgets
from .app import (
    NOT_UTF8,
    GateBudgetOption,
    JsonOption,
    OwnerOption,
    RepositoryOption,
    RevisionOption,
    SessionOption,
    db_address,
    fail,
    http_url,
    print_json,
    run,
    settings_of,
    utf8,
    with_store,
)


def question_text(given: str) -> str:
    """A question argument's text: `-` reads the whole of standard input (UTF-8, its ends
    trimmed), as `claims import -` reads a file from it; anything else is the question."""
    if given != "-":
        return given
    raw = typer.get_binary_stream("stdin").read()
    try:
        return raw.decode("utf-8").strip()
    except UnicodeDecodeError:
        fail(f"standard input is {NOT_UTF8}")


# -- query: the gate's decision, no model call -------------------------------------------------

_QUERY_FIELDS = frozenset({"owner", "text", "session", "repository", "revision", "gate_budget"})


def _decision_json(decision: Decision) -> dict[str, Any]:
    return {
        "outcome": decision.outcome,
        "reason": decision.reason,
        "answer": decision.answer,
        "claim_id": decision.claim_id,
        "score": decision.score,
        "threshold": decision.threshold,
        "budget": decision.budget,
        "differs_in": decision.differs_in,
        "asked_only": decision.asked_only,
        "stored_only": decision.stored_only,
    }


def _print_decision(decision: Decision) -> None:
    parts = [decision.outcome, decision.reason]
    if decision.score is not None:
        parts.append(f"score {decision.score:.3f}")
    if decision.threshold is not None and decision.budget is not None:
        # The second look's verdict: its score against the threshold calibrated for the budget.
        sign = ">=" if decision.hit else "<"
        parts[-1] += f" {sign} threshold {decision.threshold:.3f} (budget {decision.budget:g})"
    if decision.differs_in is not None:
        parts.append(f"differs in {decision.differs_in.replace('_', ' ')}")
    if decision.claim_id is not None:
        parts.append(f"{'claim' if decision.hit else 'nearest'} {decision.claim_id}")
    typer.echo("  ".join(parts))
    if decision.asked_only or decision.stored_only:
        asked = ", ".join(decision.asked_only) or "-"
        stored = ", ".join(decision.stored_only) or "-"
        typer.echo(f"  only in the question asked: {asked}; only in the stored one: {stored}")
    if decision.answer is not None:
        typer.echo(decision.answer)


def _turn_from_line(raw: bytes, defaults: dict[str, Any]) -> tuple[Turn, Any]:
    """Parse one --jsonl input line into a Turn and the caller's `id`; InputError if bad."""
    obj = parse_json_object(raw)
    ident = obj.pop("id", None)
    unknown = sorted(set(obj) - _QUERY_FIELDS)
    if unknown:
        raise InputError(f"unknown field(s): {', '.join(unknown)}")
    if "text" not in obj:
        raise InputError("text: Field required")
    try:
        turn = Turn.model_validate({**defaults, **obj})
    except ValidationError as error:
        raise InputError(validation_message(error)) from None
    if turn.gate_budget is not None:
        calibrated_gate_budget(turn.gate_budget)  # InputError naming the calibrated ones
    return turn, ident


async def _query_lines(db: StoreAddress, defaults: dict[str, Any]) -> dict[str, int]:
    """Answer each standard-input line with one output line; count the outcomes."""
    counts = {"hit": 0, "miss": 0, "error": 0}
    stdin = typer.get_binary_stream("stdin")
    stdout = typer.get_text_stream("stdout")
    async with StaffStore.open(db, create=False) as store:
        for number, raw in enumerate(stdin, start=1):
            if number == 1:
                # A byte order mark before the first line (editors on Windows write one) is
                # not part of it, as the claims importer reads files too.
                raw = raw.removeprefix(b"\xef\xbb\xbf")
            if not raw.strip():
                continue
            ident: Any = None
            try:
                turn, ident = _turn_from_line(raw, defaults)
            except InputError as error:
                out: dict[str, Any] = {"outcome": "error", "error": str(error), "line": number}
            else:
                out = {**_decision_json(await query_first(store, turn)), "line": number}
            if ident is not None:
                out["id"] = ident
            counts[out["outcome"]] += 1
            stdout.write(json.dumps(out, ensure_ascii=False) + "\n")
            stdout.flush()
    return counts


def query(
    ctx: typer.Context,
    question: Annotated[
        str | None,
        typer.Argument(
            metavar="[QUESTION]",
            callback=utf8,
            help="The question; - reads it from standard input (omit with --jsonl).",
            show_default=False,
        ),
    ] = None,
    owner: Annotated[
        str | None,
        typer.Option(
            "--owner", callback=utf8, help="Whose claims to answer from (required without --jsonl)."
        ),
    ] = None,
    repository: RepositoryOption = None,
    revision: RevisionOption = None,
    session: SessionOption = None,
    gate_budget: GateBudgetOption = None,
    as_json: JsonOption = False,
    jsonl: Annotated[
        bool, typer.Option("--jsonl", help="Read queries from stdin, one JSON object a line.")
    ] = False,
) -> None:
    """Show the gate's decision for a question: a hit with its claim, or a miss and why.

    No model is called. With --jsonl, each standard-input line is a JSON object with `text`,
    `owner` and optionally `repository`, `revision`, `session` (the options of those names
    give defaults) and `id`; each gets one output line with `outcome`, `reason`, `answer`
    (null on a miss), `claim_id`, `score`, `line` and the `id` given. Blank lines are
    skipped. A line that cannot be read gets `{"outcome": "error", "error": "...", "line": N}`
    and the rest go on; the exit code stays 0 and a summary on standard error counts errors.

    `-` as the question reads it from standard input; put `--` before a question that
    starts with "-".
    """
    if jsonl:
        if question is not None:
            raise typer.BadParameter("give a question or --jsonl, not both", param_hint="QUESTION")
        given = {
            "owner": owner, "repository": repository, "revision": revision, "session": session,
            "gate_budget": gate_budget,
        }  # fmt: skip
        defaults = {name: value for name, value in given.items() if value is not None}
        counts = run(_query_lines(db_address(ctx), defaults))
        total = sum(counts.values())
        typer.echo(
            f"query: {total} lines, {counts['hit']} hits, {counts['miss']} misses, "
            f"{counts['error']} errors",
            err=True,
        )
        return
    if question is None:
        raise typer.BadParameter("give a question, or --jsonl to read them", param_hint="QUESTION")
    if owner is None:
        raise typer.BadParameter("required without --jsonl", param_hint="--owner")
    question = question_text(question)

    decision = with_store(
        ctx,
        lambda store: query_first(
            store,
            Turn(
                owner=owner, text=question, session=session, repository=repository,
                revision=revision, gate_budget=gate_budget,
            ),
        ),
        create=False,
    )  # fmt: skip
    if as_json:
        print_json(_decision_json(decision))
    else:
        _print_decision(decision)


# -- ask: a whole turn, the model called only on a miss ----------------------------------------


def answer_source(result: TurnResult, now: datetime) -> str:
    """One line saying where an answer came from: a claim, a kept answer, or the model."""
    receipt, decision, kept = result.receipt, result.decision, result.kept_from
    if kept is not None:
        # An exact repeat, or a reworded question the gate accepted (exact or paraphrase).
        how = "" if decision.reason == "exact_repeat" else f"{decision.reason}; "
        return (
            f"from a kept answer (receipt {kept.receipt_id}, {_ago(kept.kept_at, now)}; "
            f"{how}no model call)"
        )
    if decision.hit:
        how = (
            decision.reason
            if decision.score is None
            else (f"{decision.reason}, score {decision.score:.2f}")
        )
        return f"from claim {decision.claim_id} ({how}; no model call)"
    tokens = (
        None
        if receipt.prompt_tokens is None or receipt.completion_tokens is None
        else receipt.prompt_tokens + receipt.completion_tokens
    )
    cost = usd(receipt.cost_usd, unknown="cost unknown")
    used = "tokens unknown" if tokens is None else f"{tokens} tokens"
    return f"from the model {receipt.model or 'unknown'} ({used}, {cost})"


def _ago(moment: datetime, now: datetime) -> str:
    seconds = max((now - moment).total_seconds(), 0.0)
    for size, unit in ((86_400, "d"), (3_600, "h"), (60, "min")):
        if seconds >= size:
            return f"{int(seconds // size)} {unit} ago"
    return f"{int(seconds)} s ago"


def _result_json(result: TurnResult) -> dict[str, Any]:
    working_set = result.working_set
    kept = result.kept_from
    return {
        **_decision_json(result.decision),
        "source": result.source,
        "kept_from": None if kept is None else kept.model_dump(mode="json"),
        "answer": result.answer,
        "status": result.receipt.status,
        "error": result.receipt.error,
        "receipt_id": result.receipt.id,
        "receipt": result.receipt.model_dump(mode="json"),
        "working_set": None
        if working_set is None
        else working_set.model_dump(mode="json", exclude={"messages"}),
    }


def ask(
    ctx: typer.Context,
    question: Annotated[
        str,
        typer.Argument(
            metavar="QUESTION",
            callback=utf8,
            help="The question; - reads it from standard input.",
            show_default=False,
        ),
    ],
    owner: OwnerOption,
    session: SessionOption = None,
    system: Annotated[
        str | None,
        typer.Option(
            "--system",
            callback=utf8,
            help="The system instruction sent on a miss, in place of staffstore's own (a "
            "claim's answer is served as stored, whatever it asks).",
        ),
    ] = None,
    stream: Annotated[
        bool,
        typer.Option(
            "--stream", help="Print the model's answer as it arrives (a hit prints at once)."
        ),
    ] = False,
    agent: Annotated[
        str | None,
        typer.Option(
            "--agent", callback=utf8, help="The agent whose working state the prompt carries."
        ),
    ] = None,
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            callback=utf8,
            help=f"The model to ask on a miss (default: settings, else {DEFAULT_MODEL}).",
        ),
    ] = None,
    upstream: Annotated[
        str | None,
        typer.Option(
            "--upstream",
            callback=http_url,
            help=f"An OpenAI-compatible API base URL (default: settings, else {DEFAULT_BASE_URL}).",
        ),
    ] = None,
    base_url: Annotated[
        str | None, typer.Option("--base-url", callback=http_url, hidden=True)
    ] = None,
    budget: Annotated[
        int | None,
        typer.Option(
            "--budget",
            min=64,
            help=f"Token budget of the prompt sent on a miss (default: the --role's, else "
            f"{DEFAULT_BUDGET}).",
        ),
    ] = None,
    role: Annotated[
        str | None,
        typer.Option(
            "--role",
            help=f"Budget the prompt's parts as this role does ({', '.join(ROLES)}).",
        ),
    ] = None,
    part_budget: Annotated[
        list[str] | None,
        typer.Option(
            "--part-budget",
            metavar="PART=TOKENS",
            help="One part's token budget (system, claims, story, vault, tail, state, memory); "
            "repeatable.",
        ),
    ] = None,
    repository: RepositoryOption = None,
    revision: RevisionOption = None,
    gate_budget: GateBudgetOption = None,
    timeout: Annotated[
        float, typer.Option("--timeout", min=0.1, help="Seconds to wait for the model.")
    ] = DEFAULTS.timeout,
    max_retries: Annotated[
        int, typer.Option("--max-retries", min=0, help="Retries on 429, 5xx or no connection.")
    ] = 2,
    refresh: Annotated[
        bool,
        typer.Option(
            "--refresh",
            help="Ask the model even for a repeat or a question a claim answers, and keep the "
            "new answer (the proxy's no-cache).",
        ),
    ] = False,
    no_cache: Annotated[
        bool,
        typer.Option(
            "--no-cache",
            help="Neither serve from the store nor keep the answer: a plain model call "
            "(the proxy's no-cache and no-store; the receipt is written as always).",
        ),
    ] = False,
    ttl: Annotated[
        float | None,
        typer.Option(
            "--ttl",
            min=0,
            callback=_keep_seconds,
            help="Seconds the kept answer may serve repeats (default: until replaced; at most "
            "100 years).",
        ),
    ] = None,
    max_age: Annotated[
        float | None,
        typer.Option(
            "--max-age",
            min=0,
            callback=_keep_seconds,
            help="Serve a repeat only from an answer kept at most this many seconds ago.",
        ),
    ] = None,
    no_paraphrase: Annotated[
        bool,
        typer.Option(
            "--no-paraphrase",
            help="Serve a kept answer only to the exact same question, never to a reworded "
            'one (the proxy\'s "no-paraphrase"); the new answer is still kept.',
        ),
    ] = False,
    quiet: Annotated[
        bool,
        typer.Option(
            "--quiet", "-q", help="Do not say on standard error where the answer came from."
        ),
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Answer a question: from a kept answer to the same question, else from a stored claim,
    else from a kept answer to a reworded form of it, else by asking the model.

    The model is asked only on a miss, with the key in $OPENROUTER_API_KEY; its answer is kept,
    so the exact same question (same owner, model, session, agent, repository, revision and
    working state) is answered again without a call. A question asked with nothing but the
    system instruction in its prompt (no session history, no recalled claim, no working state)
    keeps its words too, and a reworded question asked the same way is served that answer when
    the gate accepts it (reason exact or paraphrase; --no-paraphrase turns that off). Standard
    output is the answer alone;
    standard error says where it came from. Every turn writes a receipt, failed ones included
    (see `staffstore receipts`). With --stream the answer is printed as the model writes it;
    the receipt is written all the same, and a stream cut short is a failed call.
    """
    if stream and as_json:
        raise typer.BadParameter("give --stream or --json, not both", param_hint="--stream")
    question = question_text(question)
    settings = settings_of(ctx)
    model = model or settings.model
    key_env = settings.upstream_key_env
    shown = _Shown()
    try:
        parts = parse_part_budgets(part_budget or [])
        budgets = budgets_for(role, budget if role else budget or DEFAULT_BUDGET, parts)
    except InputError as error:
        raise typer.BadParameter(str(error), param_hint="--role/--part-budget") from None
    prompt_budget = budgets if budgets is not None else budget or DEFAULT_BUDGET

    async def work() -> TurnResult:
        turn = Turn(
            owner=owner,
            text=question,
            session=session,
            agent=agent,
            repository=repository,
            revision=revision,
            gate_budget=gate_budget,
        )
        async with (
            StaffStore.open(db_address(ctx)) as store,
            OpenRouter(
                # "" rather than None: OpenRouter would read its own variable on None.
                api_key=os.environ.get(key_env) or "",
                base_url=upstream or base_url or settings.upstream,
                model=model,
                title="staffstore",
                timeout=timeout,
                max_retries=max_retries,
            ) as chat,
        ):
            call = _streaming(chat, shown) if stream else chat
            return await ensure_mouth(
                store, turn, call, model=model, budget=prompt_budget, cache=cache, system=system
            )

    cache = CachePolicy.from_flags(
        refresh=refresh, no_cache=no_cache, ttl=ttl, max_age=max_age, no_paraphrase=no_paraphrase
    )
    try:
        result = run(work())
    finally:
        if shown.chars:  # end the line the stream was printing, whatever stopped it
            typer.echo("")
    receipt = result.receipt
    if as_json:
        print_json(_result_json(result))
    elif result.answer is not None:
        if not shown.chars:
            typer.echo(result.answer)
        if not quiet:
            typer.echo(answer_source(result, datetime.now(UTC)), err=True)
    if result.answer is None:
        if receipt.status == "rejected":
            fail(f"{receipt.error} (receipt {receipt.id})")
        if receipt.status == "no_api_key":
            fail(
                f"no API key: set {key_env} to ask a model on a miss "
                f"(nothing was sent; receipt {receipt.id})"
            )
        fail(f"the model call failed ({receipt.status}): {receipt.error} (receipt {receipt.id})")


def _keep_seconds(value: float | None) -> float | None:
    # Checked here rather than by max=: the help would print the ten-digit bound.
    if value is not None and value > MAX_KEEP_SECONDS:
        raise typer.BadParameter("at most 100 years (3153600000 seconds)")
    return value


@dataclass
class _Shown:
    """How much of a streamed answer has been printed."""

    chars: int = 0


def _streaming(chat: OpenRouter, shown: _Shown) -> ChatFn:
    """A ChatFn that asks for the answer as a stream and prints its text as it arrives.

    Failures surface as the UpstreamErrors the stream raises, and an interrupt as the task's
    cancellation, so ensure_mouth writes the turn's receipt as for any call.
    """

    async def call(messages: list[Message]) -> ChatReply:
        body = {
            "messages": [message.model_dump() for message in messages],
            # OpenAI-style endpoints report a stream's usage only when asked.
            "stream_options": {"include_usage": True},
        }
        async with chat.stream(body) as events:
            async for _event in events:
                text = events.reply.text
                if len(text) > shown.chars:
                    typer.echo(text[shown.chars :], nl=False)
                    shown.chars = len(text)
            return events.reply

    return call


def register(app: typer.Typer) -> None:
    """Add `query` and `ask` to the command line."""
    app.command("query")(query)
    app.command("ask")(ask)
