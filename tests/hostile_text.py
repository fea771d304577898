"""User text written in FTS5's query syntax: every lookup must take it as plain words."""

FTS5_SYNTAX = [
    '"',
    'ledger" OR "replay',
    "kernel OR ledger",
    "NOT replay",
    "replay NOT ledger",
    "NEAR(ledger replay, 2)",
    "ledg*",
    "*",
    "-replay",
    "question: ledger",
    "search_key : kernel",
    "{question answer} : kernel",
    "^kernel",
    "(ledger",
    "ledger))",
    "kernel AND",
    "OR",
    "ledger\x00replay",
]
SQL_INJECTION = ["'; DROP TABLE claims; --", "Robert'); DROP TABLE claims;--"]
