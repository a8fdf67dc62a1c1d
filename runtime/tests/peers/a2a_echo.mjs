// A2A echo agent on the official JavaScript SDK (npm @a2a-js/sdk 1.3.0 + express 5), an
// implementation independent of the Python SDK. @a2a-js/sdk 1.x speaks A2A protocol **1.0**
// (JSON-RPC binding here: methods SendMessage / SendStreamingMessage / GetTask / CancelTask /
// GetExtendedAgentCard ..., `A2A-Version: 1.0` header, ROLE_* / TASK_STATE_* enums, parts without
// `kind`). Its v0.3 compatibility layer is not enabled.
//
// Run with the system node (>= 20), modules resolved from .peers/node_modules (installed by
// scripts/install-peers.sh):
//
//   node a2a_echo.mjs --port N [--card legacy] [--token T] [--no-streaming] [--rpc-path /a2a]
//
// Listens on 127.0.0.1:N only. The card is at /.well-known/agent-card.json, or with
// `--card legacy` only at /.well-known/agent.json (agent-card.json then answers 404). JSON-RPC is
// POST `--rpc-path` (default `/`), and the card's `supportedInterfaces[0].url` points to it.
// `--token T` requires `Authorization: Bearer T` on every POST (HTTP 401 otherwise), declares a
// bearer scheme in the card and serves an extended card (GetExtendedAgentCard) with an extra
// skill `secret`. `--no-streaming` sets capabilities.streaming false.
//
// Behaviour: the same as runtime/tests/peers/a2a_echo_v1.py (message / fail / reject / canceled /
// ask / auth / stream / slow / files / default echo; `shout` = metadata skill "shout").
//
// Every HTTP request prints one stderr line:
//   A2A-REQ <METHOD> <path> rpc=<json-rpc method|-> a2a-version=<header|-> auth=<yes|no>
//   traceparent=<header|->
// and `READY <port>` goes to stdout once the socket listens.

import { createRequire } from 'node:module';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

// Resolve the SDK from <repo>/.peers/node_modules (this file lives in runtime/tests/peers/).
const here = path.dirname(fileURLToPath(import.meta.url));
const peersModules = path.resolve(here, '../../../.peers/node_modules');
const require = createRequire(path.join(peersModules, 'noop.js'));
const express = require('express');
const { AgentCard, TaskState, Role } = require('@a2a-js/sdk');
const { DefaultRequestHandler, InMemoryTaskStore, AgentEvent } = require('@a2a-js/sdk/server');
const {
  agentCardHandler,
  jsonRpcHandler,
  UserBuilder,
} = require('@a2a-js/sdk/server/express');

function parseArgs(argv) {
  const args = { port: 0, card: 'current', token: null, streaming: true, rpcPath: '/' };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--port') args.port = Number(argv[++i]);
    else if (a === '--card') args.card = argv[++i];
    else if (a === '--token') args.token = argv[++i];
    else if (a === '--no-streaming') args.streaming = false;
    else if (a === '--rpc-path') args.rpcPath = argv[++i];
    else {
      console.error(`unknown argument ${a}`);
      process.exit(2);
    }
  }
  if (!args.port) {
    console.error('--port N is required');
    process.exit(2);
  }
  return args;
}

const args = parseArgs(process.argv.slice(2));

// A 1x1 PNG.
const DOT_PNG = Buffer.from(
  '89504e470d0a1a0a0000000d4948445200000001000000010806000000' +
    '1f15c4890000000d49444154789c6360f8cf000000030101003c2c7b6f' +
    '0000000049454e44ae426082',
  'hex',
);

function skill(id, name, description) {
  return { id, name, description, tags: ['test', 'echo'], examples: ['hello'] };
}

// The card in its wire (JSON) form, converted to the SDK's internal form with AgentCard.fromJSON.
function buildCard(extended) {
  const skills = [
    skill('echo', 'Echo', 'Echoes the message back (see the header of a2a_echo.mjs).'),
    skill('shout', 'Shout', 'Same behaviour as echo, uppercased.'),
  ];
  if (extended) skills.push(skill('secret', 'Secret', 'Only in the authenticated extended card.'));
  const card = {
    name: 'Echo',
    description: 'A2A echo agent for toolgate tests (@a2a-js/sdk 1.3.0, protocol 1.0).',
    supportedInterfaces: [
      {
        url: `http://127.0.0.1:${args.port}${args.rpcPath}`,
        protocolBinding: 'JSONRPC',
        protocolVersion: '1.0',
      },
    ],
    version: '1.0.0',
    capabilities: {
      streaming: args.streaming,
      pushNotifications: false,
      extendedAgentCard: Boolean(args.token),
    },
    defaultInputModes: ['text/plain', 'application/json'],
    defaultOutputModes: ['text/plain', 'application/json'],
    skills,
  };
  if (args.token) {
    card.securitySchemes = {
      bearer: {
        httpAuthSecurityScheme: { scheme: 'Bearer', description: 'Authorization: Bearer <token>' },
      },
    };
    card.securityRequirements = [{ schemes: { bearer: { list: [] } } }];
  }
  return AgentCard.fromJSON(card);
}

