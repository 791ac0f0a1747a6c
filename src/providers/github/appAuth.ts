/**
 * A GitHub App's installation tokens (GitHub's "Authenticating as a GitHub App installation"): the
 * App signs a JWT with its private key (RS256, at most 10 minutes; `@octokit/auth-app`) and trades it
 * at `POST /app/installations/{installation_id}/access_tokens` for an installation token that
 * expires at the answer's `expires_at` (an hour on github.com). Each process keeps one token per
 * (API, App, installation, key) in memory only — never written anywhere — shared by its units,
 * renewed a quarter of its lifetime (at most 5 minutes) before it expires, and again once when an
 * answer refuses it with 401 (a token revoked, or a clock ahead of GitHub's). Only one renewal of a
 * token runs at a time in a process: the others wait for it.
 *
 * An installation not configured by id is found from its account (installation.ts); each process
 * keeps the id found per (API, App, owner) for an hour, and only one look-up of it runs at a time.
 */
import { createHash, createPrivateKey } from 'node:crypto';
import { createAppAuth } from '@octokit/auth-app';
import { ValidationError } from '../../errors.js';
import { renewAt, TokenCache, type RenewableToken } from '../kit/tokenCache.js';

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

/** The process's installation tokens, by identity (its hash: the key itself is no map key). */
const TOKENS = new TokenCache();

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

/** A unit's view of its installation's token: the current one, renewed when due or refused. */
export type InstallationTokens = RenewableToken;

/** The installation tokens of `id` in this process, traded through `exchange`; `now` is the unit's clock. */
export function installationTokens(id: AppIdentity, exchange: TokenExchange, now: () => number): InstallationTokens {
  const trade = async () => {
    const issuedAt = now();
    const t = await exchange(await appJwt(id));
    return { ...t, renewAt: renewAt(issuedAt, t.expiresAt) };
  };
  return TOKENS.token(keyOf(id), trade, now);
}

/** An installation looked for by its account: the App and the owner's login, on one API host. */
export interface InstallationOwner {
  baseUrl: string;
  appId: number;
  /** The account's login (user or organisation), matched case-insensitively. */
  owner: string;
}

/** Looks the installation up (with a freshly signed App JWT, through the caller's loop): its id, or null. */
export type InstallationFinder = () => Promise<number | null>;

/** A found id is kept this long, then looked up again (an App installed anew gets a new id). */
export const INSTALLATION_ID_TTL_MS = 60 * 60_000;

interface FoundEntry {
  found: { id: number; until: number } | null;
  pending: Promise<number | null> | null;
}

/** The process's found installation ids, by (API, App, owner); a look-up that found none is not kept. */
const INSTALLATIONS = new Map<string, FoundEntry>();

/**
 * The id of the installation on `o.owner`, found by `find` unless this process found it within the
 * hour; null when there is none. Callers asking at once share one look-up (and look up themselves
 * when another caller's fails: its unit may have been aborted).
 */
export async function installationIdOf(
  o: InstallationOwner,
  find: InstallationFinder,
  now: () => number,
): Promise<number | null> {
  const key = `${o.baseUrl}\n${o.appId}\n${o.owner.toLowerCase()}`;
  let e = INSTALLATIONS.get(key);
  if (!e) INSTALLATIONS.set(key, (e = { found: null, pending: null }));
  if (e.found && now() < e.found.until) return e.found.id;
  const entry = e;
  const lookup = (): { done: Promise<number | null>; mine: boolean } => {
    if (entry.pending) return { done: entry.pending, mine: false };
    entry.pending = find()
      .then((id) => {
        entry.found = id === null ? null : { id, until: now() + INSTALLATION_ID_TTL_MS };
        return id;
      })
      .finally(() => (entry.pending = null));
    return { done: entry.pending, mine: true };
  };
  const first = lookup();
  try {
    return await first.done;
  } catch (err) {
    if (first.mine) throw err;
    return lookup().done;
  }
}

/** Forgets every token and found installation id of this process (tests; a process never needs to). */
export function forgetInstallationTokens(): void {
  TOKENS.clear();
  INSTALLATIONS.clear();
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
