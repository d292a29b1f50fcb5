"""Writing a batch of checked import lines: turns through the archive writer, facts to learn
through the FactKeeper (so the fact rules apply), the records of an export restored as
they were (``actors.restore``); all idempotent on the lines' ids."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from actors.keys import key_vectors
from actors.mailbox import SessionDeps
from actors.restore import Restored, restore
from memory.recall import said
from memory.transfer import message_from_line
from memory.transfer_records import is_record
from schemas.records import ArchivedMessage
from schemas.transfer import FactLine, ImportLine, LineError, TurnLine

__all__ = ["Tally", "import_lines"]


@dataclass(frozen=True, slots=True)
class Tally:
    imported: int
    skipped: int
    #: Lines refused while they were written (a record past a bound).
    errors: list[LineError] = field(default_factory=list)


async def import_lines(
    deps: SessionDeps,
    user_id: str,
    lines: Sequence[tuple[int, ImportLine]],
    previous: dict[str, str] | None = None,
) -> Tally:
    """Store one batch of lines checked by ``memory.transfer.parse_line``, each with its
    line number: turns, then facts to learn, then the records of an export
    (``actors.restore``).

    A line is skipped when its id was imported before for this user (or names a
    record of the user's: an export imported back), when it repeats an id of
    the batch, when it is a fact to learn that is not active or duplicates a stored
    fact. Raises ``MnemoError`` when the store fails; whatever an earlier batch wrote
    stays. ``previous`` (session id -> its last message, ``speaker: text``) carries each
    session's context from batch to batch: a turn is indexed with the one before it.
    """
    turns = [line for _, line in lines if isinstance(line, TurnLine)]
    facts = [line for _, line in lines if isinstance(line, FactLine) and not is_record(line)]
    records = [
        (number, line)
        for number, line in lines
        if not isinstance(line, TurnLine)
        and not (isinstance(line, FactLine) and not is_record(line))
    ]
    imported = await _import_turns(deps, user_id, turns, {} if previous is None else previous)
    if facts:
        changes = await deps.learning.keeper.import_facts(user_id, facts)
        imported += len(changes.added)
    restored = await restore(deps, user_id, records) if records else Restored()
    imported += restored.imported
    return Tally(imported, len(lines) - imported - len(restored.errors), restored.errors)


async def _import_turns(
    deps: SessionDeps, user_id: str, lines: Sequence[TurnLine], previous: dict[str, str]
) -> int:
    """Append the turns not stored yet; how many were appended."""
    store = deps.store
    batch: dict[str, ArchivedMessage] = {}
    for line in lines:
        message = message_from_line(line, user_id, context=previous.get(line.session_id, ""))
        previous[line.session_id] = said(line.speaker, line.text)
        batch.setdefault(message.id, message)

    async def stored() -> set[str]:
        ids = [*batch, *(m.source_id for m in batch.values())]
        return await store.existing_message_ids(user_id, ids)

    def unseen(known: set[str]) -> list[ArchivedMessage]:
        return [m for m in batch.values() if m.id not in known and m.source_id not in known]

    fresh = unseen(await stored()) if batch else []
    if not fresh:
        return 0
    vectors = dict(
        zip(
            (m.id for m in fresh),
            await key_vectors(deps.embedder, fresh),
            strict=True,
        )
    )

    async def append() -> int:
        # Checked again in the writer's task: another import may have landed meanwhile.
        rows = [m for m in unseen(await stored()) if m.id in vectors]
        await store.append_messages(rows, [vectors[m.id] for m in rows])
        deps.writer.journaled(len(rows))  # moved into the table like a session's turns
        return len(rows)

    return await deps.writer.call(append)
