"""A key's team as a metrics label of bounded cardinality: the first `max_teams` teams seen
keep their name, later ones become `other`, no team is `none`."""

from __future__ import annotations


class TeamLabels:
    """The label for a team; remembers at most `max_teams` names."""

    def __init__(self, max_teams: int) -> None:
        self._max_teams = max_teams
        self._teams: set[str] = set()

    def __call__(self, team: str | None) -> str:
        if team is None:
            return "none"
        if team in self._teams:
            return team
        if len(self._teams) < self._max_teams and team not in ("none", "other"):
            self._teams.add(team)
            return team
        return "other"
