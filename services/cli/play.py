"""``spades new-game``, ``sit``, ``play`` and ``watch``: a game from a terminal, over the HTTP API.

The loops take their input and output as arguments (a chooser, a console, a ``show`` callback),
so tests drive them with scripted answers against a real server.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from typing import Annotated, Any, TypeVar

import msgspec
import typer
from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.text import Text

from domain.cards import Card
from domain.errors import RuleViolation
from services.cli.discover import Url
from services.cli.errors import server_errors_reported
from services.cli.follow import GameFollower
from services.cli.table import describe_action, narrate, render_table, seat_name
from services.client import (
    ApiError,
    LegalLook,
    PublicState,
    SeatView,
    ServerSentEvent,
    SpadesClient,
)

T = TypeVar("T")

DEFAULT_URL = "http://127.0.0.1:8000"
STORY_LINES = 8
"""Events shown under the table by ``spades watch`` and ``spades play``."""
REDRAW_AFTER = frozenset(
    {"hand_dealt", "bid_placed", "cards_received", "trick_won", "hand_scored", "game_ended"}
)
"""Events after which ``spades watch`` fetches the table again (others only add a line)."""

Ask = Callable[[str], Awaitable[str | None]]
"""Asks the player something; None when the player has gone (end of input)."""
Chooser = Callable[[SeatView], Awaitable[Mapping[str, Any] | None]]
"""Picks the action to post from a view whose ``legal`` list offers one; None to leave."""

app = typer.Typer(help="Play or watch a game from a terminal.")

ApiKey = Annotated[
    str | None,
    typer.Option("--api-key", envvar="SPADES_API_KEY", help="Platform key (SPADES_API_KEY)."),
]


def terminal_ask(console: Console) -> Ask:
    """Reads answers from the terminal without blocking the event loop."""

    async def ask(prompt: str) -> str | None:
        try:
            return await asyncio.to_thread(console.input, prompt)
        except EOFError:
            return None

    return ask


class PromptChooser:
    """Lists the legal actions numbered and reads the player's choice: a number, or a card's
    name for a play. A pass or a discard due (``{"type": "pass", "count": n}``) then asks for
    n cards of the hand (with two decks a card held twice may be named twice)."""

    def __init__(self, console: Console, ask: Ask | None = None) -> None:
        self.console = console
        self.ask = ask or terminal_ask(console)

    async def __call__(self, view: SeatView) -> Mapping[str, Any] | None:
        options: list[dict[str, Any]] = msgspec.to_builtins(view.legal)  # as they are posted
        for number, action in enumerate(options, 1):
            self.console.print(f"  {number:>2}. {describe_action(action)}")
        while True:
            answer = await self.ask(f"Your move (1-{len(options)}, q to leave): ")
            if answer is None or answer.strip().lower() in {"q", "quit"}:
                return None
            chosen = self._read(answer.strip(), options)
            if chosen is None:
                self.console.print(f"[yellow]{answer.strip()!r} is not one of the moves.[/]")
                continue
            kind = chosen.get("type")
            if kind in ("pass", "discard") and "count" in chosen:
                if view.hand is None:
                    self.console.print("You look at your cards first.")
                    return {"type": "look"}
                cards = await self._cards_to_give(view, str(kind), int(chosen["count"]))
                return None if cards is None else {"type": kind, "cards": cards}
            return chosen

    @staticmethod
    def _read(answer: str, options: list[dict[str, Any]]) -> dict[str, Any] | None:
        if answer.isdigit():
            number = int(answer)
            return options[number - 1] if 1 <= number <= len(options) else None
        try:
            card = Card.parse(answer)
        except RuleViolation:
            return None
        return next(
            (a for a in options if a.get("type") == "play" and a.get("card") == card.value), None
        )

    async def _cards_to_give(self, view: SeatView, kind: str, count: int) -> list[str] | None:
        hand = Counter(view.hand or [])
        while True:
            answer = await self.ask(f"Cards to {kind} ({count}, e.g. 2H 3H): ")
            if answer is None:
                return None
            try:
                cards = [Card.parse(text) for text in answer.replace(",", " ").split()]
            except RuleViolation as error:
                self.console.print(f"[yellow]{error.detail}[/]")
                continue
            if len(cards) != count or not Counter(cards) <= hand:
                self.console.print(f"[yellow]Pick {count} cards of your hand.[/]")
                continue
            return [card.value for card in cards]


def _your_move(view: SeatView) -> bool:
    """Something to do now beyond looking at the cards (which waits for the seat's turn, so
    that a blind nil stays possible)."""
    return any(not isinstance(action, LegalLook) for action in view.legal)


def _position(message: ServerSentEvent) -> int:
    return int(message.id) if message.id is not None and message.id.isdigit() else 0


def _state_of(message: ServerSentEvent) -> PublicState:
    """The ``state`` event's data: a seat's view when it has a seat, else the public state."""
    data = message.json()
    shape: type[PublicState] = (
        SeatView if isinstance(data, dict) and "legal" in data else PublicState
    )
    return msgspec.convert(data, shape)


def _event_of(message: ServerSentEvent) -> Mapping[str, Any]:
    """A game event from a stream message: the event itself, or under ``event``."""
    data = message.json()
    if isinstance(data, dict) and isinstance(data.get("event"), dict):
        inner: dict[str, Any] = data["event"]
        return inner
    return data if isinstance(data, dict) else {}


def final_words(state: PublicState) -> Text:
    scores = ", ".join(
        f"{' & '.join(state.player(s) or f'seat {s}' for s in unit)} {state.scores[index]}"
        for index, unit in enumerate(state.units)
    )
    return Text(f"Final scores: {scores}.", style="bold")


class Screen:
    """What ``spades play`` shows: the table, and under it the latest events of the game's
    story (who bid what, who won each trick). On a terminal every change redraws it in place;
    elsewhere (a pipe, a log, a test) each line is written once, in order."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.redraw = console.is_terminal
        self.view: SeatView | None = None
        self.story: list[Text] = []
        self.status: str | None = None
        self.told = 0
        """The position of the last event in the story (each is told once, stream or not)."""
        self.seen = 0
        """The newest version the stream has shown (an event's position, a state's version)."""

    def show(self, view: SeatView) -> None:
        """The table as the view has it (and, redrawing, the story under it)."""
        self.view, self.status = view, None
        if self.redraw:
            self._draw()
        else:
            self.console.print(render_table(view))

    def tell(self, line: str) -> None:
        """One more line of the story."""
        self.story = [*self.story, Text(line)][-STORY_LINES:]
        if self.redraw:
            self._draw()
        else:
            self.console.print(line)

    def tell_event(self, position: int, event: Mapping[str, Any], view: PublicState) -> None:
        """The event at ``position`` in the story, unless it is there already."""
        if position > self.told:
            self.told = position
            self.tell(narrate(event, view))

    def wait(self, line: str) -> None:
        """What the seat waits for, under the story."""
        self.status = line
        if self.redraw:
            self._draw()
        else:
            self.console.print(line)

    def _draw(self) -> None:
        self.console.clear()
        if self.view is not None:
            self.console.print(render_table(self.view))
        for line in self.story:
            self.console.print(line, style="dim")
        if self.status is not None:
            self.console.print(self.status)


