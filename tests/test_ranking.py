"""``memory.ranking.rank`` on made-up candidates: the steps where a scenario through the
server cannot tell two choices apart (the hash embedder's similarities follow the
query's words)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from memory.ranking import Candidates, Pick, rank
from memory.when import TimeAnchor
from schemas.settings import Ranking

DAY = 86_400.0


def test_the_update_that_answers_best_supersedes_not_a_later_look_alike() -> None:
    # 0: the old statement, best match; 1: the update, next best; 2: a later message
    # that looks more like the old one (cosine 0.9) but answers the question less, and
    # is about something else than the update (cosine 0.2).
    scores = {0: 1.0, 1: 0.9, 2: 0.8}
    at = {0: 0.0, 1: 30 * DAY, 2: 60 * DAY}
    cosine = np.array([[1.0, 0.5, 0.9], [0.5, 1.0, 0.2], [0.9, 0.2, 1.0]], dtype=np.float32)

    def similarities(positions: Sequence[int]) -> npt.NDArray[np.float32]:
        index = np.asarray(positions)
        return cosine[np.ix_(index, index)]

    found = Candidates(scores, at.__getitem__, lambda _: "user", str, similarities)
    picks = rank(
        found,
        knobs=Ranking(supersede_similarity=0.3),
        anchor=TimeAnchor(),
        about_assistant=False,
        several=False,
        k=3,
        tie=lambda p: (0.0, p),
    )
    assert [pick.position for pick in picks] == [1, 0, 2]
    assert picks[1] == Pick(0, 1.0, 1)
    assert picks[0].superseded_by is None