// ---- parts / events ---------------------------------------------------------------------------

const textPart = (text) => ({
  content: { $case: 'text', value: text },
  metadata: undefined,
  filename: '',
  mediaType: '',
});

const now = () => new Date().toISOString();

function agentMessage(taskId, contextId, text) {
  return {
    messageId: randomUUID(),
    contextId,
    taskId,
    role: Role.ROLE_AGENT,
    parts: [textPart(text)],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

class EchoExecutor {
  constructor() {
    // taskId -> { canceled: boolean, wake: () => void }
    this.running = new Map();
  }

  async execute(ctx, bus) {
    const message = ctx.userMessage;
    const { taskId, contextId } = ctx;
    const textPartIn = message.parts.find((p) => p.content?.$case === 'text');
    const text = textPartIn ? textPartIn.content.value : null;
    const dataParts = message.parts.filter((p) => p.content?.$case === 'data');
    const meta = { ...(ctx.request?.metadata || {}), ...(message.metadata || {}) };
    const shout = meta.skill === 'shout' || meta.skillId === 'shout';
    const say = (s) => (shout ? s.toUpperCase() : s);
    const tp = (s) => textPart(say(s));

    let task = ctx.task;
    if (!task && text !== null && (text === 'message' || text.startsWith('message '))) {
      bus.publish(
        AgentEvent.message({
          ...agentMessage('', contextId, say('echo: ' + text.slice('message'.length).trim())),
          taskId: '',
        }),
      );
      bus.finished();
      return;
    }

    const status = (state, text_) =>
      bus.publish(
        AgentEvent.statusUpdate({
          taskId,
          contextId,
          status: {
            state,
            message: text_ === undefined ? undefined : agentMessage(taskId, contextId, say(text_)),
            timestamp: now(),
          },
          metadata: undefined,
        }),
      );
    const artifact = (parts, { id = randomUUID(), name = 'echo', append = false, lastChunk = false } = {}) =>
      bus.publish(
        AgentEvent.artifactUpdate({
          taskId,
          contextId,
          artifact: { artifactId: id, name, description: '', parts, metadata: undefined, extensions: [] },
          append,
          lastChunk,
          metadata: undefined,
        }),
      );

    const followUp = task && task.status?.state === TaskState.TASK_STATE_INPUT_REQUIRED;
    if (!task) {
      task = {
        id: taskId,
        contextId,
        status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: now() },
        artifacts: [],
        history: [message],
        metadata: undefined,
      };
    }
    // Every execution starts with the task, follow-ups too: the SDK refuses a streamed
    // artifact-update that comes before any Task event.
    bus.publish(AgentEvent.task(task));

    const words = (text || '').split(/\s+/).filter(Boolean);
    const command = followUp ? '' : words[0] || '';
    try {
      if (followUp) {
        artifact([tp(`city: ${text || ''}`)]);
        status(TaskState.TASK_STATE_COMPLETED);
      } else if (command === 'fail') {
        status(TaskState.TASK_STATE_FAILED, 'cannot do that');
      } else if (command === 'reject') {
        status(TaskState.TASK_STATE_REJECTED, 'not my job');
      } else if (command === 'canceled') {
        status(TaskState.TASK_STATE_WORKING);
        status(TaskState.TASK_STATE_CANCELED, 'canceled by the agent');
      } else if (command === 'ask') {
        status(TaskState.TASK_STATE_INPUT_REQUIRED, 'Which city?');
      } else if (command === 'auth') {
        status(TaskState.TASK_STATE_AUTH_REQUIRED, 'Please sign in');
      } else if (command === 'stream') {
        status(TaskState.TASK_STATE_WORKING);
        const chunks = words.slice(1).length ? words.slice(1) : [''];
        for (let i = 0; i < chunks.length; i++) {
          await sleep(50);
          artifact([tp(i === 0 ? chunks[i] : ' ' + chunks[i])], {
            id: 'stream-1',
            name: 'stream',
            append: i > 0,
            lastChunk: i === chunks.length - 1,
          });
        }
        status(TaskState.TASK_STATE_COMPLETED);
      } else if (command === 'slow') {
        const ms = /^\d+$/.test(words[1] || '') ? Number(words[1]) : 1000;
        status(TaskState.TASK_STATE_WORKING);
        const run = { canceled: false, wake: () => {} };
        this.running.set(taskId, run);
        await new Promise((resolve) => {
          const timer = setTimeout(resolve, ms);
          run.wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        this.running.delete(taskId);
        if (run.canceled) {
          status(TaskState.TASK_STATE_CANCELED);
        } else {
          artifact([tp('done')]);
          status(TaskState.TASK_STATE_COMPLETED);
        }
      } else if (command === 'files') {
        artifact(
          [
            {
              content: { $case: 'raw', value: DOT_PNG },
              metadata: undefined,
              filename: 'dot.png',
              mediaType: 'image/png',
            },
            { content: { $case: 'data', value: { ok: true } }, metadata: undefined, filename: '', mediaType: '' },
          ],
          { name: 'files' },
        );
        status(TaskState.TASK_STATE_COMPLETED);
      } else {
        const parts = [];
        if (text !== null) parts.push(tp(`echo: ${text}`));
        parts.push(...dataParts);
        artifact(parts.length ? parts : [tp('echo: ')]);
        status(TaskState.TASK_STATE_COMPLETED);
      }
    } finally {
      bus.finished();
    }
  }

  async cancelTask(taskId, bus) {
    const run = this.running.get(taskId);
    if (run) {
      // The running execute() publishes the canceled status and finishes the bus.
      run.canceled = true;
      run.wake();
      return;
    }
    bus.publish(
      AgentEvent.statusUpdate({
        taskId,
        contextId: '',
        status: { state: TaskState.TASK_STATE_CANCELED, message: undefined, timestamp: now() },
        metadata: undefined,
      }),
    );
    bus.finished();
  }
}

// ---- HTTP ---------------------------------------------------------------------------------------

const card = buildCard(false);
const requestHandler = new DefaultRequestHandler(
  card,
  new InMemoryTaskStore(),
  new EchoExecutor(),
  undefined,
  undefined,
  undefined,
  args.token ? buildCard(true) : undefined,
);

// The extended card goes to authenticated users only (a static extended card is the SDK's
// `context.user.isAuthenticated` case); the gate below has already checked the token.
const userBuilder = async (req) =>
  args.token && req.get('authorization') === `Bearer ${args.token}`
    ? { isAuthenticated: true, userName: 'bearer' }
    : UserBuilder.noAuthentication();

const app = express();

// Log every request and check the bearer token. The JSON-RPC method is read by watching the body go
// past (a spy on the request's `emit`) while the SDK's own express.json() consumes it, so the SDK
// still does all the parsing and answers parse errors itself.
app.use((req, res, next) => {
  const reqPath = req.path; // before a mounted router rewrites it
  let logged = false;
  const log = (rpc) => {
    if (logged) return;
    logged = true;
    console.error(
      `A2A-REQ ${req.method} ${reqPath} rpc=${rpc} a2a-version=${req.get('a2a-version') ?? '-'} ` +
        `auth=${req.get('authorization') !== undefined ? 'yes' : 'no'} traceparent=${req.get('traceparent') ?? '-'}`,
    );
  };
  if (req.method !== 'POST') {
    log('-');
    return next();
  }
  const chunks = [];
  const rpcOf = () => {
    try {
      const parsed = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      if (parsed && typeof parsed.method === 'string') return parsed.method;
    } catch {
      // not JSON: the SDK answers a parse error
    }
    return '-';
  };
  const emit = req.emit;
  req.emit = function (event, ...rest) {
    if (event === 'data') chunks.push(Buffer.from(rest[0]));
    else if (event === 'end') log(rpcOf());
    return emit.call(this, event, ...rest);
  };
  res.on('finish', () => log('-'));
  if (args.token && req.get('authorization') !== `Bearer ${args.token}`) {
    req.on('data', () => {});
    req.on('end', () => {
      res.status(401).set('WWW-Authenticate', 'Bearer').json({ error: 'missing or wrong bearer token' });
    });
    return;
  }
  next();
});

const cardPath = args.card === 'legacy' ? '/.well-known/agent.json' : '/.well-known/agent-card.json';
// agentCardHandler JSON.stringify()s whatever the provider returns, so hand it the wire form (the
// SDK's internal form would leak ts-proto oneofs such as `{"$case": "httpAuthSecurityScheme"}`).
app.use(
  cardPath,
  agentCardHandler({
    agentCardProvider: async () => AgentCard.toJSON(await requestHandler.getAgentCard()),
    cache: { maxAge: 0 },
  }),
);
app.use(
  args.rpcPath,
  jsonRpcHandler({ requestHandler, userBuilder }),
);

const server = app.listen(args.port, '127.0.0.1', () => {
  console.log(`READY ${args.port}`);
});
server.on('error', (e) => {
  console.error(`listen failed: ${e.message}`);
  process.exit(1);
});
