"""A2A echo agent on the official Python SDK, protocol 1.0 (PyPI a2a-sdk 1.3.0, JSON-RPC binding).

Run with `.peers/venv-a2a/bin/python` (scripts/install-peers.sh installs it):

    a2a_echo_v1.py --port N [--card legacy] [--token T] [--no-streaming] [--rpc-path /a2a]
                   [--refuse-first N]

Listens on 127.0.0.1:N only. The card is at /.well-known/agent-card.json (the SDK's path), or
with `--card legacy` only at /.well-known/agent.json (agent-card.json then answers 404). The
JSON-RPC endpoint is POST `--rpc-path` (default `/`), and the card's `supportedInterfaces[0].url`
points to it. `--token T` requires `Authorization: Bearer T` on every POST (HTTP 401 otherwise),
declares a bearer scheme in the card and serves an extended card (method GetExtendedAgentCard)
with an extra skill `secret`. `--refuse-first N` answers the first N POSTs with HTTP 401
(`WWW-Authenticate: Bearer error="invalid_token"`) whatever they carry, as a server would that
revoked the token it was sent. The SDK itself checks the `A2A-Version` header (missing = 0.3,
which it rejects).

Behaviour, by the first text part of the incoming message (a message with only a data part
echoes the data):
  message <rest>  a bare Message `echo: <rest>` (no task)
  fail            task failed, status message "cannot do that"
  reject          task rejected, status message "not my job"
  canceled        the task cancels itself
  ask             task input-required "Which city?"; the follow-up (same taskId) completes with
                  an artifact `city: <reply>`
  auth            task auth-required "Please sign in"
  stream a b c    working, then artifact "stream-1" in chunks, one word per chunk ("a", " b",
                  " c"; append after the first, lastChunk on the last), 50 ms apart, completed
  slow <ms>       working for <ms> ms, then completed with artifact text "done"; CancelTask
                  cancels it at once
  files           completed with an artifact holding a file part (raw bytes, image/png,
                  "dot.png") and a data part {"ok": true}
  headers         completed with artifact "headers": the request's HTTP headers as JSON
  fail-headers    task failed, status message "you sent <the request's headers as JSON>"
  anything else   completed with artifact "echo" = text `echo: <text>` (plus the data part, if
                  the message had one)
The `shout` skill behaves the same with every text uppercased; a caller picks it with metadata
`{"skill": "shout"}` (or `skillId`) on the message or on the request params (A2A has no standard
field naming the skill a message is for).

Every HTTP request prints one stderr line:
  A2A-REQ <METHOD> <path> rpc=<json-rpc method|-> a2a-version=<header|-> auth=<yes|no>
  traceparent=<header|-> jwt-claims=<the claims part of a bearer JWT, base64url|->
  tracestate=<header|->
and `READY <port>` goes to stdout once the socket listens.
"""

import argparse
import asyncio
import json
import sys

import uvicorn
from starlette.applications import Starlette

from a2a.helpers import (
    new_raw_part,
    new_task_from_user_message,
    new_text_message,
    new_text_part,
    new_data_part,
)
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    HTTPAuthSecurityScheme,
    Part,
    SecurityRequirement,
    SecurityScheme,
    StringList,
    TaskState,
)

# A 1x1 PNG.
DOT_PNG = bytes.fromhex(
    '89504e470d0a1a0a0000000d4948445200000001000000010806000000'
    '1f15c4890000000d49444154789c6360f8cf000000030101003c2c7b6f'
    '0000000049454e44ae426082'
)


def first_text(message):
    for part in message.parts:
        if part.HasField('text'):
            return part.text
    return None


def data_parts(message):
    return [Part(data=part.data) for part in message.parts if part.HasField('data')]


def shouted(s, shout):
    return s.upper() if shout else s


