"""The a2a-sdk Python client (PyPI a2a-sdk 1.3, `a2a.client`) calling an A2A 1.0 echo agent.

The baseline of benches/benches/a2a.rs: the same call toolgate makes for `echo1.echo`
{"text": "hello"}: a blocking, non-streaming `SendMessage` whose message is one text part
"hello" with metadata {"skill": "echo"}, answered with a completed task whose artifact is
`echo: hello` (runtime/tests/peers/a2a_echo_v1.py). One client (`create_client`: the card
fetched once, one httpx.AsyncClient and its connection pool), `ClientConfig(streaming=False)`;
every answer is checked.

Run with `.peers/venv-a2a/bin/python`:

    a2a_client_bench.py URL [--sequential N] [--concurrent N] [--callers 16] [--warmup N]
        prints one JSON object: {"sdk": "1.3.0", "python": "3.x", "sequential": RESULT,
        "concurrent": RESULT}, RESULT = {"callers", "calls", "wall_s", "cpu_s", "calls_per_s",
        "p50_us", "p99_us"} (cpu_s: this process's CPU time)

    a2a_client_bench.py URL --stdin
        prints `READY {"sdk": …, "python": …}`, then for every line {"callers": C, "calls": N} on
        stdin makes N calls with C callers at once (N / C each, in a row) and prints one line
        RESULT plus "latencies_us" (every call's latency); EOF ends it. benches/benches/a2a.rs
        drives it this way, so that its rounds interleave with toolgate's.
"""

import argparse
import asyncio
import json
import platform
import sys
import time
import uuid
from importlib.metadata import version

from a2a.client import ClientConfig, create_client
from a2a.types.a2a_pb2 import (
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    TaskState,
)

TEXT = 'hello'
EXPECTED = 'echo: hello'


def request():
    message = Message(
        role=Role.ROLE_USER,
        message_id=str(uuid.uuid4()),
        parts=[Part(text=TEXT)],
    )
    message.metadata.update({'skill': 'echo'})
    return SendMessageRequest(
        message=message,
        configuration=SendMessageConfiguration(return_immediately=False),
    )


async def call(client):
    answers = [r async for r in client.send_message(request())]
    if len(answers) != 1 or not answers[0].HasField('task'):
        raise SystemExit(f'expected one task, got {answers!r}')
    task = answers[0].task
    if task.status.state != TaskState.TASK_STATE_COMPLETED:
        raise SystemExit(f'task not completed: {task!r}')
    text = '\n'.join(p.text for a in task.artifacts for p in a.parts if p.HasField('text'))
    if text != EXPECTED:
        raise SystemExit(f'answer {text!r}, expected {EXPECTED!r}')


async def run(client, callers, calls):
    per_caller = -(-calls // callers)
    latencies = []

    async def caller():
        for _ in range(per_caller):
            t = time.perf_counter()
            await call(client)
            latencies.append(time.perf_counter() - t)

    cpu = time.process_time()
    started = time.perf_counter()
    await asyncio.gather(*(caller() for _ in range(callers)))
    wall = time.perf_counter() - started
    cpu = time.process_time() - cpu
    ordered = sorted(latencies)

    def pct(p):
        rank = max(1, min(len(ordered), -(-int(p * len(ordered)) // 100)))
        return ordered[rank - 1] * 1e6

    return {
        'callers': callers,
        'calls': len(latencies),
        'wall_s': wall,
        'cpu_s': cpu,
        'calls_per_s': len(latencies) / wall,
        'p50_us': pct(50),
        'p99_us': pct(99),
    }, [round(x * 1e6, 1) for x in latencies]


def facts():
    return {'sdk': version('a2a-sdk'), 'python': platform.python_version()}


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('url', help='the agent (its card is at URL/.well-known/agent-card.json)')
    parser.add_argument('--sequential', type=int, default=2000)
    parser.add_argument('--concurrent', type=int, default=4000)
    parser.add_argument('--callers', type=int, default=16)
    parser.add_argument('--warmup', type=int, default=200)
    parser.add_argument('--stdin', action='store_true', help='take commands on stdin')
    args = parser.parse_args()

    client = await create_client(args.url, client_config=ClientConfig(streaming=False))
    try:
        if args.stdin:
            print('READY ' + json.dumps(facts()), flush=True)
            loop = asyncio.get_running_loop()
            while True:
                line = await loop.run_in_executor(None, sys.stdin.readline)
                if not line:
                    break
                command = json.loads(line)
                result, latencies = await run(client, command['callers'], command['calls'])
                result['latencies_us'] = latencies
                print(json.dumps(result), flush=True)
        else:
            await run(client, 1, args.warmup)
            sequential, _ = await run(client, 1, args.sequential)
            await run(client, args.callers, args.warmup)
            concurrent, _ = await run(client, args.callers, args.concurrent)
            print(json.dumps({**facts(), 'sequential': sequential, 'concurrent': concurrent}))
    finally:
        await client.close()


if __name__ == '__main__':
    asyncio.run(main())
