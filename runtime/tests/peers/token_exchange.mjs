// An authorization server with OAuth 2.0 Token Exchange (RFC 8693), for the gateway's
// on-behalf-of tests: npm `@jmondi/oauth2-server` implements the grants (client
// authentication, the token-exchange parameters and their errors, the token answer); the one
// policy decision it leaves to its user, whether a subject token is good
// (`processTokenExchange`), is made here: the subject token must verify (npm `jose`) with a key
// of the OpenID provider's JWKS, be issued by it, unexpired, and carry `--subject-audience`.
//
// Run with Node >= 20, modules from .peers/node_modules:
//
//   node token_exchange.mjs --port N --subject-issuer URL --subject-audience AUD
//        --client ID:SECRET [--ttl SECONDS]
//
// Listens on 127.0.0.1:N only; the issuer is `http://127.0.0.1:N`; it exits when its parent
// does. Signs with one RS256 key, kid `x1`.
//
// - POST /token: grant_type `urn:ietf:params:oauth:grant-type:token-exchange` and
//   `client_credentials`, for the one confidential client `--client` (HTTP Basic or form).
//   Exchanged tokens: `sub` = the subject token's `sub`, `act` = {"sub": client id} (RFC 8693
//   §4.1), `client_id` = the client. Client-credentials tokens: no `sub`, `client_id`. `aud`:
//   the form's `resource`, else its `audience`. Tokens live `--ttl` seconds (default 3600).
//   Each request prints a stderr line
//   `TX-TOKEN grant=<exchange|client_credentials|other> client=<id|-> sub=<sub|-> aud=<aud|-> status=<code>`
//   (and `TX-REFUSED <reason>` when a subject token is refused). No token is ever printed.
// - GET /jwks, GET /.well-known/openid-configuration, /.well-known/oauth-authorization-server.

import http from 'node:http';
import path from 'node:path';
import crypto from 'node:crypto';
import { AsyncLocalStorage } from 'node:async_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const modules = path.resolve(here, '../../../.peers/node_modules');
const load = (p) => import(pathToFileURL(path.join(modules, p)).href);
const oauth = await load('@jmondi/oauth2-server/dist/index.js');
const jose = await load('jose/dist/webapi/index.js');

const args = process.argv.slice(2);
const flag = (name) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
const port = Number(flag('--port'));
const subjectIssuer = flag('--subject-issuer');
const subjectAudience = flag('--subject-audience');
const [clientId, clientSecret] = (flag('--client') ?? '').split(':');
const ttl = Number(flag('--ttl') ?? 3600);
if (!Number.isInteger(port) || port <= 0 || !subjectIssuer || !subjectAudience || !clientSecret) {
  console.error(
    'usage: token_exchange.mjs --port N --subject-issuer URL --subject-audience AUD --client ID:SECRET [--ttl S]',
  );
  process.exit(2);
}
const issuer = `http://127.0.0.1:${port}`;
const EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';

// The request being answered (its form), for the claims the library's hooks cannot see.
const current = new AsyncLocalStorage();

const { privateKey, publicKey } = await jose.generateKeyPair('RS256', { extractable: true });
const jwk = { ...(await jose.exportJWK(publicKey)), kid: 'x1', alg: 'RS256', use: 'sig' };
const subjectKeys = jose.createRemoteJWKSet(new URL(`${subjectIssuer}/jwks`), {
  timeoutDuration: 5000,
});

const client = {
  id: clientId,
  name: clientId,
  secret: clientSecret,
  redirectUris: [],
  allowedGrants: ['client_credentials', EXCHANGE],
  scopes: [],
};
const clientRepository = {
  async getByIdentifier(id) {
    return id === clientId ? client : null;
  },
  async isClientValid(grantType, c, secret) {
    return c.allowedGrants.includes(grantType) && secret === clientSecret;
  },
};
// Every scope name asked for exists.
const scopeRepository = {
  async getAllByIdentifiers(names) {
    return names.filter((n) => n).map((name) => ({ name }));
  },
  async finalize(scopes) {
    return scopes;
  },
};
const tokenRepository = {
  async issueToken(c, scopes, user) {
    return {
      accessToken: crypto.randomUUID(),
      accessTokenExpiresAt: new Date(Date.now() + ttl * 1000),
      client: c,
      user,
      scopes,
    };
  },
  async persist() {},
  async issueRefreshToken(token) {
    return token;
  },
  async revoke() {},
  async isRefreshTokenRevoked() {
    return false;
  },
  async getByRefreshToken() {
    throw new Error('no refresh tokens');
  },
};

