// An OpenID provider for the gateway's OAuth tests: npm `oauth2-mock-server` (discovery at
// /.well-known/openid-configuration, JWKS at /jwks, a token endpoint with client_credentials,
// tokens signed with real RSA / EC keys), plus two test-only admin routes.
//
// Run with Node >= 22.12 (`.peers/node22`), modules from .peers/node_modules:
//
//   node oidc_issuer.mjs --port N [--client ID:SECRET] [--ttl SECONDS]
//
// Listens on 127.0.0.1:N only; the issuer is `http://127.0.0.1:N`. Starts with one RS256 key,
// kid `k1`, and one ES256 key, kid `e1`.
//
// - POST /token: the provider's own token endpoint. client_credentials tokens get `sub` and
//   `client_id` = the client id (HTTP Basic, or form field `client_id`), besides the `scope`
//   asked; `aud` is the form's `aud`, else its `resource` (RFC 8707), else its `audience`.
//   With `--client ID:SECRET`, the client must authenticate as that pair (HTTP Basic with the
//   form-encoded id and secret, or both as form fields): otherwise HTTP 401
//   `{"error": "invalid_client"}`. With `--ttl S`, tokens expire S seconds after they are
//   issued and the answer's `expires_in` is S (default 3600). Each token request prints a
//   stderr line `OIDC-TOKEN client=<id|-> resource=<resource|-> scope=<scope|-> status=<code>`.
// - POST /admin/token  {"kid": "k1", "claims": {...}, "header": {...}}: a token signed with key
//   `kid`; `claims` are set over the defaults (iss, iat, exp = now + 1 h, nbf), a claim given as
//   null is removed; `header` entries are set over the protected header, null removing one (a
//   `kid` there is what the token *says*, the key signing it stays `kid`). Answers the token as
//   text.
// - POST /admin/rotate  {"kid": "k2", "alg": "RS256"}: adds a new key to the JWKS.
//
// Every request prints one stderr line `OIDC-REQ <METHOD> <path>` (the tests count JWKS fetches).

import http from 'node:http';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const modules = path.resolve(here, "../../../.peers/node_modules");
const { OAuth2Issuer, OAuth2Service, Events } = await import(
  pathToFileURL(path.join(modules, 'oauth2-mock-server/dist/index.mjs')).href
);

const args = process.argv.slice(2);
const port = Number(args[args.indexOf('--port') + 1]);
if (!Number.isInteger(port) || port <= 0) {
  console.error('usage: oidc_issuer.mjs --port N');
  process.exit(2);
}

const flag = (name) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
const required = flag('--client');
const ttl = Number(flag('--ttl') ?? 3600);

const issuer = new OAuth2Issuer();
issuer.url = `http://127.0.0.1:${port}`;
await issuer.keys.generate('RS256', { kid: 'k1' });
await issuer.keys.generate('ES256', { kid: 'e1' });
const service = new OAuth2Service(issuer);

// The client a token request authenticates as: [id, secret] from HTTP Basic (each part
// form-decoded, RFC 6749 §2.3.1) or from the form.
function client(req) {
  const auth = req.headers.authorization ?? '';
  if (auth.startsWith('Basic ')) {
    const pair = Buffer.from(auth.slice(6), 'base64').toString('utf8');
    const at = pair.indexOf(':');
    const decode = (v) => decodeURIComponent(v.replace(/\+/g, ' '));
    return [decode(pair.slice(0, at)), decode(pair.slice(at + 1))];
  }
  return [req.body?.client_id, req.body?.client_secret];
}

service.on(Events.BeforeTokenSigning, (token, req) => {
  const [id] = client(req);
  if (id && token.payload.sub === undefined) {
    token.payload.sub = id;
    token.payload.client_id = id;
  }
  const aud = req.body?.aud ?? req.body?.resource ?? req.body?.audience;
  if (aud !== undefined) token.payload.aud = aud;
  token.payload.exp = token.payload.iat + ttl;
});
service.on(Events.BeforeResponse, (response, req) => {
  const [id, secret] = client(req);
  if (required !== undefined && `${id}:${secret}` !== required) {
    response.statusCode = 401;
    response.body = { error: 'invalid_client', error_description: 'unknown client or wrong secret' };
  } else if (response.body?.access_token) {
    response.body.expires_in = ttl;
  }
  const b = req.body ?? {};
  console.error(
    `OIDC-TOKEN client=${id ?? '-'} resource=${b.resource ?? '-'} scope=${b.scope ?? '-'} status=${response.statusCode}`,
  );
});

function body(req) {
  return new Promise((resolve, reject) => {
    let data = '';
    req.setEncoding('utf8');
    req.on('data', (c) => {
      data += c;
      if (data.length > 1 << 20) reject(new Error('too large'));
    });
    req.on('end', () => resolve(data ? JSON.parse(data) : {}));
    req.on('error', reject);
  });
}

async function admin(req, res) {
  const input = await body(req);
  if (req.url === '/admin/token') {
    const token = await issuer.buildToken({
      kid: input.kid ?? 'k1',
      scopesOrTransform: (header, payload) => {
        for (const [k, v] of Object.entries(input.claims ?? {})) {
          if (v === null) delete payload[k];
          else payload[k] = v;
        }
        for (const [k, v] of Object.entries(input.header ?? {})) {
          if (v === null) delete header[k];
          else header[k] = v;
        }
      },
    });
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end(token);
  } else if (req.url === '/admin/rotate') {
    await issuer.keys.generate(input.alg ?? 'RS256', { kid: input.kid });
    res.writeHead(204);
    res.end();
  } else {
    res.writeHead(404);
    res.end();
  }
}

const server = http.createServer((req, res) => {
  console.error(`OIDC-REQ ${req.method} ${req.url.split('?')[0]}`);
  if (req.url.startsWith('/admin/')) {
    admin(req, res).catch((e) => {
      res.writeHead(500);
      res.end(String(e));
    });
  } else {
    service.requestHandler(req, res);
  }
});
server.listen(port, '127.0.0.1', () => console.log(`READY ${port}`));
