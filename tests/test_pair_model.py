"""The shipped pair model: the file its card names, the decisions it was shipped with, and its
place behind the slots. Nothing here trains a model (CI never does); the model is the real one,
run by onnxruntime."""

from __future__ import annotations

import json
import shutil
import tracemalloc
from importlib import resources
from pathlib import Path

import pytest

from staffstore.gate.pair_model import PairModel, PairModelError, default_pair_model
from staffstore.gate.scoring import (
    DEFAULT_BUDGET,
    GateModel,
    GateParamsError,
    default_model,
    warm_up,
)

SHIPPED = Path(str(resources.files("staffstore.gate") / "data" / "pair_model"))


def test_the_shipped_model_is_the_file_its_card_and_the_gate_name() -> None:
    card = json.loads((SHIPPED / "pair_model.json").read_text())
    model = default_pair_model()
    assert model.sha256 == card["onnx_sha256"]
    # The gate's thresholds were calibrated with this very file.
    assert default_model().params["pair"]["sha256"] == model.sha256
    assert card["base"]["licence"] == "Apache-2.0"


def test_the_shipped_model_gives_the_decisions_it_was_shipped_with() -> None:
    sample = json.loads((SHIPPED / "decisions_sample.json").read_text())
    assert len(sample) >= 20
    model = default_pair_model()
    for pair in sample:
        (found,) = model.probabilities(pair["asked"], [pair["stored"]])
        assert found == pytest.approx(pair["probability"], abs=1e-3), pair


def test_a_batch_scores_each_pair_as_it_scores_alone() -> None:
    model = default_pair_model()
    asked = "why did the nightly backup fail on sunday?"
    stored = [
        "Why did the nightly backup fail on Sunday?",
        "Which team owns the billing-api repository, and who approved its last release?",
        "How long does the nightly backup take?",
    ]
    together = model.probabilities(asked, stored)
    alone = [model.probabilities(asked, [text])[0] for text in stored]
    assert together == pytest.approx(alone, abs=1e-4)
    assert model.probabilities(asked, []) == []