// Signs with the RS256 key (the library's default JwtService would use a shared secret).
const jwt = {
  async sign(payload) {
    const claims = Object.fromEntries(Object.entries(payload).filter(([, v]) => v !== undefined));
    return new jose.SignJWT(claims).setProtectedHeader({ alg: 'RS256', kid: 'x1', typ: 'JWT' }).sign(privateKey);
  },
  async verify(token) {
    return (await jose.jwtVerify(token, publicKey)).payload;
  },
  decode(token) {
    return jose.decodeJwt(token);
  },
  async extraTokenFields({ user, client: c }) {
    const form = current.getStore() ?? {};
    const extra = { client_id: c.id };
    const aud = form.resource ?? form.audience;
    if (aud !== undefined) extra.aud = aud;
    if (user?.act) extra.act = user.act;
    return extra;
  },
};

const server = new oauth.AuthorizationServer(clientRepository, tokenRepository, scopeRepository, jwt, {
  issuer,
});
server.enableGrantTypes(
  ['client_credentials', new oauth.DateInterval(`${ttl}s`)],
  [
    {
      grant: EXCHANGE,
      // The policy: the subject token must be one the OpenID provider issued for the gateway.
      async processTokenExchange({ subjectToken, subjectTokenType }) {
        if (subjectTokenType !== 'urn:ietf:params:oauth:token-type:access_token') {
          console.error(`TX-REFUSED subject_token_type ${subjectTokenType}`);
          throw oauth.OAuthException.badRequest('only access tokens are exchanged here');
        }
        try {
          const { payload } = await jose.jwtVerify(subjectToken, subjectKeys, {
            issuer: subjectIssuer,
            audience: subjectAudience,
            requiredClaims: ['exp', 'sub'],
          });
          return { id: payload.sub, act: { sub: clientId } };
        } catch (e) {
          console.error(`TX-REFUSED ${e.code ?? e.name}`);
          throw new oauth.OAuthException(
            'the subject token is not valid',
            oauth.ErrorType.InvalidGrant,
            undefined,
            undefined,
            400,
          );
        }
      },
    },
    new oauth.DateInterval(`${ttl}s`),
  ],
);

function readForm(req) {
  return new Promise((resolve, reject) => {
    let data = '';
    req.setEncoding('utf8');
    req.on('data', (c) => {
      data += c;
      if (data.length > 1 << 16) reject(new Error('too large'));
    });
    req.on('end', () => resolve(Object.fromEntries(new URLSearchParams(data))));
    req.on('error', reject);
  });
}

function send(res, status, body, headers = {}) {
  res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store', ...headers });
  res.end(JSON.stringify(body));
}

async function token(req, res) {
  const form = await readForm(req);
  const grant = form.grant_type === EXCHANGE ? 'exchange' : form.grant_type === 'client_credentials' ? 'client_credentials' : 'other';
  let status;
  let body;
  let sub = '-';
  let aud = '-';
  try {
    const request = new oauth.OAuthRequest({ headers: req.headers, body: form });
    const response = await current.run(form, () => server.respondToAccessTokenRequest(request));
    const claims = jose.decodeJwt(response.body.access_token);
    sub = claims.sub ?? '-';
    aud = claims.aud ?? '-';
    status = response.status;
    body = { ...response.body, issued_token_type: 'urn:ietf:params:oauth:token-type:access_token' };
  } catch (e) {
    status = e.status ?? 500;
    body = { error: e.errorType ?? 'server_error', error_description: e.errorDescription ?? e.error ?? 'failed' };
  }
  // Logged before the answer goes out: a test reading the log after its call finds the line.
  console.error(`TX-TOKEN grant=${grant} client=${form.client_id ?? basicId(req) ?? '-'} sub=${sub} aud=${aud} status=${status}`);
  send(res, status, body);
}

function basicId(req) {
  const auth = req.headers.authorization ?? '';
  if (!auth.startsWith('Basic ')) return undefined;
  return decodeURIComponent(Buffer.from(auth.slice(6), 'base64').toString('utf8').split(':')[0]);
}

const metadata = {
  issuer,
  token_endpoint: `${issuer}/token`,
  jwks_uri: `${issuer}/jwks`,
  grant_types_supported: ['client_credentials', EXCHANGE],
  token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
};

const httpServer = http.createServer((req, res) => {
  const url = req.url.split('?')[0];
  if (req.method === 'POST' && url === '/token') {
    token(req, res).catch((e) => send(res, 500, { error: 'server_error', error_description: String(e) }));
  } else if (req.method === 'GET' && url === '/jwks') {
    send(res, 200, { keys: [jwk] });
  } else if (
    req.method === 'GET' &&
    (url === '/.well-known/openid-configuration' || url === '/.well-known/oauth-authorization-server')
  ) {
    send(res, 200, metadata);
  } else {
    send(res, 404, { error: 'not_found' });
  }
});
httpServer.listen(port, '127.0.0.1', () => console.log(`READY ${port}`));

// Ends with its parent (a test that dies does not leave it behind).
const parent = process.ppid;
setInterval(() => {
  if (process.ppid !== parent) process.exit(0);
}, 1000).unref();
