"""A2A echo agent on the official Python SDK, protocol 0.3 (PyPI a2a-sdk 0.3.26, JSON-RPC binding).

Run with `.peers/venv-a2a03/bin/python` (scripts/install-peers.sh installs it):

    a2a_echo_v03.py --port N [--card legacy] [--token T] [--no-streaming] [--rpc-path /a2a]

Listens on 127.0.0.1:N only. The card is at /.well-known/agent-card.json and (the SDK's own
backward-compatibility route) /.well-known/agent.json; with `--card legacy` only at
/.well-known/agent.json (agent-card.json then answers 404). The JSON-RPC endpoint is POST
`--rpc-path` (default `/`), and the card's `url` points to it. `--token T` requires
`Authorization: Bearer T` on every POST and on GET /agent/authenticatedExtendedCard (HTTP 401
otherwise), declares a bearer scheme in the card (`securitySchemes` + `security`) and sets
`supportsAuthenticatedExtendedCard`: the extended card (JSON-RPC method
`agent/getAuthenticatedExtendedCard`, or GET /agent/authenticatedExtendedCard) has an extra skill
`secret`. 0.3 has no version header; the agent ignores `A2A-Version`.

Behaviour: the same as a2a_echo_v1.py (see there), with 0.3 wire shapes (`kind` on parts,
lower-case kebab enum values, `message/send`, `tasks/get`, ...). The `shout` skill is chosen by
metadata `skill` (or `skillId`) = "shout" on the message or on the request params.

Every HTTP request prints one stderr line:
  A2A-REQ <METHOD> <path> rpc=<json-rpc method|-> a2a-version=<header|-> auth=<yes|no>
  traceparent=<header|->
and `READY <port>` goes to stdout once the socket listens.
"""

import argparse
import base64
import asyncio
import json
import sys

import uvicorn
from starlette.applications import Starlette

from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.apps import A2AStarletteApplication
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentSkill,
    DataPart,
    FilePart,
    FileWithBytes,
    HTTPAuthSecurityScheme,
    Part,
    SecurityScheme,
    TaskState,
    TextPart,
)
from a2a.utils import new_agent_text_message, new_task

# A 1x1 PNG.
DOT_PNG = bytes.fromhex(
    '89504e470d0a1a0a0000000d4948445200000001000000010806000000'
    '1f15c4890000000d49444154789c6360f8cf000000030101003c2c7b6f'
    '0000000049454e44ae426082'
)


def first_text(message):
    for part in message.parts:
        if isinstance(part.root, TextPart):
            return part.root.text
    return None


def data_parts(message):
    return [Part(root=DataPart(data=p.root.data)) for p in message.parts if isinstance(p.root, DataPart)]


def new_text_part(text):
    return Part(root=TextPart(text=text))


def shouted(s, shout):
    return s.upper() if shout else s


def wants_shout(message, context):
    """The `shout` skill: metadata `skill` (or `skillId`) = "shout" on the message or the request."""
    for meta in (message.metadata or {}, context.metadata or {}):
        if meta.get('skill') == 'shout' or meta.get('skillId') == 'shout':
            return True
    return False


class EchoExecutor(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue) -> None:
        message = context.message
        text = first_text(message)
        data = data_parts(message)
        task = context.current_task
        shout = wants_shout(message, context)

        def tp(s):
            return new_text_part(shouted(s, shout))

        if task is None and text is not None and (text == 'message' or text.startswith('message ')):
            await event_queue.enqueue_event(
                new_agent_text_message(
                    shouted('echo: ' + text[len('message'):].strip(), shout),
                    context_id=context.context_id,
                )
            )
            return

        if task is None:
            task = new_task(message)
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)

        def agent_text(s):
            return updater.new_agent_message([tp(s)])

        if task.status.state == TaskState.input_required:
            await updater.add_artifact([tp(f'city: {text or ""}')], name='echo')
            await updater.complete()
            return

        words = (text or '').split()
        command = words[0] if words else ''
        if command == 'fail':
            await updater.failed(agent_text('cannot do that'))
        elif command == 'reject':
            await updater.reject(agent_text('not my job'))
        elif command == 'canceled':
            await updater.start_work()
            await updater.cancel(agent_text('canceled by the agent'))
        elif command == 'ask':
            await updater.requires_input(agent_text('Which city?'), final=True)
        elif command == 'auth':
            await updater.requires_auth(agent_text('Please sign in'), final=True)
        elif command == 'stream':
            await updater.start_work()
            chunks = words[1:] or ['']
            for i, word in enumerate(chunks):
                await asyncio.sleep(0.05)
                await updater.add_artifact(
                    [tp(word if i == 0 else ' ' + word)],
                    artifact_id='stream-1',
                    name='stream',
                    append=i > 0,
                    last_chunk=i == len(chunks) - 1,
                )
            await updater.complete()
        elif command == 'slow':
            ms = int(words[1]) if len(words) > 1 and words[1].isdigit() else 1000
            await updater.start_work()
            try:
                await asyncio.sleep(ms / 1000)
            except asyncio.CancelledError:
                # a2a-sdk 0.3 quirk: tasks/cancel publishes the canceled status on a tapped child
                # queue only, so a caller streaming (or blocking on) this request never sees it
                # and its stream never ends. Publish it on this request's queue too.
                await updater.cancel()
                return
            await updater.add_artifact([tp('done')], name='echo')
            await updater.complete()
        elif command == 'files':
            await updater.add_artifact(
                [
                    Part(
                        root=FilePart(
                            file=FileWithBytes(
                                bytes=base64.b64encode(DOT_PNG).decode(),
                                mime_type='image/png',
                                name='dot.png',
                            )
                        )
                    ),
                    Part(root=DataPart(data={'ok': True})),
                ],
                name='files',
            )
            await updater.complete()
        else:
            parts = []
            if text is not None:
                parts.append(tp(f'echo: {text}'))
            parts.extend(data)
            await updater.add_artifact(parts or [tp('echo: ')], name='echo')
            await updater.complete()

    async def cancel(self, context: RequestContext, event_queue) -> None:
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        await updater.cancel()


