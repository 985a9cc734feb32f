// A real OpenID provider for the sign-in tests: the `oidc-provider` package (pinned in
// contrib/test/package.json), on a loopback port of its own, with one confidential client
// (the daemon), PKCE required, a `groups` claim, and the accounts of a JSON file.
//
//   node provider.mjs CONFIG.json
//
// CONFIG: {"clientId", "clientSecret", "redirectUri", "postLogoutRedirectUri",
//          "accounts": {"SUBJECT": {"preferred_username", "email", "groups": [...]}}}
// Prints `ready ISSUER` once it listens. Its dev login form takes any password.
import { createServer } from 'node:http';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const nm = process.env.NODE_PATH;
if (!nm) throw new Error('set NODE_PATH to the test Node packages (.test-env/node/node_modules)');
const { default: Provider } = await import(pathToFileURL(join(nm, 'oidc-provider/lib/index.js')));

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
  }],
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
  features: { devInteractions: { enabled: true }, rpInitiatedLogout: { enabled: true } },
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
