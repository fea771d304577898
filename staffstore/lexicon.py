"""The words of a question: how text becomes tokens, and how each token folds.

Everything here is about single words and short spans of text, before any two questions are
compared: politeness and contractions removed, spelling variants rewritten, tokens split,
plurals and verb forms folded, synonyms mapped, and the word classes the gate leans on (function
words, negations, referents, prepositions, platforms, dates). matching.normalize strings these
together into a question's content words; matching.compare compares two of them.

Both sides of every comparison go through the same folding, so a folded form only has to be
consistent, not a real word.
"""

from __future__ import annotations

import gzip
import re
import unicodedata
from collections.abc import Sequence
from functools import cache, lru_cache
from importlib import resources
from itertools import combinations

# Politeness and question wrappers, removed before tokenising; they never change what is asked.
_WRAPPERS = re.compile(
    r"\b(?:(?:can|could|would|will)\s+(?:you|u)\s+(?:please\s+)?"
    r"(?:tell|show|remind|explain\s+to)\s+me|"
    r"(?:do|does)\s+(?:you|we|anyone|anybody|someone)\s+know|"
    r"i\s+(?:want|wanted|would\s+like|d\s+like|need)\s+to\s+know|"
    r"i\s+(?:wonder|was\s+wondering|am\s+wondering)|"
    r"(?:please\s+)?remind\s+me|tell\s+me|"
    r"any\s+idea|quick\s+question|just\s+curious|"
    r"hey|hi|hello|please|pls|plz|thanks|thank\s+you|thx|kindly)\b"
)

# Each rewrite is (pattern, replacement, needs): it can only match text holding one of `needs`,
# and testing for those is much faster than running the pattern (normalize is on every lookup).
_DIGITS = tuple("0123456789")
_UNITS = tuple("second minute hour day week month year cent dollar euro byte kb mb gb".split())

_CONTRACTIONS: tuple[tuple[re.Pattern[str], str, tuple[str, ...]], ...] = (
    (re.compile(r"\bcan'?t\b"), "can not", ("can",)),
    (re.compile(r"\bwon'?t\b"), "will not", ("won",)),
    (re.compile(r"\bain'?t\b"), "is not", ("ain",)),
    # Only the real auxiliaries: a bare "nt" ending is also "agent", "client", "payment".
    (
        re.compile(
            r"\b(do|does|did|is|are|was|were|have|has|had|would|should|could|must|need)n'?t\b"
        ),
        r"\1 not",
        ("nt", "n't"),
    ),
    (re.compile(r"\bn't\b"), "not", ("n't",)),  # pre-tokenised text: "does n't"
    (re.compile(r"'re\b"), " are", ("'",)),
    (re.compile(r"'ll\b"), " will", ("'",)),
    (re.compile(r"'ve\b"), " have", ("'",)),
    (re.compile(r"'m\b"), " am", ("'",)),
    (re.compile(r"'d\b"), " would", ("'",)),
    (re.compile(r"'s\b"), "", ("'",)),
)

_COUNTRY_US = re.compile(r"\bU\.?S\.?(?:A\.?)?(?=\W|$)")

