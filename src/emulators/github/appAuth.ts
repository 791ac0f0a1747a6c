/**
 * The emulator's GitHub App: one App with one installation on the organisation's account, and the
 * credentials GitHub's documentation describes for it.
 *
 * - "Generating a JSON Web Token (JWT) for a GitHub App": the App authenticates with a JWT sent as
 *   `Authorization: Bearer <jwt>`, signed with RS256 by the App's private key, claiming `iss` (the
 *   App's id, a number or numeric string, or its client ID), `iat` (issued at; GitHub recommends 60 s
 *   in the past against clock drift) and `exp` (at most 10 minutes into the future). Here the key
 *   pair is RSA 2048, made at start; the private key is handed out as PKCS#1 PEM
 *   (`-----BEGIN RSA PRIVATE KEY-----`, the form GitHub's private-key download takes). Times are
 *   judged by the emulator's clock: `exp` must be a number in the future and no more than 600 s
 *   ahead of the clock (the documentation's own example sets `iat` 60 s back and `exp` 600 s ahead,
 *   so `exp − iat` may reach 660 s); `iat` must be a number no more than 60 s ahead of the clock.
 *   A refused JWT answers 401 with GitHub's message for the case where one is known ("A JSON web
 *   token could not be decoded", "'Issuer' claim ('iss') must be an Integer", "Integration not
 *   found", the `iat` and `exp` claim messages below); a revoked key's JWTs no longer verify.
 * - "Authenticating as a GitHub App installation" and REST "Create an installation access token
 *   for an app": `POST /app/installations/{id}/access_tokens` (with a JWT) answers 201 with a
 *   `ghs_` token (36 base62 characters from the system's random source), `expires_at` one hour on
 *   (`tokenTtlSeconds`), the installation's permissions and `repository_selection: all`. The
 *   request body's `repositories`, `repository_ids` and `permissions` (narrowing the token) are not
 *   read: every token reaches every repository of the organisation. The token authenticates
 *   every endpoint the full-access token does (except `GET /user`: 403 "Resource not accessible by
 *   integration", as GitHub answers an installation) and, after `expires_at` by the emulator's
 *   clock or once revoked, answers 401 "Bad credentials". An installation's requests spend the
 *   installation's own primary-rate-limit budget (keyed by installation, whichever of its tokens
 *   is sent), with the emulator's configured limit; App JWT requests spend the App's.
 * - The installation reaches every repository of the organisation (`repository_selection: all`)
 *   unless given some (the `repositories` option, or `select` at run time: `selected`); then its
 *   tokens see the organisation's private repositories among those only, as GitHub answers an
 *   installation (404 for the others), and `GET /installation/repositories` lists those only.
 *
 * The endpoints themselves are in routesApp.ts.
 */
import { generateKeyPairSync, verify, type KeyObject } from 'node:crypto';
import type { Clock } from '../../clock.js';
import { ValidationError } from '../../errors.js';
import { BASE62, freshToken } from '../core/credentials.js';
import type { EmulatorToken, GithubAppOptions } from './options.js';

export interface ResolvedAppOptions {
  appId: number;
  installationId: number;
  tokenTtlSeconds: number;
  /** The repositories (names) the installation was given; null: all of the organisation's. */
  repositories: readonly string[] | null;
}

/** What the App's authentication did so far (for tests). */
export interface AppStats {
  /** Installation access tokens issued. */
  tokensIssued: number;
  jwtsAccepted: number;
  jwtsRefused: number;
  /** Requests with an expired or revoked installation access token. */
  tokensRefused: number;
}

export const DEFAULT_APP_ID = 1_000_001;
export const DEFAULT_INSTALLATION_ID = 2_000_001;
/** GitHub's installation access tokens last one hour. */
export const DEFAULT_TOKEN_TTL_SECONDS = 3600;
/** The longest a JWT may still run (`exp` ahead of the clock), per GitHub's documentation. */
export const JWT_MAX_SECONDS = 600;
/** How far ahead of the clock `iat` may be (clock drift between the App's server and GitHub). */
export const JWT_IAT_LEEWAY_SECONDS = 60;

const MAX_ID = 2 ** 31 - 1;

/** GitHub's 401 messages for a refused JWT. */
export const JWT_MESSAGES = {
  undecodable: 'A JSON web token could not be decoded',
  issuer: "'Issuer' claim ('iss') must be an Integer",
  unknownApp: 'Integration not found',
  issuedAt: "'Issued at' claim ('iat') must be an Integer " + 'representing the time that the assertion was issued',
  expiry:
    "'Expiration time' claim ('exp') must be a numeric value " +
    'representing the future time at which the assertion expires',
  tooLong: "'Expiration time' claim ('exp') is too far in the future",
} as const;

