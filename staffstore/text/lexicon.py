"""The words of a question: how text becomes tokens, and how each token folds.

Everything here is about single words, before any two questions are compared: the rewritten
text (rewrites.py) split into tokens, plurals and verb forms folded, synonyms mapped, and the
word classes the gate leans on (function words, negations, referents, prepositions, platforms,
dates). matching.normalize strings these together into a question's content words;
matching.compare compares two of them.

Both sides of every comparison go through the same folding, so a folded form only has to be
consistent, not a real word.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache
from itertools import combinations

from .rewrites import rewrite

# Words (any script), versions such as 3.11, and single symbols: "#" and "~" are what some
# questions are about, so they are tokens too. Scripts written without spaces (Chinese,
# Japanese) become one token per run, which is strict but never confuses two questions.
_TOKEN = re.compile(r"[^\W_]+(?:\.[^\W_]+)*[+#]*|[^\w\s'\".,;:!?()\[\]{}\-/]|[,;:()]")
# Punctuation that ends a phrase: kept as a token only so normalize can see the boundary.
PHRASE_MARKS = frozenset(",;:()")

# Function words, auxiliaries and the interchangeable question forms (what / which / how).
# why / when / where / who ask something different and stay content words.
STOPWORDS = frozenset(
    """
    a an the and or
    so such very really actually yet currently also basically certain
    will would
    is are am be been being was were do does did doing done has have had having
    what which how whats hows whatre
    some any either anything something
    we us our ours
    """.split()
)

# Content words too common to search on (see matching.Normalized.search_words).
COMMON_CONTENT = frozenset(
    """
    of to in on at by for from with as into onto about over under than then there here
    i we you he she they it this that
    can could should would will shall may might must
    why when where who
    """.split()
)

# Negations change the meaning of a question: they are always content.
NEGATIONS = frozenset({"not", "no", "never", "without", "nor", "none", "cannot", "neither"})

# Words that lean on earlier context. They count as content, so a turn that carries one
# matches only a stored question that carries it too.
REFERENTS = frozenset(
    {
        "it", "its", "this", "these", "those", "them", "one", "ones", "other", "others",
        "former", "latter", "same", "previous", "again", "else",
    }
)  # fmt: skip

# Pronouns collapse to one form per person: "me/my/mine" ask about the same person as "I".
_PRONOUNS = {
    "i": "i", "me": "i", "my": "i", "mine": "i", "myself": "i",
    "you": "you", "your": "you", "yours": "you", "yourself": "you", "u": "you", "ur": "you",
    "he": "he", "him": "he", "his": "he", "she": "she", "her": "she", "hers": "she",
    "they": "they", "their": "they", "theirs": "they",
}  # fmt: skip

NUMBER_WORDS = {
    "zero": "0", "one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6",
    "seven": "7", "eight": "8", "nine": "9", "ten": "10", "eleven": "11", "twelve": "12",
    "thirteen": "13", "fourteen": "14", "fifteen": "15", "sixteen": "16", "seventeen": "17",
    "eighteen": "18", "nineteen": "19", "twenty": "20", "thirty": "30", "forty": "40",
    "fifty": "50", "sixty": "60", "seventy": "70", "eighty": "80", "ninety": "90",
    "hundred": "100", "thousand": "1000",
}  # fmt: skip
# "one" is left out of number folding below: it is far more often a referent ("the other one").

_IRREGULAR = {
    "found": "find", "made": "make", "went": "go", "gone": "go", "ran": "run", "wrote": "write",
    "written": "write", "broke": "break", "broken": "break", "began": "begin", "begun": "begin",
    "took": "take", "taken": "take", "gave": "give", "given": "give", "chose": "choose",
    "chosen": "choose", "knew": "know", "known": "know", "saw": "see", "seen": "see",
    "thought": "think", "bought": "buy", "brought": "bring", "caught": "catch", "taught": "teach",
    "said": "say", "paid": "pay", "built": "build", "sent": "send", "spent": "spend",
    "lost": "lose", "left": "leave", "felt": "feel", "kept": "keep", "meant": "mean",
    "met": "meet", "led": "lead", "held": "hold", "told": "tell", "sold": "sell", "fell": "fall",
    "fallen": "fall", "grew": "grow", "grown": "grow", "drew": "draw", "drawn": "draw",
    "does": "do", "did": "do", "done": "do", "doing": "do",
    "threw": "throw", "thrown": "throw", "using": "use", "used": "use", "rebuilt": "rebuild",
    "rewrote": "rewrite", "rewritten": "rewrite", "shown": "show", "hid": "hide", "hidden": "hide",
}  # fmt: skip
_IRREGULAR_VERBS = frozenset(_IRREGULAR)
_IRREGULAR.update({
    "children": "child", "people": "person", "men": "man", "women": "woman", "mice": "mouse",
    "feet": "foot", "teeth": "tooth", "data": "data", "news": "news", "series": "series",
    "species": "species",
})  # fmt: skip

# A small, general synonym table: each word maps to a canonical one. Kept to near-perfect
# synonyms; a loose "synonym" is a false hit waiting to happen.
_SYNONYMS = {
    "discover": "find", "uncover": "find", "determine": "find", "figure": "find",
    "conclude": "find", "conclusion": "find", "finding": "find",
    "repair": "fix", "mend": "fix",
    "defect": "bug",
    # A degree stays a degree: "the biggest country" is one country, "a big country" any.
    "quick": "fast", "quickly": "fast", "rapid": "fast", "rapidly": "fast", "speedy": "fast",
    "quicker": "faster", "quickest": "fastest",
    "big": "large", "huge": "large", "bigger": "larger", "biggest": "largest",
    "small": "little", "tiny": "little", "smaller": "littler", "smallest": "littlest",
    "purchase": "buy",
    "begin": "start", "commence": "start",
    "finish": "end", "complete": "end",
    "fully": "full", "completely": "complete",  # "fully restore" / "a full restore"
    "automobile": "car",
    "film": "movie",
    "approach": "method", "technique": "method",
    # Engineering shorthand, each with one reading.
    "prod": "production", "db": "database", "k8s": "kubernetes", "js": "javascript",
    "ts": "typescript", "py": "python", "cert": "certificate", "app": "application",
    "repo": "repository", "config": "configuration", "env": "environment", "min": "minute",
    "sec": "second", "s": "second", "ms": "millisecond", "hr": "hour", "info": "information",
    # Units of time as engineers shorten them ("24h", "2 hrs", "last wk", "this yr", "last mo").
    "h": "hour", "hrs": "hour", "wk": "week", "wks": "week", "yr": "year", "yrs": "year",
    "mo": "month", "mos": "month",
    "median": "p50",
    "docs": "documentation", "doc": "documentation", "dir": "directory", "folder": "directory",
    "char": "character", "versus": "vs", "occasionally": "sometimes", "impact": "affect",
    "retain": "keep", "bypass": "skip", "every": "all", "each": "all", "regarding": "about",
    "below": "under", "compat": "compatibility", "dep": "dependency", "deps": "dependency",
    "var": "variable", "vars": "variable", "endtoend": "e2e",
    "concerning": "about", "inside": "in", "within": "in", "above": "over", "via": "through",
    "somebody": "anyone", "someone": "anyone", "anybody": "anyone", "spike": "jump",
    "seq": "sequential", "fall": "drop", "prs": "pr",
    "first": "1th", "second": "2th", "third": "3th", "fourth": "4th", "fifth": "5th",
    "sixth": "6th", "seventh": "7th", "eighth": "8th", "ninth": "9th", "tenth": "10th",
    "eleventh": "11th", "twelfth": "12th",
    "simplest": "easiest", "simpler": "easier",  # not "simple":
    # "a simple sentence" and "simple interest" are terms
    "correct": "right", "proper": "right",
    "mistake": "error",
    "problem": "issue",
    "examine": "inspect", "investigate": "inspect", "inspection": "inspect",
    "result": "outcome",
    "replay": "replay", "rerun": "replay",
    "deterministic": "deterministic",
    "suggestion": "advice", "recommendation": "advice",  # not "tip", which is also money
    "earn": "make",
    "improve": "improve", "enhance": "improve",
    "america": "usa", "asian": "asia", "european": "europe", "african": "africa",
    "uk": "britain",  # not "england": England is one part of the UK
}  # fmt: skip

_PLATFORMS = frozenset(
    "windows linux macos mac osx ios android ubuntu debian fedora centos arm64 x86 x64 "
    "amd64 aarch64 chrome firefox safari edge docker kubernetes aws gcp azure".split()
)
_DATES = frozenset(
    "monday tuesday wednesday thursday friday saturday sunday today yesterday tomorrow "
    "january february march april may june july august september october november december "
    "jan feb mar apr jun jul aug sep sept oct nov dec week month year".split()
)


def stem(word: str) -> str:
    """Fold plurals, and irregular forms through a table (-ing and -ed are _lemma's job)."""
    if word in _IRREGULAR:
        return _IRREGULAR[word]
    if len(word) <= 3 or not word.isalpha():
        return word
    for suffix, keep in (
        ("ies", "y"),
        ("sses", "ss"),
        ("xes", "x"),
        ("ches", "ch"),
        ("shes", "sh"),
    ):
        if word.endswith(suffix) and len(word) > len(suffix) + 1:
            return word[: -len(suffix)] + keep
    if word.endswith("s") and not word.endswith(("ss", "us", "is", "ous")):
        return word[:-1]
    return word


# Before "one", these make it a pronoun ("the other one"); elsewhere it is the number 1.
ONE_AS_PRONOUN = frozenset(
    "the that this which other another each every any no first second third last next "
    "new old same right wrong".split()
)
SECOND_UNIT = frozenset({"seconds", "sec", "secs", "s"})
COUNTS = frozenset({"a", "an", "per", "few", "several", "couple", *"0123456789", *NUMBER_WORDS})
# "ever" after these is part of what is asked: "more than ever", "the first ever".
EVER_KEEPS = frozenset({"than", "first", "only", "last", "most", "best", "worst", "for"})
_MODALS = frozenset("can could should would will shall may might must".split())
# A form of "do" after these is the main verb.
_BEFORE_MAIN_DO = _MODALS | frozenset(
    "to have has had having be been i you we they he she it".split()
)
_AUXILIARIES = frozenset(
    "will would is are am be been being was were do does did has have had".split()
)
# Stopwords that sit inside a phrase ("the", "some", "very"); every other stopword ends one.
WITHIN_PHRASE = frozenset(
    "a an the so such very really actually yet currently also basically certain some any "
    "either anything something our ours".split()
)
#: Auxiliaries that set a question in the past, and in the future.
PAST_AUXILIARIES = frozenset({"did", "was", "were", "had"})
FUTURE_AUXILIARIES = frozenset({"will", "shall"})
#: Modals that ask what can or must be done, not what was: "Who can approve the release?" asks
#: who is allowed to, "Who approved the release?" what happened. "Could" and "would" are left
#: out, each also a past ("Why couldn't the pods start?"), and "may", which is more often the
#: month ("spike may 13", "May -> prod spend?").
DUTY_MODALS = frozenset({"can", "might", "must", "should"})
# After a modal, these make it something else: a perfect ("what might have caused it") is a
# guess at the past, and "can you ..." puts a request, not the question.
_NOT_A_DUTY = frozenset({"have", "you", "u", "someone", "anyone"})
# A question asks with its modal near its start ("who can", "which team should").
_MODAL_WITHIN = 5
#: "Should" asked of the asker ("how should I restart it?", "what should we set it to?") asks
#: how to act, as "can" does, and so does "what should be the best way": people ask "what is
#: the best X" so. Asked of anyone or anything else it asks for advice, what ought to be, which
#: is not what is or was: "Which Kafka version should the cluster run?" is not "Which Kafka
#: version does the cluster run?", nor "What size should the pool be?" "What size is the pool?".
ADVICE_MODAL = "should"
_NOT_ADVICE = frozenset({"i", "we", "one", "be"})
#: The words a question asks with: its auxiliaries and modals ("may" aside, the month).
ASKING_WORDS = (_MODALS - {"may"}) | _AUXILIARIES


def tense_words(words: Sequence[str]) -> frozenset[str]:
    """What sets a question (its words in order) in time: the auxiliaries that set it in only
    the past ("did", "was") or only the future ("will"); else, when the first auxiliary it
    asks with, near its start, is a modal of DUTY_MODALS ("who can approve"), that modal
    ("should" with what follows it where it asks how to act, "should we": ADVICE_MODAL); else
    none (where it says both past and future, or neither)."""
    seen = frozenset(words)
    past, future = seen & PAST_AUXILIARIES, seen & FUTURE_AUXILIARIES
    if past and future:
        return frozenset()
    if past or future:
        return past or future
    for index, word in enumerate(words[:_MODAL_WITHIN]):
        if word in DUTY_MODALS:
            after = [*words[index + 1 : index + 3], "", ""]
            request = after[0] == "i" and after[1] == "ask"  # "can I ask who ..."
            if request or after[0] in _NOT_A_DUTY:
                return frozenset()
            if word == ADVICE_MODAL:
                if after[1] == "have":  # "should also have": a perfect, as "should have" is
                    return frozenset()
                if after[0] in _NOT_ADVICE:
                    return frozenset({f"{word} {after[0]}"})  # "should we": how to act, a duty
            return frozenset({word})
        if word in ASKING_WORDS:
            return frozenset()
    return frozenset()


def _tense_kind(words: frozenset[str]) -> str | None:
    if not words:
        return None
    if FUTURE_AUXILIARIES.issuperset(words):
        return "future"
    if words == {ADVICE_MODAL}:
        return "advice"
    duties = {word.split()[0] for word in words}  # "should we" is a duty
    return "duty" if DUTY_MODALS.issuperset(duties) else "past"


def opposite_tenses(one: frozenset[str], other: frozenset[str]) -> bool:
    """Whether two questions' tense_words set one in the past and the other in the future, or
    asked with a modal of duty. "Did Trump win?" (what happened) is not "Will Trump win?" (a
    forecast), nor "Who approved it?" "Who can approve it?" (who may); present and past,
    present and future, or present and a modal stay one question ("Why was the build
    rejected?" / "Why is it rejected?", "When does/will the certificate expire?", "How can
    I / do I restart it?"). A word of the tense that is no auxiliary (slots.when: a verb in
    the past, "who approved") counts as the past. Advice ("which version should the cluster
    run?") differs from the present and the past: what ought to be is not what is or was; it
    agrees with a forecast ("will": a plan) and with another modal of duty ("must")."""
    kinds = {_tense_kind(one), _tense_kind(other)}
    return kinds in ({"past", "future"}, {"past", "duty"}, {"advice", None}, {"advice", "past"})


DETERMINERS = frozenset("a an the my your his her its their this these those".split())
# A sentence-final "do" is the main verb: "what does melanin do?" is not "what is melanin?".
_DO = frozenset({"do", "does", "did", "done"})
# "get" before a participle is a passive auxiliary: "got opened" asks what "were opened" asks.
GET_FORMS = frozenset({"get", "gets", "got", "gotten", "getting"})


# Words that stay different when an "e" is added: "plan" / "plane", "car" / "care", "hop" /
# "hope". Without the "e" the folded form of one would be the other word.
_E_MAKES_ANOTHER_WORD = frozenset(
    """
    bar bath breath bit cap car cloth cod con cop cub cur cut dim din dot dud fad far fat fin
    gap glob grip hat hop hug kit mad man mar mat mop pal pan pin plan quit rat rid rip rob rod
    scar shin sit slid slim snip spin spit star strip tap tin ton trip tub twin van wag win
    """.split()
)


def _lemma(word: str, *, verb: bool = True) -> str:
    """Fold -ing, -ed and a final -e, so "share", "shared" and "sharing" are one word.

    Both sides of a comparison go through it, so the folded form only has to be consistent,
    not a real word; but it must not be another word ("plane" is not "plan": a doubled
    consonant says which one "planning" is). Short bases are left alone ("need", "bring").
    """
    if not word.isalpha() or len(word) < 4:
        return word
    base = word
    for suffix in ("ing", "ed") if verb else ():
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            base = word[: -len(suffix)]
            if base[-1] == base[-2] and base[-1] not in "lsz" and len(base) >= 4:
                return base[:-1]  # stopped -> stop, planning -> plan
            if base in _E_MAKES_ANOTHER_WORD:
                return base + "e"  # hoping -> hope, caring -> care
            break
    if base.endswith("e") and len(base) >= 4 and base[:-1] not in _E_MAKES_ANOTHER_WORD:
        base = base[:-1]
    return base


@lru_cache(maxsize=65_536)  # words repeat across questions far more than questions do
def canonical(token: str, *, fold_verb: bool = True) -> str:
    """One token's folded form: a pronoun's person, a number's digits, a synonym's stem."""
    if token in _PRONOUNS:
        return _PRONOUNS[token]
    if token in NUMBER_WORDS and token != "one":
        return NUMBER_WORDS[token]
    if token.isdecimal():  # not isdigit: "⓵" is a digit int() cannot read
        return str(int(token))  # 0042 -> 42
    word = stem(_SYNONYMS.get(token, token))
    word = _SYNONYMS.get(word, word)
    word = _lemma(word, verb=fold_verb)
    word = _FOLDED_SYNONYMS.get(word, word)
    if word in _WORDS_WITH_A_ROLE and token not in _SYNONYMS and word != token:
        # Folding must not make a word into one the gate reads apart: "note" is not the
        # negation "not", "theme" not the referent "them", "willing" not "will".
        return stem(token)
    return word


# Negations, referents, pronouns, prepositions and function words: each has a part in how the
# gate reads a question, so no other word may fold into one of them.
_WORDS_WITH_A_ROLE = (
    NEGATIONS | REFERENTS | STOPWORDS | COMMON_CONTENT | frozenset(_PRONOUNS.values())
)


# The synonym table again, keyed and valued by folded forms, so every inflection of a listed
# word finds its synonym: "retained" folds to "retain", which maps to "keep".
_FOLDED_SYNONYMS = {
    _lemma(stem(key)): _lemma(stem(value))
    for key, value in _SYNONYMS.items()
    if _lemma(stem(key)) != _lemma(stem(value))
}


def tokens_and_marks(text: str) -> tuple[list[str], frozenset[int]]:
    """The tokens, and the indexes of those that are part of a path such as "acme/api"."""
    text = rewrite(text)
    if "/" not in text:
        return _TOKEN.findall(text), frozenset()
    found = list(_TOKEN.finditer(text))
    in_path = frozenset(
        index
        for index, match in enumerate(found)
        if "/" in (text[match.start() - 1 : match.start()], text[match.end() : match.end() + 1])
    )
    return [match.group() for match in found], in_path


# "Apple's App Review", "Pixar's Finding Nemo": a maker's possessive before the capitalised name
# (two words or more) of something it makes. The name already says which thing is meant, so
# "App Review" asks about the same one. Not before a name that a common noun follows ("Ghana's
# World Cup team"), nor before an office or body that every country has ("India's Prime
# Minister", "Japan's Supreme Court"): there the possessor says whose.
_MAKER = re.compile(
    r"(?<![\w'])([A-Z][\w&.+-]*)['\u2019]s\s+(?:[A-Z][\w.+-]*\s+)+"
    r"(?!(?:Minister|President|Secretary|Governor|Court|Government|Parliament|Congress|Senate"
    r"|Army|Navy|Police|Bank|Party|Team|Council|Ministry|Embassy)\b)[A-Z][\w.+-]*\b(?!\s+[a-z])"
)


_NOT_MAKERS = STOPWORDS | COMMON_CONTENT | {"let", "everyone", "anyone", "nobody"}


def makers(text: str) -> frozenset[str]:
    """The lower-cased possessors in `text` that name the maker of a named thing."""
    if "'" not in text and "\u2019" not in text:
        return frozenset()
    found = (match.group(1).lower() for match in _MAKER.finditer(text))
    # "What's Bhagavad Gita", "Who's Hosni Mubarak", "Let's Encrypt": not possessives.
    return frozenset(word for word in found if word not in _NOT_MAKERS)


def tokens(text: str) -> list[str]:
    """Lower-cased word tokens with contractions expanded and wrappers removed."""
    return [token for token in tokens_and_marks(text)[0] if token not in PHRASE_MARKS]


# Words that ask the same only beside another: a cache is there to be reused, so "never use the
# layer cache" asks what "never reuse the layer cache" asks, while "use a condom" and "reuse a
# condom" differ; an endpoint is hit, called or used alike.
_SAME_BESIDE_WORDS = (
    (("use", "reuse"), "cache"),
    (("call", "hit", "use"), "endpoint"),
)
#: Each pair of those words, folded, and the folded word they must stand beside.
SAME_BESIDE = {
    frozenset({canonical(a), canonical(b)}): canonical(beside)
    for words, beside in _SAME_BESIDE_WORDS
    for a, b in combinations(words, 2)
}


def is_name(token: str) -> bool:
    """Written as an identifier: a host name, a dotted name or version, a word with digits."""
    return "." in token or (not token.isalpha() and any(ch.isdigit() for ch in token))


def is_function_word(token: str, index: int, raw: Sequence[str]) -> bool:
    """True when raw[index] only shapes the question (an article, an auxiliary), in context."""
    if token not in STOPWORDS:
        return False
    if token in _DO and index == len(raw) - 1:
        return False  # a sentence-final "do" is the main verb
    previous = raw[index - 1] if index else ""
    if token in _DO and previous in _BEFORE_MAIN_DO:
        return False  # "what should I do", "how to do it": the main verb, not an auxiliary
    if token == "have" and _MODALS.intersection(raw[max(0, index - 2) : index]):
        return False  # "what should I have done" asks about the past, "what should I do" not
    # After "between" an auxiliary is a word being asked about: "the difference between
    # 'would have been' and 'will have been'" is not "between 'had been' and 'has been'".
    return not (token in _AUXILIARIES and "between" in raw[:index])


def is_participle(token: str) -> bool:
    """Written as a past participle: "kept", "rejected", "died" (not "need" or "speed")."""
    if token in _IRREGULAR_VERBS:
        return True
    return token.endswith("ed") and len(token) >= 4 and not token.endswith("eed")


def is_specific(word: str) -> bool:
    """Words that pin a requirement: numbers, versions, negations, platforms, dates."""
    return (
        any(ch.isdigit() for ch in word)
        or word in NEGATIONS
        or word in _PLATFORMS
        or word in _DATES
    )


PREPOSITIONS = frozenset(
    "of to in on at by for from with as into onto about over under after before during "
    "through between against across without per".split()
)
