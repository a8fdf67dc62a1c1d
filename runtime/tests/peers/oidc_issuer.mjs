// An OpenID provider for the gateway's OAuth tests: npm `oauth2-mock-server` (discovery at
// /.well-known/openid-configuration, JWKS at /jwks, a token endpoint with client_credentials,
// tokens signed with real RSA / EC keys), plus two test-only admin routes.
//
// Run with Node >= 22.12 (`.peers/node22`), modules from .peers/node_modules:
//
//   node oidc_issuer.mjs --port N
//
// Listens on 127.0.0.1:N only; the issuer is `http://127.0.0.1:N`. Starts with one RS256 key,
// kid `k1`, and one ES256 key, kid `e1`.
//
// - POST /token: the provider's own token endpoint. client_credentials tokens get `sub` and
//   `client_id` = the client id (form field `client_id`), besides the `scope` and `aud` asked.
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

const issuer = new OAuth2Issuer();
issuer.url = `http://127.0.0.1:${port}`;
await issuer.keys.generate('RS256', { kid: 'k1' });
await issuer.keys.generate('ES256', { kid: 'e1' });
const service = new OAuth2Service(issuer);
service.on(Events.BeforeTokenSigning, (token, req) => {
  const client = req.body?.client_id;
  if (client && token.payload.sub === undefined) {
    token.payload.sub = client;
    token.payload.client_id = client;
  }
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
