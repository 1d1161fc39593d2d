// A real OpenID Connect provider for the tests: node-oidc-provider, pinned in npm/, with one confidential client
// (the Horde), PKCE required, and its development sign-in (any login, any password), whose login names the
// account: subject `login`, preferred_username `login`, email `login@example.org`.
//
// node provider.mjs NODE_MODULES PORT CLIENT_ID CLIENT_SECRET REDIRECT_URI...
// Prints "ready <issuer>" once it listens on 127.0.0.1:PORT.
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [nodeModules, port, clientId, clientSecret, ...redirectUris] = process.argv.slice(2);
const { default: Provider } = await import(pathToFileURL(join(nodeModules, "oidc-provider", "lib", "index.js")));

const issuer = `http://127.0.0.1:${port}`;
const provider = new Provider(issuer, {
  clients: [
    {
      client_id: clientId,
      client_secret: clientSecret,
      redirect_uris: redirectUris,
      response_types: ["code"],
      grant_types: ["authorization_code"],
      token_endpoint_auth_method: "client_secret_basic",
    },
  ],
  pkce: { required: () => true },
  claims: { openid: ["sub"], profile: ["preferred_username", "name"], email: ["email"] },
  async findAccount(_ctx, id) {
    return {
      accountId: id,
      async claims() {
        return { sub: id, preferred_username: id, name: `The ${id}`, email: `${id}@example.org` };
      },
    };
  },
  cookies: { keys: ["horde-tests-only"] },
  features: { devInteractions: { enabled: true } },
});
provider.listen(Number(port), "127.0.0.1", () => console.log(`ready ${issuer}`));