async def play_game(
    client: SpadesClient, game_id: str, token: str, choose: Chooser, console: Console
) -> SeatView:
    """Play one seat until the game ends or the chooser gives up; return the last view.

    Shows the table whenever the seat has a move, posts the chosen action with a fresh
    Idempotency-Key, and tells the story of the game under it: what the other seats did, from
    the stream, and what its own moves caused (a trick it completed: who won it).
    """
    screen = Screen(console)
    waiting_for: tuple[int, int | None] | None = None
    async with GameFollower(client, game_id, token) as follower:
        while True:
            view = await client.view(game_id, token)
            if not screen.told:
                screen.told = view.version  # what came before the seat sat down is not told
            screen.seen = max(screen.seen, view.version)
            await _tell_what_arrived(follower, view, screen)
            if view.status == "finished":
                screen.show(view)
                console.print(final_words(view))
                return view
            if not _your_move(view):
                if waiting_for != (view.hand_number, view.turn):
                    waiting_for = (view.hand_number, view.turn)
                    screen.wait(f"Waiting for {seat_name(view, view.turn)}…")
                await _wait_for_change(follower, view, screen)
                continue
            waiting_for = None
            screen.show(view)
            action = await choose(view)
            if action is None:
                return view
            try:
                result = await client.act(game_id, token, action, idempotency_key=uuid.uuid4().hex)
            except ApiError as error:
                if error.status >= 500:
                    raise
                console.print(f"[yellow]Refused: {error.code}: {error.detail or error.title}[/]")
                continue
            for record in result.events:  # its own move, and what that caused (a trick won)
                screen.tell_event(record.version, msgspec.to_builtins(record.event), view)


async def _wait_for_change(follower: GameFollower, view: SeatView, screen: Screen) -> None:
    """Wait until the stream shows something newer than the view (it may have already),
    telling what the other seats did."""
    while screen.seen <= view.version:
        _take(await follower.next(), view, screen)


async def _tell_what_arrived(follower: GameFollower, view: SeatView, screen: Screen) -> None:
    """Tell the events the stream has brought already, without waiting for more."""
    while follower.pending:
        _take(await follower.next(), view, screen)


def _take(message: ServerSentEvent, view: SeatView, screen: Screen) -> None:
    """Note how far the stream has gone, and tell the event a message carries."""
    if message.is_comment or message.event == "clock":
        return  # a clock frame carries deadlines; the table is told by its events
    if message.event == "state":
        screen.seen = max(screen.seen, _state_of(message).version)
        return
    position = _position(message)
    screen.seen = max(screen.seen, position)
    screen.tell_event(position, _event_of(message), view)