class Gate:
    """ASGI middleware: logs every request, and checks the bearer token on POSTs."""

    def __init__(self, app, token):
        self.app = app
        self.token = token

    async def __call__(self, scope, receive, send):
        if scope['type'] != 'http':
            return await self.app(scope, receive, send)
        headers = {k.decode('latin-1').lower(): v.decode('latin-1') for k, v in scope['headers']}
        buffered = []
        body = b''
        if scope['method'] == 'POST':
            while True:
                event = await receive()
                buffered.append(event)
                if event['type'] != 'http.request':
                    break
                body += event.get('body', b'')
                if not event.get('more_body', False):
                    break
        rpc = '-'
        try:
            parsed = json.loads(body) if body else None
            if isinstance(parsed, dict) and isinstance(parsed.get('method'), str):
                rpc = parsed['method']
        except ValueError:
            pass
        print(
            f"A2A-REQ {scope['method']} {scope['path']} rpc={rpc} "
            f"a2a-version={headers.get('a2a-version', '-')} "
            f"auth={'yes' if 'authorization' in headers else 'no'} "
            f"traceparent={headers.get('traceparent', '-')}",
            file=sys.stderr,
            flush=True,
        )
        if (
            self.token
            and (scope['method'] == 'POST' or scope['path'] == '/agent/authenticatedExtendedCard')
            and headers.get('authorization') != f'Bearer {self.token}'
        ):
            payload = json.dumps({'error': 'missing or wrong bearer token'}).encode()
            await send(
                {
                    'type': 'http.response.start',
                    'status': 401,
                    'headers': [
                        (b'content-type', b'application/json'),
                        (b'www-authenticate', b'Bearer'),
                        (b'content-length', str(len(payload)).encode()),
                    ],
                }
            )
            await send({'type': 'http.response.body', 'body': payload})
            return

        async def replay():
            if buffered:
                return buffered.pop(0)
            return await receive()

        await self.app(scope, replay, send)


def skill(skill_id, name, description):
    return AgentSkill(
        id=skill_id,
        name=name,
        description=description,
        tags=['test', 'echo'],
        examples=['hello'],
    )


def build_card(args, extended=False):
    skills = [
        skill('echo', 'Echo', 'Echoes the message back (see the header of a2a_echo_v1.py).'),
        skill('shout', 'Shout', 'Same behaviour as echo, uppercased.'),
    ]
    if extended:
        skills.append(skill('secret', 'Secret', 'Only in the authenticated extended card.'))
    card = AgentCard(
        name='Echo',
        description='A2A echo agent for toolgate tests (a2a-sdk 0.3.26, protocol 0.3).',
        version='1.0.0',
        url=f'http://127.0.0.1:{args.port}{args.rpc_path}',
        preferred_transport='JSONRPC',
        protocol_version='0.3.0',
        capabilities=AgentCapabilities(streaming=not args.no_streaming, push_notifications=False),
        default_input_modes=['text/plain', 'application/json'],
        default_output_modes=['text/plain', 'application/json'],
        skills=skills,
    )
    if args.token:
        card.security_schemes = {
            'bearer': SecurityScheme(
                root=HTTPAuthSecurityScheme(
                    scheme='Bearer', description='Authorization: Bearer <token>'
                )
            )
        }
        card.security = [{'bearer': []}]
        card.supports_authenticated_extended_card = True
    return card


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--port', type=int, required=True)
    parser.add_argument('--card', choices=['current', 'legacy'], default='current')
    parser.add_argument('--token')
    parser.add_argument('--no-streaming', action='store_true')
    parser.add_argument('--rpc-path', default='/')
    args = parser.parse_args()

    card = build_card(args)
    handler = DefaultRequestHandler(agent_executor=EchoExecutor(), task_store=InMemoryTaskStore())
    a2a_app = A2AStarletteApplication(
        agent_card=card,
        http_handler=handler,
        extended_agent_card=build_card(args, extended=True) if args.token else None,
    )
    card_path = '/.well-known/agent.json' if args.card == 'legacy' else '/.well-known/agent-card.json'
    app = Gate(a2a_app.build(agent_card_url=card_path, rpc_url=args.rpc_path), args.token)
    config = uvicorn.Config(app, host='127.0.0.1', port=args.port, log_level='warning')
    server = uvicorn.Server(config)

    async def serve():
        task = asyncio.create_task(server.serve())
        while not server.started:
            if task.done():
                await task
                sys.exit(1)
            await asyncio.sleep(0.02)
        print(f'READY {args.port}', flush=True)
        await task

    asyncio.run(serve())


if __name__ == '__main__':
    main()
