"""Who a game or a league belongs to, who may watch it and who may sit at it.

A platform is the business that puts the game in front of its own users. Every game and league
records the platform that created it (None for one created before platforms existed, or by a
server with no platform keys: anyone's, as every game then was). ``visibility`` says who may
read it besides its platform and its seats; ``seating`` who may take its seats.
"""

from __future__ import annotations

from typing import Literal

Visibility = Literal["public", "private"]
"""``public``: anyone may read and watch it; ``private``: its platform and its seats only."""

Seating = Literal["platform", "open"]
"""``platform``: the owning platform seats its users; ``open``: anyone may sit (a lobby)."""

FIRST_ISSUE = 1
"""The issue number of the token a seat gets when it is taken; each re-issue adds one."""
