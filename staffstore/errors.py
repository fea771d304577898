"""The exception tree. Every error staffstore raises derives from StaffstoreError:

    StaffstoreError
     ├── InputError              text or a file a user gave cannot be used as it is
     │    ├── ImportFileError    a claims file has bad lines (carries the line numbers)
     │    └── MissingScopeKeyError  agent state has no (or too short a) scope key configured
     ├── StoreError              the database cannot be opened or used
     │    ├── CorruptStoreError  the file is not a SQLite database, or is damaged
     │    ├── ForeignStoreError  the file is another program's SQLite database (left untouched)
     │    ├── MissingStoreError  no database at that path, and the command would not create one
     │    └── StoreBusyError     another process holds the write lock (try again later)
     ├── NotFoundError           no such claim, receipt or session for this owner
     ├── JobLimitError           an owner (or every owner) has as many jobs running as allowed
     └── UpstreamError           the model endpoint failed or could not be reached
          ├── MissingApiKeyError     no key configured: nothing was sent (not an attempt)
          ├── UpstreamTimeoutError   the call was sent and timed out (an attempt)
          ├── UpstreamUnreachableError  the connection failed once the call was sent (an attempt)
          │    └── UpstreamConnectError  no connection was made, nothing was sent (not an attempt)
          └── UpstreamStatusError    the endpoint answered with an error (an attempt)

A miss is not an error: the gate returns it as a value with a reason code.
"""

from __future__ import annotations


class StaffstoreError(Exception):
    """Base class of every error staffstore raises."""


class InputError(StaffstoreError):
    """Text or a file a user gave cannot be used as it is."""


class ImportFileError(InputError):
    """A claims file has lines that cannot be read; nothing from it was stored."""

    def __init__(self, message: str, bad_lines: list[int]) -> None:
        super().__init__(message)
        self.bad_lines = bad_lines


class MissingScopeKeyError(InputError):
    """Agent state needs an HMAC key for scope ids, and none (or too short a one) is set."""


class StoreError(StaffstoreError):
    """The database cannot be opened or used."""


class CorruptStoreError(StoreError):
    """The database file is not SQLite, or is damaged."""


class ForeignStoreError(StoreError):
    """The file is another program's SQLite database; staffstore left it untouched."""


class MissingStoreError(StoreError):
    """There is no database at the path, and the caller asked not to create one."""


class StoreBusyError(StoreError):
    """Another connection held the database's write lock longer than the lock timeout."""


class ConstraintError(StoreError):
    """A write the schema refuses (a foreign key, a unique key), on either backend."""


class NotFoundError(StaffstoreError):
    """No such claim, receipt or session for this owner."""


class UpstreamError(StaffstoreError):
    """The upstream model endpoint failed or could not be reached."""

    #: True when a request left this machine, so a provider may have billed it.
    attempted: bool = True
    #: The receipt status this failure is recorded under.
    status: str = "error"


class MissingApiKeyError(UpstreamError):
    """No API key is configured for the upstream endpoint; nothing was sent."""

    attempted = False
    status = "no_api_key"


class UpstreamTimeoutError(UpstreamError):
    """The upstream call was sent and did not finish in time."""

    status = "timeout"


class UpstreamUnreachableError(UpstreamError):
    """The upstream endpoint could not be connected to."""

    status = "unreachable"


class UpstreamConnectError(UpstreamUnreachableError):
    """No connection to the upstream could be made (refused, DNS, connect timeout): nothing
    left this machine, so nothing can have been billed."""

    attempted = False


class UpstreamStatusError(UpstreamError):
    """The upstream endpoint answered with an HTTP error or an error event."""

    def __init__(
        self,
        message: str,
        status_code: int,
        *,
        error_type: str | None = None,
        code: str | int | None = None,
    ) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.error_type = error_type
        self.code = code