async def watch_game(
    client: SpadesClient,
    game_id: str,
    token: str | None,
    show: Callable[[RenderableType], None],
) -> PublicState:
    """Follow the game and ``show`` the table, with its latest events under it, each time it
    changes; return the final state when the game ends."""
    story: list[Text] = []
    state: PublicState | None = None
    async with GameFollower(client, game_id, token) as follower:
        while True:
            message = await follower.next()
            if message.is_comment or message.event == "clock":
                continue
            if message.event == "state":
                state = _state_of(message)
            else:
                event = _event_of(message)
                if state is None:
                    state = await _fetch(client, game_id, token)
                story = [*story, Text(narrate(event, state))][-STORY_LINES:]
                kind = event.get("type")
                # Fetch the table once a burst of events is in, and always at the end.
                if kind in REDRAW_AFTER and (follower.pending == 0 or kind == "game_ended"):
                    state = await _fetch(client, game_id, token)
            show(Group(render_table(state), *story))
            if state.status == "finished":
                return state


async def _fetch(client: SpadesClient, game_id: str, token: str | None) -> PublicState:
    return await (client.view(game_id, token) if token else client.state(game_id))


def _rules(preset: str, rules_json: str | None) -> dict[str, Any]:
    rules: dict[str, Any] = {"preset": preset}
    if rules_json:
        try:
            given = json.loads(rules_json)
        except json.JSONDecodeError as error:
            raise typer.BadParameter(f"not JSON: {error}", param_hint="--rules") from None
        if not isinstance(given, dict):
            raise typer.BadParameter("a JSON object of rules options", param_hint="--rules")
        rules.update(given)
    return rules


def _run(url: str, work: Coroutine[Any, Any, T]) -> T:
    """Run one client session; an API error or an unreachable server becomes a message and
    exit status 1."""
    try:
        with server_errors_reported(url):
            return asyncio.run(work)
    except KeyboardInterrupt:
        raise typer.Exit(130) from None


@app.command("new-game")
def new_game(
    preset: Annotated[
        str,
        typer.Option(
            help="partnership, solo, cutthroat, three-player-house, two-player, six-player, "
            "jokers-54."
        ),
    ] = "partnership",
    rules: Annotated[
        str | None,
        typer.Option("--rules", help='Options over the preset (JSON): {"target": 200}.'),
    ] = None,
    dealer: Annotated[int | None, typer.Option(help="The first dealer (default: cut).")] = None,
    visibility: Annotated[
        str | None,
        typer.Option(help="public or private (default: private when the server has keys)."),
    ] = None,
    seating: Annotated[
        str | None, typer.Option(help="platform (the platform seats) or open (anyone sits).")
    ] = None,
    url: Url = DEFAULT_URL,
    api_key: ApiKey = None,
) -> None:
    """Create a game and print its id."""

    async def create() -> PublicState:
        async with SpadesClient(url, api_key=api_key) as client:
            return await client.create_game(
                _rules(preset, rules), dealer=dealer, visibility=visibility, seating=seating
            )

    typer.echo(_run(url, create()).game_id)


@app.command("sit")
def sit(
    game_id: Annotated[str, typer.Argument(help="The game.")],
    player: Annotated[str, typer.Option("--player", help="Your name at the table.")],
    seat: Annotated[int | None, typer.Option(help="The seat (default: the first free).")] = None,
    url: Url = DEFAULT_URL,
    api_key: ApiKey = None,
) -> None:
    """Take a seat (a platform's key seats its user); print the seat number and its token, on
    one line."""

    async def take() -> tuple[int, str]:
        async with SpadesClient(url, api_key=api_key) as client:
            taken = await client.take_seat(game_id, player, seat)
            return taken.seat, taken.token

    number, token = _run(url, take())
    typer.echo(f"{number} {token}")


@app.command("play")
def play(
    game_id: Annotated[str, typer.Argument(help="The game.")],
    token: Annotated[
        str, typer.Option("--token", envvar="SPADES_TOKEN", help="Your seat token (`spades sit`).")
    ],
    url: Url = DEFAULT_URL,
) -> None:
    """Play your seat: the table, your hand, and your legal moves to choose from."""
    console = Console()

    async def session() -> SeatView:
        async with SpadesClient(url) as client:
            return await play_game(client, game_id, token, PromptChooser(console), console)

    _run(url, session())


@app.command("watch")
def watch(
    game_id: Annotated[str, typer.Argument(help="The game.")],
    token: Annotated[
        str | None,
        typer.Option("--token", envvar="SPADES_TOKEN", help="Watch as this seat (its cards too)."),
    ] = None,
    url: Url = DEFAULT_URL,
    api_key: ApiKey = None,
) -> None:
    """Follow a game as it is played, until it ends (a private game: with its platform's key,
    or a seat's token)."""
    console = Console()

    async def follow() -> PublicState:
        async with SpadesClient(url, api_key=api_key) as client:
            if not console.is_terminal:
                return await watch_game(client, game_id, token, console.print)
            with Live(console=console, auto_refresh=False) as live:
                return await watch_game(
                    client, game_id, token, lambda table: live.update(table, refresh=True)
                )

    final = _run(url, follow())
    console.print(final_words(final))