def wants_shout(message, context):
    """The `shout` skill: metadata `skill` (or `skillId`) = "shout" on the message or the request."""
    for meta in (dict(message.metadata), context.metadata or {}):
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
                new_text_message(
                    shouted('echo: ' + text[len('message'):].strip(), shout),
                    context_id=context.context_id,
                )
            )
            return

        if task is None:
            task = new_task_from_user_message(message)
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)

        def agent_text(s):
            return updater.new_agent_message([tp(s)])

        if task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED:
            await updater.add_artifact([tp(f'city: {text or ""}')], name='echo')
            await updater.complete()
            return

        words = (text or '').split()
        command = words[0] if words else ''
        sent = json.dumps(context.call_context.state.get('headers', {})) if context.call_context else '{}'
        if command == 'fail':
            await updater.failed(agent_text('cannot do that'))
        elif command == 'headers':
            await updater.add_artifact([new_text_part(sent)], name='headers')
            await updater.complete()
        elif command == 'fail-headers':
            await updater.failed(agent_text('you sent ' + sent))
        elif command == 'reject':
            await updater.reject(agent_text('not my job'))
        elif command == 'canceled':
            await updater.start_work()
            await updater.cancel(agent_text('canceled by the agent'))
        elif command == 'ask':
            await updater.requires_input(agent_text('Which city?'))
        elif command == 'auth':
            await updater.requires_auth(agent_text('Please sign in'))
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
            await asyncio.sleep(ms / 1000)
            await updater.add_artifact([tp('done')], name='echo')
            await updater.complete()
        elif command == 'files':
            await updater.add_artifact(
                [
                    new_raw_part(DOT_PNG, media_type='image/png', filename='dot.png'),
                    new_data_part({'ok': True}),
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


def jwt_claims(authorization):
    """The claims part (base64url) of a bearer JWT, or `-`: what a token said, not the token."""
    parts = authorization.removeprefix('Bearer ').split('.')
    return parts[1] if authorization.startswith('Bearer ') and len(parts) == 3 else '-'


class Gate:
    """ASGI middleware: logs every request, and checks the bearer token on POSTs."""

    def __init__(self, app, token, refuse_first=0):
        self.app = app
        self.token = token
        self.refuse_first = refuse_first

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
            f"traceparent={headers.get('traceparent', '-')} "
            f"jwt-claims={jwt_claims(headers.get('authorization', ''))} "
            f"tracestate={headers.get('tracestate', '-')}",
            file=sys.stderr,
            flush=True,
        )
        refuse = scope['method'] == 'POST' and self.refuse_first > 0
        if refuse:
            self.refuse_first -= 1
        if refuse or (
            self.token
            and scope['method'] == 'POST'
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
        description='A2A echo agent for toolgate tests (a2a-sdk 1.3.0, protocol 1.0).',
        version='1.0.0',
        supported_interfaces=[
            AgentInterface(
                url=f'http://127.0.0.1:{args.port}{args.rpc_path}',
                protocol_binding='JSONRPC',
                protocol_version='1.0',
            )
        ],
        capabilities=AgentCapabilities(
            streaming=not args.no_streaming,
            push_notifications=False,
            extended_agent_card=bool(args.token),
        ),
        default_input_modes=['text/plain', 'application/json'],
        default_output_modes=['text/plain', 'application/json'],
        skills=skills,
    )
    if args.token:
        card.security_schemes['bearer'].CopyFrom(
            SecurityScheme(
                http_auth_security_scheme=HTTPAuthSecurityScheme(
                    scheme='Bearer', description='Authorization: Bearer <token>'
                )
            )
        )
        card.security_requirements.append(
            SecurityRequirement(schemes={'bearer': StringList(list=[])})
        )
    return card


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--port', type=int, required=True)
    parser.add_argument('--card', choices=['current', 'legacy'], default='current')
    parser.add_argument('--token')
    parser.add_argument('--no-streaming', action='store_true')
    parser.add_argument('--rpc-path', default='/')
    parser.add_argument('--refuse-first', type=int, default=0)
    args = parser.parse_args()

    card = build_card(args)
    handler = DefaultRequestHandler(
        agent_executor=EchoExecutor(),
        task_store=InMemoryTaskStore(),
        agent_card=card,
        extended_agent_card=build_card(args, extended=True) if args.token else None,
    )
    card_path = '/.well-known/agent.json' if args.card == 'legacy' else '/.well-known/agent-card.json'
    routes = create_agent_card_routes(card, card_url=card_path) + create_jsonrpc_routes(
        handler, rpc_url=args.rpc_path
    )
    app = Gate(Starlette(routes=routes), args.token, args.refuse_first)

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