/** The `app` option with its defaults; ids positive integers (below 2³¹), the TTL 1 s to one day. */
export function resolveAppOptions(given: GithubAppOptions | undefined): ResolvedAppOptions | null {
  if (given === undefined) return null;
  const out = {
    appId: given.appId ?? DEFAULT_APP_ID,
    installationId: given.installationId ?? DEFAULT_INSTALLATION_ID,
    tokenTtlSeconds: given.tokenTtlSeconds ?? DEFAULT_TOKEN_TTL_SECONDS,
    repositories: given.repositories ? [...given.repositories] : null,
  };
  const max = { appId: MAX_ID, installationId: MAX_ID, tokenTtlSeconds: 86_400 };
  for (const key of ['appId', 'installationId', 'tokenTtlSeconds'] as const) {
    const v = out[key];
    if (!Number.isInteger(v) || v < 1 || v > max[key]) {
      throw new ValidationError(`app.${key}`, `expected an integer from 1 to ${max[key]}, got ${v}`);
    }
  }
  return out;
}

/** Throws `ValidationError` unless every name of `selected` is one of `names` (the organisation's repositories). */
export function checkSelection(selected: readonly string[] | null, names: readonly string[]): void {
  for (const name of selected ?? []) {
    if (!names.includes(name))
      throw new ValidationError('app.repositories', `the organisation has no repository "${name}"`);
  }
}

/** Three base64url segments, the first two non-empty: the shape of a compact JWS. */
const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;

/** Whether `credential` is shaped like a JWT (not whether it verifies). */
export function looksLikeJwt(credential: string): boolean {
  return JWT_SHAPE.test(credential);
}

/** JWTs and tokens kept for `secretsSeen`, at most. */
const SECRETS_KEPT = 1000;

interface IssuedToken {
  expiresAt: number;
  revoked: boolean;
}

/** The App, its key, its installation and the installation's access tokens. */
export class GithubApp {
  readonly appId: number;
  readonly installationId: number;
  readonly tokenTtlSeconds: number;
  /** The App's client ID (`Iv1.` and 16 hex digits, from the App id); also accepted as `iss`. */
  readonly clientId: string;
  readonly slug = 'emulated-app';
  readonly stats: AppStats = { tokensIssued: 0, jwtsAccepted: 0, jwtsRefused: 0, tokensRefused: 0 };
  /** Who an App JWT request is, for the rate limiter and the request log. */
  readonly appCaller: EmulatorToken;
  /** Who an installation token request is: one identity per installation, whichever token. */
  readonly installationCaller: EmulatorToken;
  private publicKey!: KeyObject;
  private pem!: string;
  private readonly issued = new Map<string, IssuedToken>();
  /** The repositories (names) the installation was given; null: all of them. */
  private selected: readonly string[] | null = null;
  /** The JWTs accepted and the tokens issued, the latest SECRETS_KEPT (a leak test looks for each). */
  readonly secretsSeen: string[] = [];

  constructor(
    opts: ResolvedAppOptions,
    private readonly clock: Clock,
  ) {
    this.appId = opts.appId;
    this.installationId = opts.installationId;
    this.tokenTtlSeconds = opts.tokenTtlSeconds;
    this.clientId = `Iv1.${opts.appId.toString(16).padStart(16, '0')}`;
    this.appCaller = { id: `app:${opts.appId}`, token: '' };
    this.installationCaller = { id: `installation:${opts.installationId}`, token: '' };
    this.select(opts.repositories);
    this.newKey();
  }

  /** `all` unless the installation was given some repositories (`selected`). */
  get repositorySelection(): 'all' | 'selected' {
    return this.selected === null ? 'all' : 'selected';
  }

  /** The repositories (names) the installation was given; null: all of the organisation's. */
  get selectedRepositories(): readonly string[] | null {
    return this.selected;
  }

  /** Whether the installation reaches repository `name`. */
  reaches(name: string): boolean {
    return this.selected === null || this.selected.includes(name);
  }

  /** Gives the installation these repositories (names; null: all) from now on, as an owner edits it. */
  select(names: readonly string[] | null): void {
    this.selected = names === null ? null : [...new Set(names)];
    // Its tokens see the private repositories among these only (server.ts: a token's `repos`).
    if (this.selected === null) delete this.installationCaller.repos;
    else this.installationCaller.repos = this.selected;
  }

