"""A typed Python client for the Spades HTTP API (docs/api.md): used by the CLI, tests and bots."""

from contracts.answers import GameList, GameSummary, HandScore, Scoreboard, SeatTaken
from domain.records import Deal, Drawn, HandRecord, Pass, Played, Trick
from domain.views import (
    LegalAction,
    LegalBack,
    LegalBid,
    LegalDiscard,
    LegalDraw,
    LegalLook,
    LegalPass,
    LegalPlay,
    PublicState,
    SeatInfo,
    SeatView,
    TrickCard,
)
from services.audit.history import Problem as AuditProblem
from services.audit.report import AuditReport as Audit
from services.audit.report import HandReport as AuditedHand
from services.client.api import ApiError, ClientError, SpadesClient, UnexpectedResponse
from services.client.models import (
    Action,
    ActionResult,
    BidAction,
    DiscardAction,
    DrawAction,
    EventRecord,
    HandScoreLine,
    LookAction,
    PassAction,
    PlayAction,
    ScoredHandRecord,
)
from services.client.sse import ServerSentEvent, parse_server_sent_events
from services.client.webhooks import WebhookClient, WebhookVerificationError, verify_webhook

__all__ = [
    "Action",
    "ActionResult",
    "ApiError",
    "Audit",
    "AuditProblem",
    "AuditedHand",
    "BidAction",
    "ClientError",
    "Deal",
    "DiscardAction",
    "DrawAction",
    "Drawn",
    "EventRecord",
    "GameList",
    "GameSummary",
    "HandRecord",
    "HandScore",
    "HandScoreLine",
    "LegalAction",
    "LegalBack",
    "LegalBid",
    "LegalDiscard",
    "LegalDraw",
    "LegalLook",
    "LegalPass",
    "LegalPlay",
    "LookAction",
    "Pass",
    "PassAction",
    "PlayAction",
    "Played",
    "PublicState",
    "Scoreboard",
    "ScoredHandRecord",
    "SeatInfo",
    "SeatTaken",
    "SeatView",
    "ServerSentEvent",
    "SpadesClient",
    "Trick",
    "TrickCard",
    "UnexpectedResponse",
    "WebhookClient",
    "WebhookVerificationError",
    "parse_server_sent_events",
    "verify_webhook",
]
