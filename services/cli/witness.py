"""``spades witness ...``: a witness of the audit logs, run with a key of its own."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

app = typer.Typer(no_args_is_help=True, help="Witness audit logs (C2SP tlog-witness).")


@app.command("keys")
def keys(
    name: Annotated[str, typer.Argument(help="The witness's name, e.g. witness.example.org.")],
    key_file: Annotated[Path, typer.Option("--out", help="Where to keep the private key.")],
) -> None:
    """Make the witness's key once (an existing key is kept): the private key in ``--out``
    (mode 0600), the public key printed, for the logs and their readers."""
    from services.transparency.note import COSIGNATURE, Signer

    if key_file.exists():
        signer = Signer.parse(key_file.read_text())
    else:
        signer = Signer.generate(name, COSIGNATURE)
        descriptor = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w") as file:
            file.write(signer.text() + "\n")
    typer.echo(signer.verifier.text())


@app.command("serve")
def serve(
    key_file: Annotated[Path, typer.Option("--key", help="The witness's private key file.")],
    logs: Annotated[
        list[str], typer.Option("--log", help="A log's public key (repeat for each log).")
    ],
    state: Annotated[Path, typer.Option(help="Where the witness keeps what it cosigned.")],
    host: Annotated[str, typer.Option(help="The address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="The port to listen on.")] = 8010,
) -> None:
    """Cosign the logs' checkpoints that extend the last one cosigned, over HTTP
    (``POST /add-checkpoint``)."""
    import uvicorn

    from services.transparency.note import NoteError, Signer, Verifier
    from services.witness.app import witness_app
    from services.witness.state import WitnessState

    try:
        witness = Signer.parse(key_file.read_text())
        verifiers = [Verifier.parse(log) for log in logs]
    except (OSError, NoteError) as error:
        raise typer.BadParameter(str(error)) from error
    app = witness_app(witness, verifiers, WitnessState(state))
    uvicorn.run(app, host=host, port=port, log_level="warning")