# Spelling variants folded before tokenising. Each is a rewrite that never changes meaning.
_REWRITES: tuple[tuple[re.Pattern[str], str, tuple[str, ...]], ...] = (
    (re.compile(r"(?<=\d),(?=\d{3}\b)"), "", (",",)),  # 4,000 -> 4000
    # A day of the month is a date, not an ordinal: "April 9th" -> "April 9".
    (
        re.compile(
            r"\b(jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)([a-z]*)\s+(\d{1,2})"
            r"(?:st|nd|rd|th)\b"
        ),
        r"\1\2 \3",
        _DIGITS,
    ),
    # "9 April" and "the 9th of April" are "April 9" ("may" is left alone: "5 may" is a verb).
    (
        re.compile(
            r"\b(\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?"
            r"(jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec)([a-z]*)\b"
        ),
        r"\2\3 \1",
        _DIGITS,
    ),
    (re.compile(r"\b(\d+)(?:st|nd|rd|th)\b"), r"\1th", _DIGITS),  # 9th, ninth -> 9th
    # 10mb -> 10 mb, 8s -> 8 s; ordinals are the rule above
    (re.compile(r"\b(\d+(?:\.\d+)?)(?!(?:st|nd|rd|th)\b)([a-z]+)\b"), r"\1 \2", _DIGITS),
    # "in-cluster lookups" are "lookups in the cluster": keep the preposition a word.
    (re.compile(r"\bin-(?=[a-z])"), "in ", ("in-",)),
    (re.compile(r"(?<=[a-z])-(?=[a-z])"), "", ("-",)),  # sign-up -> signup, on-call -> oncall
    (re.compile(r"\bpull\s+requests?\b"), "pr", ("pull",)),
    (re.compile(r"\bon\s+call\b"), "oncall", ("call",)),
    (re.compile(r"\bhow\s+come\b"), "why", ("come",)),
    (re.compile(r"\bfor\s+how\s+long\b"), "how long", ("long",)),
    # A duration is asked in several ways: "how much time" is "how long"; "how long does it
    # take to restore X", "how long does a restore of X take" and "how long does restoring X
    # take" ask one thing. The "it" there stands for nothing (it is not a referent), and the
    # noun or gerund is the verb.
    (re.compile(r"\bhow\s+much\s+time\b"), "how long", ("time",)),
    (
        re.compile(r"\bhow\s+long\s+(does|do|did|will|would|could|can|should)\s+it\s+take\s+to\b"),
        r"how long \1 take to",
        ("long",),
    ),
    # ... and "how long does it take for the cache to warm up": the cache takes that long.
    (
        re.compile(
            r"\bhow\s+long\s+(does|do|did|will|would|could|can|should)\s+it\s+take\s+"
            r"for\s+([^?,;]{1,80}?)\s+to\b"
        ),
        r"how long \1 \2 take to",
        ("long",),
    ),
    (
        re.compile(
            r"\bhow\s+long\s+(does|do|did|will|would|could|can|should)\s+(?:a|an|the)\s+"
            r"(\w+\s+)?(\w+)\s+of\s+([^?,;]{1,80}?)\s+take(?=[\s?.!]*$)"
        ),
        r"how long \1 take to \2\3 \4",
        ("long",),
    ),
    (
        re.compile(
            r"\bhow\s+long\s+(does|do|did|will|would|could|can|should)\s+(\w+ing)\s+"
            r"([^?,;]{1,80}?)\s+take(?=[\s?.!]*$)"
        ),
        r"how long \1 take to \2 \3",
        ("long",),
    ),
    (re.compile(r"\b(?:what|which)\s+(?:date|day)\b"), "when", ("date", "day")),
    (re.compile(r"\bcompared\s+(?:to|with)\b"), "vs", ("compared",)),
    (
        re.compile(
            r"\bwhat(?:\s+is|\s+was|'s)?\s+(?:the\s+)?(?:reason|cause)\s+(?:for|of|behind)\b"
        ),
        "why",
        ("reason", "cause"),
    ),
    # "what causes X to fail" and "what's causing X to fail" ask "why does X fail"
    (
        re.compile(
            r"\bwhat(?:\s+is|\s+was)?\s+(?:causes|caused|causing|makes|made|making)\s+"
            r"(.{1,80}?)\s+to\s+(?=\w)"
        ),
        r"why \1 ",
        ("caus", "mak", "made"),
    ),
    (re.compile(r"\bwhat(?:\s+is|'s)?\s+(?:causing|behind)\b"), "why", ("causing", "behind")),
    (re.compile(r"\bwhat\s+(?:causes|caused|makes|made)\b"), "why", ("caus", "mak", "made")),
    (re.compile(r"\b(?:larger|bigger|greater|more|longer|higher)\s+than\b"), "over", ("than",)),
    (re.compile(r"\b(?:smaller|less|fewer|shorter|lower)\s+than\b"), "under", ("than",)),
    (re.compile(r"\b(?:per\s+cent|percent)\b"), "%", ("cent",)),
    (re.compile(r"\s&\s"), " and ", ("&",)),
    (re.compile(r"\bgarbage\s+collect(?:ion|or)?\b"), "gc", ("garbage",)),
    (re.compile(r"\b(?:two|2)\s+times\b"), "twice", ("times",)),
    (re.compile(r"\bright\s+now\b"), "currently", ("now",)),
    # A cleft says nothing more: "which change was it that broke X" asks "which change broke X"
    (re.compile(r"\b(?:is|was)\s+it\s+that\b"), "", ("it",)),
    # "some of the totals" asks about "some totals"
    (re.compile(r"\b(some|many|most|all|each|several|both)\s+of\s+the\b"), r"\1 the", ("of",)),
    # "doesn't have a CODEOWNERS entry" is "has no CODEOWNERS entry"
    (re.compile(r"\b(?:do|does|did)\s+not\s+have\s+(?:a\s+|an\s+|any\s+)?"), "have no ", ("not",)),
    # "are missing X" says of a thing what "have no X" says: "strings missing translations"
    (re.compile(r"\b(?:is|are|was|were)\s+missing\b"), "have no", ("missing",)),
    (re.compile(r"\broot\s+cause\s+(?:for|behind)\b"), "root cause of", ("root",)),
    # A search or query that "returns nothing" returns no results.
    (
        re.compile(r"\b(return|returns|returned|show|shows|showed|give|gives|gave)\s+nothing\b"),
        r"\1 no results",
        ("nothing",),
    ),
    # Phrasal verbs with a one-word equivalent.
    (re.compile(r"\b(?:go|goes|going|went|gone)\s+up\b"), "increase", ("up",)),
    (re.compile(r"\b(?:go|goes|going|went|gone)\s+down\b"), "drop", ("down",)),
    (
        re.compile(r"\bturn(?:s|ed|ing)?\s+on\b(?!\s+(?:me|you|him|her|us|them)\b)"),
        "enable",
        ("turn",),
    ),
    (
        re.compile(r"\bturn(?:s|ed|ing)?\s+off\b(?!\s+(?:me|you|him|her|us|them)\b)"),
        "disable",
        ("turn",),
    ),
    (re.compile(r"\b(find|found|finding|figure|figured)\s+out\b"), r"\1", ("out",)),
    (re.compile(r"\bgoing\s+to\b"), "will", ("going",)),
    # A duration reads the same with or without "for": "wait (for) over an hour".
    (
        re.compile(
            r"\bfor\s+(?=(?:over|about|around|almost|nearly|under|up\s+to|at\s+least)?\s*"
            r"(?:\d+(?:\.\d+)?|a|an|one|two|three|four|five|six|seven|eight|nine|ten|"
            r"several|a\s+few|few)\s+(?:second|minute|hour|day|week|month|year)s?\b)"
        ),
        "",
        ("for",),
    ),
    # "a day early" is "one day early": an article before a unit of time counts one of it.
    (
        re.compile(
            r"\b(?:a|an)\s+(?=(?:second|minute|hour|day|week|month|year|cent|dollar|euro|"
            r"byte|kilobyte|megabyte|gigabyte|kb|mb|gb)\b)"
        ),
        "1 ",
        _UNITS,
    ),
    # "What rate limit does the API have?" asks for the API's rate limit.
    (
        re.compile(
            r"\b(what|which|how\s+many|how\s+much)\s+([^?,;]{1,60}?)\s+(?:do|does|did)\s+"
            r"([^?,;]{1,60}?)\s+have\s*(?=[?.!]*\s*$)"
        ),
        r"\1 \3 \2",
        ("have",),
    ),
    (re.compile(r"\bjust\b"), "only", ("just",)),
    # "why does the build keep failing" asks "why does the build fail": "keep" only says again.
    (re.compile(r"\b(?:keep|keeps|kept)\s+(?=(?!\w*thing\b)\w{3,}ing\b)"), "", ("keep", "kept")),
    # "queries that have an apostrophe" are "queries with an apostrophe", "zero results" are
    # "no results", and "double charged" is "charged twice".
    (
        re.compile(
            r"\b(\w+s)\s+(?:that|which|who)\s+(?:have|contain)\s+(?=(?:a|an|the|no|\w+s)\b)"
        ),
        r"\1 with ",
        ("have", "contain"),
    ),
    (re.compile(r"\bzero\s+(?=\w+s\b)"), "no ", ("zero",)),
    (
        re.compile(r"\bdouble(?:\s+|-)?(charged|billed|counted|booked|paid)\b"),
        r"\1 twice",
        ("double",),
    ),
    # A scheduled run is named with or without "job": "the nightly backup (job)", "the daily
    # ETL (job)". Only after a schedule word: "a government job" is not "a government".
    (
        re.compile(r"\b(hourly|daily|nightly|weekly|monthly)\s+([\w.]+(?:\s+[\w.]+)?)\s+jobs?\b"),
        r"\1 \2",
        ("job",),
    ),
)

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

