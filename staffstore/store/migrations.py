"""Numbered schema steps, applied in order when a store opens. Never edit a shipped step.

Each step is a list of SQL statements; `user_version` records how many have been applied, so a
store made by an older staffstore opens and upgrades itself. New tables arrive as new steps.
Every file staffstore writes carries APPLICATION_ID in its header, so another program's SQLite
file is recognised and left alone.
"""

from __future__ import annotations

from . import kept_prompts, memory_tables, state_tables, story_tables, vault_tables
from .database import COUNT_TERMS

#: `PRAGMA application_id` of a staffstore file: "SfSt" in ASCII (see `file(1)`'s magic).
APPLICATION_ID = 0x53665374

MIGRATIONS: list[list[str]] = [
    # 1: sessions and messages, claims with their FTS5 index, artifacts, receipts.
    [
        """
        CREATE TABLE sessions (
            id TEXT PRIMARY KEY,
            owner TEXT NOT NULL,
            name TEXT NOT NULL,
            created_at REAL NOT NULL,
            UNIQUE (owner, name)
        )
        """,
        """
        CREATE TABLE messages (
            id INTEGER PRIMARY KEY,
            session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
            role TEXT NOT NULL CHECK (role IN ('system', 'user', 'assistant')),
            content TEXT NOT NULL,
            created_at REAL NOT NULL
        )
        """,
        "CREATE INDEX messages_by_session ON messages (session_id, id)",
        # An explicit INTEGER PRIMARY KEY: FTS5 external content is keyed by rowid, and
        # VACUUM may renumber implicit rowids.
        """
        CREATE TABLE claims (
            rowid INTEGER PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            owner TEXT NOT NULL,
            agent TEXT,
            question TEXT NOT NULL,
            answer TEXT NOT NULL,
            source TEXT NOT NULL CHECK (source IN ('job', 'chat', 'manual')),
            job_id TEXT,
            repository TEXT,
            profile TEXT,
            revision TEXT,
            inputs_fingerprint TEXT,
            status TEXT NOT NULL DEFAULT 'live'
                CHECK (status IN ('live', 'superseded', 'retracted', 'expired')),
            expires_at REAL,
            created_at REAL NOT NULL,
            superseded_by TEXT,
            -- the question's content words in order (matching.normalize): the gate's key
            search_key TEXT NOT NULL
        )
        """,
        "CREATE INDEX claims_by_owner ON claims (owner, status, created_at)",
        "CREATE INDEX claims_by_key ON claims (owner, search_key)",
        """
        CREATE VIRTUAL TABLE claims_fts USING fts5(
            question, answer, search_key,
            content='claims', content_rowid='rowid', tokenize='unicode61'
        )
        """,
        """
        CREATE TRIGGER claims_ai AFTER INSERT ON claims BEGIN
            INSERT INTO claims_fts (rowid, question, answer, search_key)
            VALUES (new.rowid, new.question, new.answer, new.search_key);
        END
        """,
        """
        CREATE TRIGGER claims_ad AFTER DELETE ON claims BEGIN
            INSERT INTO claims_fts (claims_fts, rowid, question, answer, search_key)
            VALUES ('delete', old.rowid, old.question, old.answer, old.search_key);
        END
        """,
        """
        CREATE TRIGGER claims_au AFTER UPDATE OF question, answer, search_key ON claims BEGIN
            INSERT INTO claims_fts (claims_fts, rowid, question, answer, search_key)
            VALUES ('delete', old.rowid, old.question, old.answer, old.search_key);
            INSERT INTO claims_fts (rowid, question, answer, search_key)
            VALUES (new.rowid, new.question, new.answer, new.search_key);
        END
        """,
        """
        CREATE TABLE artifacts (
            owner TEXT NOT NULL,
            id TEXT NOT NULL,
            kind TEXT NOT NULL,
            job_id TEXT,
            content BLOB NOT NULL,
            size INTEGER NOT NULL,
            created_at REAL NOT NULL,
            PRIMARY KEY (owner, id)
        )
        """,
        """
        CREATE TABLE receipts (
            id TEXT PRIMARY KEY,
            owner TEXT NOT NULL,
            outcome TEXT NOT NULL CHECK (outcome IN ('hit', 'miss')),
            reason TEXT NOT NULL,
            status TEXT NOT NULL,
            model TEXT,
            prompt_tokens INTEGER,
            completion_tokens INTEGER,
            cost_usd REAL,
            inference_avoided INTEGER NOT NULL,
            inference_attempted INTEGER NOT NULL,
            latency_ms REAL NOT NULL,
            started_at REAL NOT NULL,
            finished_at REAL NOT NULL,
            session_id TEXT,
            claim_id TEXT,
            question TEXT,
            answer TEXT,
            error TEXT
        )
        """,
        "CREATE INDEX receipts_by_owner ON receipts (owner, started_at)",
    ],
    # 2: answers the HTTP proxy paid for, kept to serve exact repeats of the same request.
    [
        """
        CREATE TABLE kept_answers (
            owner TEXT NOT NULL,
            namespace TEXT NOT NULL,
            -- content hash of the canonical JSON of model, parameters and messages
            request_hash TEXT NOT NULL,
            receipt_id TEXT NOT NULL,
            model TEXT,
            answer TEXT NOT NULL,
            created_at REAL NOT NULL,
            expires_at REAL,
            PRIMARY KEY (owner, namespace, request_hash)
        )
        """,
    ],
    # 3: how often each content word occurs in an owner's questions, so the gate can look
    # candidates up by their rarest words (a common word's FTS5 doclist is slow to read).
    [
        """
        CREATE TABLE term_counts (
            owner TEXT NOT NULL,
            term TEXT NOT NULL,
            n INTEGER NOT NULL,
            PRIMARY KEY (owner, term)
        ) WITHOUT ROWID
        """,
        COUNT_TERMS,
    ],
    # 4: settings the store keeps about itself, such as which matcher wrote its search keys.
    [
        """
        CREATE TABLE store_settings (
            name TEXT PRIMARY KEY,
            value TEXT NOT NULL
        ) WITHOUT ROWID
        """,
    ],
    # 5: working state (keys, supersession chain, handoffs) and agent state (schemas, states,
    # erasure proofs); see state_tables.py.
    state_tables.MIGRATION,
    # 6: jobs: the work runners did, by identity and launch key, with what each one left
    # (artifacts and claims) and a receipt per dispatch (launched, reused, attached, lost).
    [
        """
        CREATE TABLE jobs (
            id TEXT PRIMARY KEY,
            owner TEXT NOT NULL,
            agent TEXT NOT NULL,
            kind TEXT NOT NULL CHECK (kind IN ('analyze', 'implement')),
            task TEXT NOT NULL,
            -- the task's content words (matching.normalize), re-keyed with the claims
            task_key TEXT NOT NULL,
            repository TEXT,
            profile TEXT,
            revision TEXT,
            inputs TEXT NOT NULL,
            inputs_fingerprint TEXT NOT NULL,
            launch_key TEXT NOT NULL,
            command TEXT,
            runner TEXT NOT NULL,
            handle TEXT,
            status TEXT NOT NULL CHECK (status IN
                ('pending', 'running', 'succeeded', 'failed', 'cancelled', 'lost')),
            exit_code INTEGER,
            error TEXT,
            substantive INTEGER NOT NULL DEFAULT 0,
            expires_at REAL,
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL,
            finished_at REAL
        )
        """,
        # A launch key names one unfinished job per owner: a second launch under it attaches.
        """
        CREATE UNIQUE INDEX jobs_active_launch ON jobs (owner, launch_key)
            WHERE status IN ('pending', 'running')
        """,
        "CREATE INDEX jobs_by_launch_key ON jobs (owner, launch_key, created_at)",
        "CREATE INDEX jobs_by_task ON jobs (owner, kind, status, task_key)",
        "CREATE INDEX jobs_by_owner ON jobs (owner, created_at)",
        """
        CREATE TABLE job_artifacts (
            owner TEXT NOT NULL,
            job_id TEXT NOT NULL REFERENCES jobs(id),
            name TEXT NOT NULL,
            artifact_id TEXT NOT NULL,
            PRIMARY KEY (job_id, name)
        )
        """,
        """
        CREATE TABLE job_claims (
            owner TEXT NOT NULL,
            job_id TEXT NOT NULL REFERENCES jobs(id),
            claim_id TEXT NOT NULL,
            PRIMARY KEY (job_id, claim_id)
        )
        """,
        """
        CREATE TABLE job_receipts (
            id TEXT PRIMARY KEY,
            owner TEXT NOT NULL,
            job_id TEXT NOT NULL,
            action TEXT NOT NULL CHECK (action IN ('launched', 'reused', 'attached', 'lost')),
            reason TEXT NOT NULL,
            matched TEXT NOT NULL,
            mismatched TEXT NOT NULL,
            created_at REAL NOT NULL
        )
        """,
        "CREATE INDEX job_receipts_by_owner ON job_receipts (owner, created_at)",
    ],
    # 7: what a hit saved. A hit's receipt names the paid receipt whose answer it served and
    # copies that call's cost, the estimate of the cost it avoided, so deleting old receipts
    # changes no estimate already made; kept answers and promoted claims keep what their
    # paid call cost for the hits still to come.
    [
        "ALTER TABLE receipts ADD COLUMN served_from TEXT",
        "ALTER TABLE receipts ADD COLUMN avoided_cost_usd REAL",
        "ALTER TABLE kept_answers ADD COLUMN cost_usd REAL",
        """
        UPDATE kept_answers SET cost_usd =
            (SELECT r.cost_usd FROM receipts r WHERE r.id = kept_answers.receipt_id)
        """,
        """
        CREATE TABLE claim_origins (
            claim_id TEXT PRIMARY KEY,
            owner TEXT NOT NULL,
            -- the receipt the claim was promoted from (or the paid one it repeated)
            receipt_id TEXT NOT NULL,
            cost_usd REAL
        )
        """,
    ],
    # 8: the exact-repeat calls being paid for right now, one holder each, so a second
    # identical request (in this process or another sharing the store) waits for the first's
    # answer instead of paying again. A lease: a holder that dies lets it lapse at expires_at.
    [
        """
        CREATE TABLE pending_calls (
            owner TEXT NOT NULL,
            namespace TEXT NOT NULL,
            request_hash TEXT NOT NULL,
            holder TEXT NOT NULL,
            expires_at REAL NOT NULL,
            PRIMARY KEY (owner, namespace, request_hash)
        ) WITHOUT ROWID
        """,
    ],
    # 9: scoped state (step, workflow, project, global) and workflow memory (run records,
    # lessons, rolling digests, memory settings); see memory_tables.py.
    memory_tables.MIGRATION,
    # 10: a session's story, one version a row, the newest current; see story_tables.py.
    story_tables.MIGRATION,
    # 11: the session vault, an FTS5 index over the messages; see vault_tables.py.
    vault_tables.MIGRATION,
    # 12: a receipt's prompt tokens per part of the working set (JSON), and how often each
    # session message was recalled by the vault (working_set/rungs.py reads it).
    [
        "ALTER TABLE receipts ADD COLUMN prompt_parts TEXT",
        "ALTER TABLE messages ADD COLUMN recalls INTEGER NOT NULL DEFAULT 0",
    ],
    # 13: the prompts of context-free kept answers, searchable within their owner, namespace
    # and context (an FTS5 index), so a reworded question can reuse a paid answer; and a
    # receipt's source (claim or kept_answer); see kept_prompts.py.
    kept_prompts.MIGRATION,
]
