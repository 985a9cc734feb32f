// A provider the hostile sign-in tests control: its own discovery document, JWKS and
// authorization and token endpoints, signing ID tokens with keys it holds (`jose`, pinned in
// contrib/test/package.json), each shaped by the mode the test sets. What a real provider
// never sends: a token for another issuer or audience, an expired one, `alg: none`, one
// signed by a key it never published or has rotated out, a wrong nonce or state.
//
//   node rogue.mjs CLIENT_ID
//
// Prints `ready ISSUER`. Control: POST /mode {"mode": M}, POST /rotate (a new signing
// key; the old one leaves the JWKS), GET /stats ({"jwksFetches": N}), and POST
// /access-token {"mode": M} (an access token for the API, audience `dshq`, shaped by M as an
// ID token is, plus `hs256`, signed with an HMAC keyed by the public key, and
// `bad-signature`, a good token's claims under another's signature).
import { createServer } from 'node:http';
import { createHash, randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const nm = process.env.NODE_PATH;
if (!nm) throw new Error('set NODE_PATH to the test Node packages (.test-env/node/node_modules)');
const jose = await import(pathToFileURL(join(nm, 'jose/dist/webapi/index.js')));

const clientId = process.argv[2];
let mode = 'ok';
let jwksFetches = 0;
const newKey = async (kid) => {
  const { privateKey, publicKey } = await jose.generateKeyPair('RS256', { extractable: true });
  return { kid, privateKey, jwk: { ...(await jose.exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' } };
};
let current = await newKey('k1');
let retired = null; // the key rotated out
const stranger = await newKey('k-unknown'); // never published
const codes = new Map(); // code -> {nonce, challenge, redirect}

const server = createServer();
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const issuer = `http://127.0.0.1:${server.address().port}`;

const b64url = (buf) => Buffer.from(buf).toString('base64url');
const send = (res, status, body, headers = {}) => {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(typeof body === 'string' ? body : JSON.stringify(body));
};
const body = (req) => new Promise((resolve) => {
  let s = '';
  req.on('data', (c) => { s += c; });
  req.on('end', () => resolve(s));
});

async function idToken(nonce) {
  const now = Math.floor(Date.now() / 1000);
  const claims = {
    iss: mode === 'wrong-issuer' ? 'http://127.0.0.1:1/not-this-one' : issuer,
    aud: mode === 'wrong-audience' ? 'someone-else' : clientId,
    sub: 'rogue-subject',
    preferred_username: 'rita',
    groups: ['dshq-reviewers'],
    nonce: mode === 'wrong-nonce' ? 'not-the-nonce' : nonce,
    iat: mode === 'expired' ? now - 7200 : now,
    exp: mode === 'expired' ? now - 3600 : now + 300,
  };
  if (mode === 'alg-none') {
    const head = b64url(JSON.stringify({ alg: 'none', typ: 'JWT' }));
    return `${head}.${b64url(JSON.stringify(claims))}.`;
  }
  const key = mode === 'unknown-key' ? stranger : mode === 'rotated-out' ? retired : current;
  return new jose.SignJWT(claims)
    .setProtectedHeader({ alg: 'RS256', kid: key.kid, typ: 'JWT' })
    .sign(key.privateKey);
}

// An access token a service account would present to dshq's API.
async function accessToken(m) {
  const now = Math.floor(Date.now() / 1000);
  const claims = {
    iss: m === 'wrong-issuer' ? 'http://127.0.0.1:1/not-this-one' : issuer,
    aud: m === 'wrong-audience' ? 'someone-else' : 'dshq',
    sub: 'svc-rogue',
    preferred_username: 'robo',
    groups: ['dshq-reviewers'],
    iat: m === 'expired' ? now - 7200 : now,
    exp: m === 'expired' ? now - 3600 : now + 300,
  };
  if (m === 'alg-none') {
    const head = b64url(JSON.stringify({ alg: 'none', typ: 'at+jwt' }));
    return `${head}.${b64url(JSON.stringify(claims))}.`;
  }
  if (m === 'hs256') {
    const secret = new TextEncoder().encode(JSON.stringify(current.jwk));
    return new jose.SignJWT(claims)
      .setProtectedHeader({ alg: 'HS256', kid: current.kid, typ: 'at+jwt' })
      .sign(secret);
  }
  const key = m === 'unknown-key' ? stranger : m === 'rotated-out' ? retired : current;
  const token = await new jose.SignJWT(claims)
    .setProtectedHeader({ alg: 'RS256', kid: key.kid, typ: 'at+jwt' })
    .sign(key.privateKey);
  if (m === 'bad-signature') {
    const other = await new jose.SignJWT({ ...claims, sub: 'someone-else' })
      .setProtectedHeader({ alg: 'RS256', kid: key.kid, typ: 'at+jwt' })
      .sign(key.privateKey);
    return `${token.split('.').slice(0, 2).join('.')}.${other.split('.')[2]}`;
  }
  return token;
}

server.on('request', async (req, res) => {
  const url = new URL(req.url, issuer);
  try {
    if (url.pathname === '/.well-known/openid-configuration') {
      return send(res, 200, {
        issuer,
        authorization_endpoint: `${issuer}/auth`,
        token_endpoint: `${issuer}/token`,
        jwks_uri: `${issuer}/jwks`,
        response_types_supported: ['code'],
        subject_types_supported: ['public'],
        id_token_signing_alg_values_supported: ['RS256'],
        code_challenge_methods_supported: ['S256'],
      });
    }
    if (url.pathname === '/jwks') {
      jwksFetches += 1;
      return send(res, 200, { keys: [current.jwk] });
    }
    if (url.pathname === '/auth') {
      const p = url.searchParams;
      const code = b64url(randomBytes(16));
      codes.set(code, { nonce: p.get('nonce'), challenge: p.get('code_challenge') });
      const back = new URL(p.get('redirect_uri'));
      back.searchParams.set('code', code);
      back.searchParams.set('state', mode === 'wrong-state' ? 'not-the-state' : p.get('state'));
      res.writeHead(302, { location: back.toString() });
      return res.end();
    }
    if (url.pathname === '/token' && req.method === 'POST') {
      const form = new URLSearchParams(await body(req));
      const grant = codes.get(form.get('code'));
      codes.delete(form.get('code'));
      const verifier = form.get('code_verifier') || '';
      const challenge = createHash('sha256').update(verifier).digest('base64url');
      if (!grant || grant.challenge !== challenge) {
        return send(res, 400, { error: 'invalid_grant', error_description: 'unknown code or PKCE mismatch' });
      }
      return send(res, 200, {
        access_token: b64url(randomBytes(16)),
        token_type: 'Bearer',
        expires_in: 300,
        id_token: await idToken(grant.nonce),
      });
    }
    if (url.pathname === '/mode' && req.method === 'POST') {
      mode = JSON.parse(await body(req)).mode;
      return send(res, 200, { mode });
    }
    if (url.pathname === '/access-token' && req.method === 'POST') {
      return send(res, 200, { access_token: await accessToken(JSON.parse(await body(req)).mode) });
    }
    if (url.pathname === '/rotate' && req.method === 'POST') {
      retired = current;
      current = await newKey(`k${Date.now()}`);
      return send(res, 200, { kid: current.kid });
    }
    if (url.pathname === '/stats') return send(res, 200, { jwksFetches });
    return send(res, 404, { error: 'not_found' });
  } catch (e) {
    console.error(e);
    return send(res, 500, { error: 'server_error' });
  }
});
console.log(`ready ${issuer}`);