def test_a_model_file_that_is_not_the_one_its_card_names_is_refused(tmp_path: Path) -> None:
    copy = tmp_path / "pair_model"
    shutil.copytree(SHIPPED, copy)
    data = bytearray((copy / "pair_model.onnx").read_bytes())
    data[len(data) // 2] ^= 0xFF
    (copy / "pair_model.onnx").write_bytes(bytes(data))
    with pytest.raises(PairModelError, match="not the file its card names"):
        PairModel(copy)


def test_a_loaded_model_keeps_no_copy_of_its_file_in_pythons_heap() -> None:
    # onnxruntime's session keeps any bytes it is given for its whole life: a model loaded
    # from its bytes held 22 MiB of every server's memory for nothing.
    size = (SHIPPED / "pair_model.onnx").stat().st_size
    tracemalloc.start()
    try:
        model = PairModel(SHIPPED)
        held, _peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert model.probabilities("why did the backup fail?", ["why did the backup break?"])
    assert held < size / 4, f"{held:,} bytes still held for a {size:,}-byte model"


def test_a_slot_difference_vetoes_whatever_the_pair_model_would_say() -> None:
    found = default_model().assess(
        "Why did the orders_daily load fail on March 4, 2025?",
        "Why did the orders_daily load fail on March 5, 2025?",
    )
    assert found.reason == "number_or_date"
    assert found.probability is None and found.pair_probability is None


def test_the_pair_model_reads_a_pair_the_alignment_refused_as_a_reordering() -> None:
    # A possessive in place of an of-phrase, read as it stands: a reordering, no trade.
    found = default_model().assess(
        "Which IAM users' access keys are older than 90 days?",
        "Which access keys of IAM users are older than 90 days?",
    )
    assert found.reason is None
    assert found.pair_probability is not None and found.tree_probability is not None
    # the score is the mean of the two (tools/fit_gate.py, PAIR_COMBINE)
    assert found.probability == pytest.approx((found.pair_probability + found.tree_probability) / 2)


def overruling(*refusals: str) -> GateModel:
    """The shipped gate with the pair model allowed to overrule only these refusals."""
    params = default_model().params
    return GateModel({**params, "pair": {**params["pair"], "overrules": list(refusals)}})


#: A word swapped for an unrelated one, a name or a made-up word against a common word. The
#: alignment refuses it; the pair model, given each question without its frame, may overrule
#: that, and scores these far under the default budget's threshold.
SUBSTITUTIONS = [
    ("What caused the Airflow webserver outage on June 12?",
     "What caused the Airflow database outage on June 12?"),
    ("Could you tell me where is the oxtri miru defined in the gateway?",
     "Where is the oxtri miru defined in linpol?"),
]  # fmt: skip


@pytest.mark.parametrize(("asked", "stored"), SUBSTITUTIONS)
def test_a_word_swapped_for_an_unrelated_one_is_not_served(asked: str, stored: str) -> None:
    model = default_model()
    found = model.assess(asked, stored)
    assert found.reason is None and found.pair_probability is not None
    assert (found.probability or 0.0) < model.threshold_for(DEFAULT_BUDGET, stored)
    # the alignment's refusal, which the parameters let the pair model overrule
    without = overruling("reordering", "common_swap")
    assert without.assess(asked, stored).reason == "substitution"


#: Uncommon words swapped on both sides: two names. The pair model is not asked (read whole, it
#: scored the two request-wrapped ones 0.979 and 0.980, and the store benchmark's turns like
#: them were served 34 times in 200; given them bare, it still served one such pair at 0.961).
NAME_SWAPS = [
    ("What caused the Airflow webserver outage on June 12?",
     "What caused the Airflow scheduler outage on June 12?"),
    ("About the webserver: what caused the outage on June 12?",
     "What caused the scheduler outage on June 12?"),
    ("Could you tell me where is the oxtri miru defined in talinqua?",
     "Where is the oxtri miru defined in linpol?"),
    ("Could you tell me which oxpol version does zedsenbex pin for denquata?",
     "Which oxpol version does zedsenbex pin for polox?"),
    ("Which vota version does bexne pin for fenlin?",
     "Which shita version does fenlin pin for denlotri?"),
]  # fmt: skip


@pytest.mark.parametrize(("asked", "stored"), NAME_SWAPS)
def test_a_name_swapped_for_another_is_refused_without_the_pair_model(
    asked: str, stored: str
) -> None:
    found = default_model().assess(asked, stored)
    assert (found.reason, found.pair_probability, found.probability) == ("name", None, None)


def test_a_swap_between_questions_that_share_only_a_number_stays_refused() -> None:
    # The pair model scores this pair 0.977, over the default budget's threshold: the number is
    # all it has to go on (benchmarks/bench_proxy.py asks it of a store of bench settings).
    asked, stored = "a question to repeat, number 43", "What is the bench setting number 43?"
    found = default_model().assess(asked, stored)
    assert found.reason == "substitution"
    assert found.pair_probability is None
    assert not found.shared_subject


#: A word swapped for another where every swapped word is a common English word: the pair
#: model reads it (tools/fit_gate.py, PAIR_OVERRULES).
COMMON_SWAPS = [
    ("Which AWS provider version is locked in northwind/tf-modules?",
     "Which AWS provider version is pinned in northwind/tf-modules?"),
    ("When will the v1 Orders endpoints be retired?",
     "When will the v1 Orders endpoints be shut down?"),
]  # fmt: skip


@pytest.mark.parametrize(("asked", "stored"), COMMON_SWAPS)
def test_a_swap_of_common_words_reaches_the_pair_model(asked: str, stored: str) -> None:
    found = default_model().assess(asked, stored)
    assert found.reason is None
    assert found.pair_probability is not None
    # The alignment refuses it: only the pair model's reading lets it through.
    assert overruling("reordering").assess(asked, stored).reason == "substitution"


def test_two_words_that_traded_places_stay_refused_whatever_the_pair_model_says() -> None:
    for asked, stored in [
        ("Which flights go from Boston to Denver?", "Which flights go from Denver to Boston?"),
        ("The webserver: why did it block the scheduler?",
         "Why did the scheduler block the webserver?"),
    ]:  # fmt: skip
        found = default_model().assess(asked, stored)
        assert found.reason == "word_order"
        assert found.pair_probability is None


def test_warm_up_runs_the_pair_model_before_any_turn_needs_it() -> None:
    model = default_pair_model()
    before = model.calls
    warm_up()
    assert model.calls > before


#: One near miss (another host) in the frames people put around a question, and what the pair
#: model is given of it. As written, the shipped model scored the bare pair 0.081 and these
#: 0.971-0.986: it had learned a frame as a sign of a paraphrase (tools/fit_gate.py,
#: PAIR_READS). An embedded question keeps its order ("why the backup fails"). Two made-up
#: host names are now a `name` veto before any score; the model's reading is checked alone.
FRAMED_NEAR_MISSES = [
    ("Could you tell me why the nightly backup fails on dbhost?",
     "Why the nightly backup fails on dbhost?"),
    ("for the postmortem: why does the nightly backup fail on dbhost?",
     "Why does the nightly backup fail on dbhost?"),
    ("walk me through why the nightly backup fails on dbhost",
     "Why the nightly backup fails on dbhost"),
    ("Explain why the nightly backup fails on dbhost.",
     "Why the nightly backup fails on dbhost."),
    ("hey, why does the nightly backup fail on dbhost?",
     "Why does the nightly backup fail on dbhost?"),
]  # fmt: skip


@pytest.mark.parametrize(("asked", "given"), FRAMED_NEAR_MISSES)
def test_a_frame_around_a_near_miss_does_not_get_it_served(asked: str, given: str) -> None:
    stored = "Why does the nightly backup fail on webhost?"
    model = default_model()
    threshold = model.threshold_for(DEFAULT_BUDGET, stored)
    found = model.assess(asked, stored)
    # Refused as two names, or (where the lead-in's common word is among the swapped ones)
    # scored under the threshold.
    assert found.reason == "name" or (found.probability or 0.0) < threshold
    # The model is given the question alone, and the frame is not there to lift it.
    assert model.pair is not None and model.pair.text(asked) == given
    assert default_pair_model().probabilities(given, [stored])[0] < threshold


def test_the_pair_model_reads_what_the_parameters_say() -> None:
    # A made-up host against a common word: a substitution the pair model may overrule.
    asked = "Could you tell me why the nightly backup fails on dbhost?"
    stored = "Why does the nightly backup fail on the primary?"
    params = default_model().params
    assert params["pair"]["reads"] == "bare"
    as_written = GateModel({**params, "pair": {**params["pair"], "reads": "as_written"}})
    bare = default_model().assess(asked, stored).pair_probability
    written = as_written.assess(asked, stored).pair_probability
    assert bare is not None and written is not None
    assert written > 0.5 > 0.1 > bare  # the frame's lift (0.80 against 0.02 when measured)
    with pytest.raises(GateParamsError, match="unknown pair reading"):
        GateModel({**params, "pair": {**params["pair"], "reads": "lower"}})


@pytest.mark.parametrize(
    "asked",
    [
        "For the postmortem: what caused the scheduler outage on June 12?",
        "hey, what caused the scheduler outage on June 12? thanks",
        "Could you tell me what caused the scheduler outage on June 12?",
    ],
)
def test_a_stored_question_in_a_frame_is_served_without_asking_the_model(asked: str) -> None:
    # Without its frame it is the stored question word for word; the model, which never saw
    # two identical questions, scores that pair 0.878, under the default budget's threshold.
    stored = "What caused the scheduler outage on June 12?"
    model = default_model()
    calls = default_pair_model().calls
    found = model.assess(asked, stored)
    assert found.reason is None
    assert found.probability == 1.0
    assert default_pair_model().calls == calls
    assert default_pair_model().probabilities(stored, [stored])[0] < model.threshold(0.001)


def test_lookups_on_several_threads_read_the_pair_scores_they_found() -> None:
    # The proxy runs lookups on two threads, and the pair model lets go of Python's lock while
    # it scores. A turn's pair found already scored was dropped by another thread emptying the
    # full cache meanwhile, and reading it back raised KeyError. A cache of two pairs fills
    # on every call here: each turn asks one pair, then that pair and a new one.
    import threading

    model = GateModel(default_model().params, pair_scores_kept=2)
    subjects = "billing payments search checkout inventory shipping refunds invoices".split()
    errors: list[BaseException] = []
    found: dict[tuple[str, str], float] = {}

    def ask(thread: int) -> None:
        try:
            for subject in subjects:
                asked = f"why did the nightly backup of {subject} {thread} fail?"
                first = f"why did the nightly backup of {subject} {thread} break?"
                second = f"what made the nightly {subject} {thread} backup fail?"
                model.assess_many(asked, [first])
                again, new = model.assess_many(asked, [first, second])
                found[(asked, first)] = again.probability
                found[(asked, second)] = new.probability
        except BaseException as error:  # any failure on a thread is the finding
            errors.append(error)

    threads = [threading.Thread(target=ask, args=(n,)) for n in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(found) == 2 * len(subjects) * len(threads)
    # each score is the one a turn gets on its own
    alone = GateModel(default_model().params)
    for (asked, stored), probability in list(found.items())[:6]:
        assert alone.assess(asked, stored).probability == pytest.approx(probability)
