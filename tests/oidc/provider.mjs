// A real OpenID provider for the sign-in tests: the `oidc-provider` package (pinned in
// contrib/test/package.json), on a loopback port of its own, with one confidential client
// (the daemon), PKCE required, a `groups` claim, and the accounts of a JSON file. Service
// accounts (machines) get JWT access tokens by the client credentials grant, for a resource
// named by a resource indicator (RFC 8707), their claims (`groups`, ...) in the token.
//
//   node provider.mjs CONFIG.json
//
// CONFIG: {"clientId", "clientSecret", "redirectUri", "postLogoutRedirectUri",
//          "accounts": {"SUBJECT": {"preferred_username", "email", "groups": [...]}},
//          "resources": {"RESOURCE-URI": "AUDIENCE"},
//          "services": {"CLIENT-ID": {"secret", "claims": {...}}}}
// Prints `ready ISSUER` once it listens. Its dev login form takes any password.
import { createServer } from 'node:http';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const nm = process.env.NODE_PATH;
if (!nm) throw new Error('set NODE_PATH to the test Node packages (.test-env/node/node_modules)');
const { default: Provider, errors } = await import(pathToFileURL(join(nm, 'oidc-provider/lib/index.js')));

const config = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const server = createServer();
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const issuer = `http://127.0.0.1:${server.address().port}`;

const provider = new Provider(issuer, {
  clients: [{
    client_id: config.clientId,
    client_secret: config.clientSecret,
    redirect_uris: [config.redirectUri],
    post_logout_redirect_uris: [config.postLogoutRedirectUri],
    grant_types: ['authorization_code'],
    response_types: ['code'],
    token_endpoint_auth_method: 'client_secret_basic',
  }, ...Object.entries(config.services || {}).map(([id, svc]) => ({
    client_id: id,
    client_secret: svc.secret,
    redirect_uris: [],
    grant_types: ['client_credentials'],
    response_types: [],
    token_endpoint_auth_method: 'client_secret_basic',
  }))],
  pkce: { required: () => true },
  scopes: ['openid', 'profile', 'email', 'groups'],
  claims: {
    openid: ['sub'],
    profile: ['preferred_username', 'name'],
    email: ['email', 'email_verified'],
    groups: ['groups'],
  },
  // The claims the scopes grant go into the ID token itself (the daemon reads no userinfo).
  conformIdTokenClaims: false,
  features: {
    devInteractions: { enabled: true },
    rpInitiatedLogout: { enabled: true },
    clientCredentials: { enabled: true },
    // An access token for a known resource is a JWT signed with the provider's keys (those
    // of its JWKS), its audience the resource's.
    resourceIndicators: {
      enabled: true,
      async getResourceServerInfo(ctx, resource) {
        const audience = (config.resources || {})[resource];
        if (!audience) throw new errors.InvalidTarget();
        return { scope: 'api', audience, accessTokenFormat: 'jwt', accessTokenTTL: 300 };
      },
    },
  },
  // A service account's claims, in its access tokens.
  async extraTokenClaims(ctx, token) {
    return (config.services || {})[token.clientId]?.claims;
  },
  // An account's login (the dev form's) is its subject.
  async findAccount(ctx, id) {
    const a = config.accounts[id];
    if (!a) return undefined;
    return { accountId: id, claims: async () => ({ ...a, sub: id }) };
  },
  // Consent is given at once: the tests sign in, they do not review scopes.
  async loadExistingGrant(ctx) {
    const grantId = ctx.oidc.result?.consent?.grantId
      || ctx.oidc.session.grantIdFor(ctx.oidc.client.clientId);
    if (grantId) return ctx.oidc.provider.Grant.find(grantId);
    const grant = new ctx.oidc.provider.Grant({
      clientId: ctx.oidc.client.clientId,
      accountId: ctx.oidc.session.accountId,
    });
    grant.addOIDCScope('openid profile email groups');
    grant.addOIDCClaims(['preferred_username', 'email', 'groups']);
    await grant.save();
    return grant;
  },
});
provider.on('server_error', (ctx, err) => console.error('provider error:', err));
server.on('request', provider.callback());
console.log(`ready ${issuer}`);
