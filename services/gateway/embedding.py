"""Which sites may show a platform's pages in a frame (``SPADES_FRAME_ORIGINS``).

A page of a game or a league is framed only by the sites its platform named: its
Content-Security-Policy's ``frame-ancestors`` lists them (``'none'`` for everyone else), so no
other site can put the table under its own buttons. An origin is ``scheme://host[:port]``,
https (or http, for a site on this machine), exactly as a browser compares it.
"""

from __future__ import annotations

import re

from services.runtime.settings import PLATFORM_NAME

ORIGIN = re.compile(r"^https?://[A-Za-z0-9.-]{1,253}(:[0-9]{1,5})?$")
MOST_ORIGINS = 16
"""Origins one platform may name: a header is no place for a long list."""

FrameOrigins = dict[str | None, tuple[str, ...]]
"""Per platform (None: the games of a server without platform keys), the origins that may
frame its pages."""


def parse_frame_origins(text: str) -> FrameOrigins:
    """``platform=ORIGIN ORIGIN; ...`` (a bare list: the platform of local development);
    raises ValueError naming the entry that is wrong."""
    parsed: FrameOrigins = {}
    for entry in (part.strip() for part in text.split(";")):
        if not entry:
            continue
        named, equals, listed = entry.partition("=")
        platform: str | None = named.strip() if equals else None
        origins = tuple((listed if equals else named).split())
        if platform is not None and not PLATFORM_NAME.match(platform):
            raise ValueError(f"SPADES_FRAME_ORIGINS: {platform!r} is not a platform's name")
        if not origins or len(origins) > MOST_ORIGINS:
            raise ValueError(
                f"SPADES_FRAME_ORIGINS: {platform or 'an entry'} names 1 to {MOST_ORIGINS} origins"
            )
        for origin in origins:
            if not ORIGIN.match(origin):
                raise ValueError(
                    f"SPADES_FRAME_ORIGINS: {origin!r} is not an origin (https://host[:port])"
                )
        parsed[platform] = parsed.get(platform, ()) + origins
    return parsed


def frame_ancestors(origins: FrameOrigins, platform: str | None) -> str:
    """The ``frame-ancestors`` directive for a page of ``platform``'s game or league."""
    allowed = origins.get(platform, ())
    return f"frame-ancestors {' '.join(allowed)}" if allowed else "frame-ancestors 'none'"