  /** The App's current private key, PKCS#1 PEM. */
  get privateKeyPem(): string {
    return this.pem;
  }

  /** Drops the current key (its JWTs fail from now on) and makes a new one; returns its PEM. */
  revokeKey(): string {
    this.newKey();
    return this.pem;
  }

  /** Revokes every installation access token issued so far; returns how many were live. */
  revokeTokens(): number {
    const now = this.clock.now().getTime();
    let live = 0;
    for (const t of this.issued.values()) {
      if (!t.revoked && now < t.expiresAt) live++;
      t.revoked = true;
    }
    return live;
  }

  /** Null when `jwt` authenticates the App now; else GitHub's 401 message. Counted in `stats`. */
  checkJwt(jwt: string): string | null {
    const refusal = this.refusal(jwt);
    if (refusal === null) {
      this.stats.jwtsAccepted++;
      this.keep(jwt);
    } else this.stats.jwtsRefused++;
    return refusal;
  }

  /** A new installation access token and when it expires (epoch ms, a whole second). */
  issueToken(): { token: string; expiresAt: number } {
    const token = freshToken('ghs_', BASE62, 36);
    const expiresAt = Math.floor(this.clock.now().getTime() / 1000) * 1000 + this.tokenTtlSeconds * 1000;
    this.issued.set(token, { expiresAt, revoked: false });
    this.stats.tokensIssued++;
    this.keep(token);
    return { token, expiresAt };
  }

  /** Whether `token` is one of the installation's: `valid`, `refused` (expired, revoked) or `unknown`. */
  tokenState(token: string): 'valid' | 'refused' | 'unknown' {
    const t = this.issued.get(token);
    if (!t) return 'unknown';
    if (t.revoked || this.clock.now().getTime() >= t.expiresAt) {
      this.stats.tokensRefused++;
      return 'refused';
    }
    return 'valid';
  }

  private keep(secret: string): void {
    this.secretsSeen.push(secret);
    if (this.secretsSeen.length > SECRETS_KEPT) this.secretsSeen.shift();
  }

  private newKey(): void {
    const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    this.publicKey = publicKey;
    this.pem = privateKey.export({ type: 'pkcs1', format: 'pem' }).toString();
  }

  /**
   * In GitHub's order: the token decodes (three base64url parts, JSON header and claims, alg
   * RS256), `iss` names this App (it selects the key), the signature verifies, then the times.
   */
  private refusal(jwt: string): string | null {
    if (!looksLikeJwt(jwt)) return JWT_MESSAGES.undecodable;
    const [head, body, sig] = jwt.split('.') as [string, string, string];
    const header = decodeJson(head);
    const claims = decodeJson(body);
    if (!header || !claims || header.alg !== 'RS256' || sig === '') return JWT_MESSAGES.undecodable;
    const iss = claims.iss;
    const issId = typeof iss === 'number' ? iss : typeof iss === 'string' && /^\d+$/.test(iss) ? Number(iss) : null;
    if (issId === null || !Number.isInteger(issId)) {
      if (iss === this.clientId) return this.checkSignedTimes(head, body, sig, claims);
      return typeof iss === 'string' && iss.startsWith('Iv') ? JWT_MESSAGES.unknownApp : JWT_MESSAGES.issuer;
    }
    if (issId !== this.appId) return JWT_MESSAGES.unknownApp;
    return this.checkSignedTimes(head, body, sig, claims);
  }

  private checkSignedTimes(head: string, body: string, sig: string, claims: Record<string, unknown>): string | null {
    const signed = verify('sha256', Buffer.from(`${head}.${body}`), this.publicKey, Buffer.from(sig, 'base64url'));
    if (!signed) return JWT_MESSAGES.undecodable;
    const now = this.clock.now().getTime() / 1000;
    const { iat, exp } = claims;
    if (typeof iat !== 'number' || !Number.isFinite(iat) || iat > now + JWT_IAT_LEEWAY_SECONDS) {
      return JWT_MESSAGES.issuedAt;
    }
    if (typeof exp !== 'number' || !Number.isFinite(exp) || exp <= now) return JWT_MESSAGES.expiry;
    if (exp > now + JWT_MAX_SECONDS) return JWT_MESSAGES.tooLong;
    return null;
  }
}

/** A base64url segment's JSON object, or null. */
function decodeJson(segment: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(Buffer.from(segment, 'base64url').toString('utf8'));
    return value !== null && typeof value === 'object' && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : null;
  } catch {
    return null;
  }
}
