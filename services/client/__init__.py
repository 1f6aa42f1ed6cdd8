"""A typed Python client for the Spades HTTP API (docs/api.md): used by the CLI, tests and bots."""

from contracts.answers import (
    Acted,
    EventPage,
    GameList,
    GameSummary,
    HandRecordWithReceipt,
    HandScore,
    Health,
    Readiness,
    Scoreboard,
    ScoredHandRecord,
    ScoreLine,
    SeatTaken,
)
from contracts.audit_log import DealCommitment, Receipt
from contracts.wire import EventRecord
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
    BidAction,
    DiscardAction,
    DrawAction,
    LookAction,
    PassAction,
    PlayAction,
)
from services.client.sse import ServerSentEvent, parse_server_sent_events
from services.client.webhooks import WebhookClient, WebhookVerificationError, verify_webhook

__all__ = [
    "Acted",
    "Action",
    "ApiError",
    "Audit",
    "AuditProblem",
    "AuditedHand",
    "BidAction",
    "ClientError",
    "Deal",
    "DealCommitment",
    "DiscardAction",
    "DrawAction",
    "Drawn",
    "EventPage",
    "EventRecord",
    "GameList",
    "GameSummary",
    "HandRecord",
    "HandRecordWithReceipt",
    "HandScore",
    "Health",
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
    "Readiness",
    "Receipt",
    "ScoreLine",
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
