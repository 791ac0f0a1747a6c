/**
 * A GitHub App's installation tokens (GitHub's "Authenticating as a GitHub App installation"): the
 * App signs a JWT with its private key (RS256, at most 10 minutes; `@octokit/auth-app`) and trades it
 * at `POST /app/installations/{installation_id}/access_tokens` for an installation token that
 * expires at the answer's `expires_at` (an hour on github.com). Each process keeps one token per
 * (API, App, installation, key) in memory only — never written anywhere — shared by its units,
 * renewed a quarter of its lifetime (at most 5 minutes) before it expires, and again once when an
 * answer refuses it with 401 (a token revoked, or a clock ahead of GitHub's). Only one renewal of a
 * token runs at a time in a process: the others wait for it.
 */
import { createHash, createPrivateKey } from 'node:crypto';
import { createAppAuth } from '@octokit/auth-app';
import { ValidationError } from '../../errors.js';

/** The App and installation a unit reads as. */
export interface AppIdentity {
  baseUrl: string;
  appId: number;
  installationId: number;
  /** The App's private key (PEM): the integration's credential. */
  privateKey: string;
}

/** What the exchange came back with. */
export interface IssuedToken {
  token: string;
  /** Epoch ms. */
  expiresAt: number;
}

/** Trades a freshly signed App JWT for an installation token (a call through the unit's loop). */
export type TokenExchange = (jwt: string) => Promise<IssuedToken>;

/** Renewal starts this long before expiry at most (a quarter of the lifetime when that is shorter). */
export const RENEW_BEFORE_MAX_MS = 5 * 60_000;

interface Held extends IssuedToken {
  renewAt: number;
}

interface Entry {
  held: Held | null;
  pending: Promise<Held> | null;
}

/** The process's tokens, by identity (its hash: the key itself is no map key). */
const TOKENS = new Map<string, Entry>();

function keyOf(id: AppIdentity): string {
  return createHash('sha256')
    .update(`${id.baseUrl}\n${id.appId}\n${id.installationId}\n${id.privateKey}`)
    .digest('hex');
}

/** The App's JWT (RS256, iat 60 s back for clock drift, 10 minutes' life), signed by `@octokit/auth-app`. */
export async function appJwt(id: Pick<AppIdentity, 'appId' | 'privateKey'>): Promise<string> {
  const auth = createAppAuth({ appId: id.appId, privateKey: id.privateKey });
  return (await auth({ type: 'app' })).token;
}

/** When a token issued at `issuedAt` and expiring at `expiresAt` is renewed. */
export function renewAt(issuedAt: number, expiresAt: number): number {
  const life = Math.max(0, expiresAt - issuedAt);
  return expiresAt - Math.min(RENEW_BEFORE_MAX_MS, life / 4);
}

/** A unit's view of its installation's token: the current one, renewed when due or refused. */
export interface InstallationTokens {
  /** The token for the next request (renewed first when due). */
  current(): Promise<string>;
  /** `token` was refused with 401: the next `current()` trades for a new one (once per token). */
  refused(token: string): void;
}

/** The installation tokens of `id` in this process, traded through `exchange`; `now` is the unit's clock. */
export function installationTokens(id: AppIdentity, exchange: TokenExchange, now: () => number): InstallationTokens {
  const key = keyOf(id);
  const entry = (): Entry => {
    let e = TOKENS.get(key);
    if (!e) TOKENS.set(key, (e = { held: null, pending: null }));
    return e;
  };
  /** The trade under way (another unit's, or one this unit starts), and whether it is this unit's. */
  const renewal = (e: Entry): { trade: Promise<Held>; mine: boolean } => {
    if (e.pending) return { trade: e.pending, mine: false };
    e.pending = (async () => {
      const issuedAt = now();
      const t = await exchange(await appJwt(id));
      return { ...t, renewAt: renewAt(issuedAt, t.expiresAt) };
    })()
      .then((held) => (e.held = held))
      .finally(() => (e.pending = null));
    return { trade: e.pending, mine: true };
  };
  return {
    async current() {
      const e = entry();
      if (e.held && now() < e.held.renewAt) return e.held.token;
      const first = renewal(e);
      try {
        return (await first.trade).token;
      } catch (err) {
        // Another unit's trade failed (its unit aborted, its call refused): this one trades itself.
        if (first.mine) throw err;
        return (await renewal(e).trade).token;
      }
    },
    refused(token) {
      const e = entry();
      if (e.held?.token === token) e.held = null;
    },
  };
}

/** Forgets every token of this process (tests; a process never needs to). */
export function forgetInstallationTokens(): void {
  TOKENS.clear();
}

/**
 * Throws `ValidationError` naming `field` unless `credential` is an RSA private key in PEM (PKCS#1
 * `RSA PRIVATE KEY` or PKCS#8 `PRIVATE KEY`), as GitHub hands an App's key out. Never quotes it.
 */
export function checkAppPrivateKey(credential: string, field = 'credential'): void {
  const problem = `with config.auth "app" must be the GitHub App's private key: an RSA private key in PEM`;
  if (!/^-----BEGIN (?:RSA )?PRIVATE KEY-----/.test(credential.trim())) throw new ValidationError(field, problem);
  let type: string | undefined;
  try {
    type = createPrivateKey({ key: credential, format: 'pem' }).asymmetricKeyType;
  } catch {
    throw new ValidationError(field, `${problem} (it does not parse as one)`);
  }
  if (type !== 'rsa') throw new ValidationError(field, `${problem} (its type is ${type ?? 'not RSA'})`);
}