_NUMBER_WORDS = {
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
    "docs": "documentation", "doc": "documentation", "dir": "directory", "folder": "directory",
    "char": "character", "versus": "vs", "occasionally": "sometimes", "impact": "affect",
    "retain": "keep", "bypass": "skip", "every": "all", "each": "all", "regarding": "about",
    "below": "under", "compat": "compatibility", "dep": "dependency", "deps": "dependency",
    "var": "variable", "vars": "variable", "endtoend": "e2e",
    "concerning": "about", "inside": "in", "within": "in", "above": "over", "via": "through",
    "somebody": "anyone", "someone": "anyone", "anybody": "anyone", "spike": "jump",
    "seq": "sequential", "fall": "drop", "prs": "pr",
    "first": "1th", "second": "2th", "third": "3th", "fourth": "4th", "fifth": "5th",
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
COUNTS = frozenset({"a", "an", "per", "few", "several", "couple", *"0123456789", *_NUMBER_WORDS})
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
    if token in _NUMBER_WORDS and token != "one":
        return _NUMBER_WORDS[token]
    if token.isdigit():
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


# A leading "when/if ... ," clause asks what the same clause at the end asks:
# "When shared/utils changes, which packages rebuild?" / "Which packages rebuild when ...?"
_FRONTED_CLAUSE = re.compile(
    r"^\W*((?:when|whenever|if|once|after|before|while|until|since)\b[^,?;]{1,80}?"
    # ... and so does a leading time: "Last week, how many PRs were opened?"
    r"|(?:last|this|next)\s+(?:night|week|month|quarter|year|sprint|release)|yesterday|today"
    r"|on\s+(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday))\s*,\s*(.+)$"
)


def tokens_and_marks(text: str) -> tuple[list[str], frozenset[int]]:
    """The tokens, and the indexes of those that are part of a path such as "acme/api"."""
    # "US" the country, before lower-casing makes it "us" the pronoun.
    text = _COUNTRY_US.sub("usa", unicodedata.normalize("NFKC", text)).lower()
    text = text.replace("\u2019", "'").replace("`", "'")
    for pattern, replacement, needs in (*_CONTRACTIONS, *_REWRITES):
        if any(map(text.__contains__, needs)):
            text = pattern.sub(replacement, text)
    text = _WRAPPERS.sub(" ", text)
    text = _FRONTED_CLAUSE.sub(r"\2 \1", text)
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


@cache
def _common_words() -> frozenset[str]:
    data = resources.files("staffstore") / "data" / "common_words.txt.gz"
    text = gzip.decompress(data.read_bytes()).decode("utf-8")
    return frozenset(line for line in text.splitlines() if line and not line.startswith("#"))


def is_common_word(word: str) -> bool:
    """True for a common English word as typed ("house", "horse"): a slip of the keyboard
    seldom makes one, so two of them that differ by a letter are two words, not a typo."""
    return word in _common_words()


# British and American spellings of one word: (British, American, shortest word it applies
# to). The length keeps real pairs apart: "four" / "for", "filled" / "filed".
_SPELLINGS = (
    ("our", "or", 5),  # colour, favourite, behaviour
    ("tre", "ter", 5),  # theatre, centres, metre
    ("ence", "ense", 7),  # licence, defence, offence
    ("ll", "l", 7),  # travelled, cancelling, labelled, traveller
    ("ae", "e", 7),  # mediaeval, paediatric, encyclopaedia
)


def spelling_variants(a: str, b: str) -> bool:
    """True when `a` and `b` are the British and American spellings of one word.

    Both may be common words ("travelled", "traveled"), so the slip rule would keep them apart.
    """
    for british, american, shortest in _SPELLINGS:
        for one, other in ((a, b), (b, a)):
            if len(other) < shortest:
                continue
            at = one.find(british)
            while at != -1:
                if one[:at] + american + one[at + len(british) :] == other:
                    return True
                at = one.find(british, at + 1)
    return False


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
