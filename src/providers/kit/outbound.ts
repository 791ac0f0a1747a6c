/**
 * Where a provider request may go, and how long it may take: the outbound policy.
 *
 * - Scheme: https; plain http only to a loopback host (127.0.0.0/8, ::1, `localhost`) and only with
 *   SYNCRELAY_ALLOW_INSECURE_PROVIDER_URLS (local emulators).
 * - Addresses: loopback, private (10/8, 172.16/12, 192.168/16, 100.64/10, fc00::/7), link-local
 *   (169.254/16, fe80::/10), unspecified (0.0.0.0/8, ::), multicast and reserved addresses, in any
 *   notation (IPv4-mapped IPv6 included, addresses.ts), are refused unless the operator allows the
 *   host by name (SYNCRELAY_PROVIDER_ALLOWED_HOSTS) or the address by block
 *   (SYNCRELAY_PROVIDER_ALLOWED_CIDRS); the insecure opt-in allows loopback.
 * - When: an integration's URL is checked when it is stored (`urlProblem`, used by config.ts
 *   `checkUrl`: an IP literal by its kind, a host name only by name); every request is checked
 *   before it is sent (`fetch`), and every connection after DNS resolution, before it is opened
 *   (`lookup`): a host that resolves (or re-resolves, on a redirect) to a refused address is never
 *   connected to.
 * - Timeouts (`fetch`): connecting, the answer's headers, and reading its whole body each have a
 *   limit; a request that runs out of one got no answer (the call loop retries it in place).
 */
import { lookup as dnsLookup } from 'node:dns/promises';
import type { LookupAddress, LookupOptions } from 'node:dns';
import { isIPv6, type LookupFunction } from 'node:net';
import { Agent, fetch as undiciFetch, type Dispatcher } from 'undici';
import { NonRetryableError, ValidationError } from '../../errors.js';
import { addressKind, inBlocks, parseCidr, type AddressKind, type Cidr } from './addresses.js';

/** The policy's settings; every duration in milliseconds. */
export interface OutboundSettings {
  /** Plain http to loopback hosts, and loopback addresses (SYNCRELAY_ALLOW_INSECURE_PROVIDER_URLS). @default false */
  allowInsecure: boolean;
  /** Hosts reached whatever they resolve to (SYNCRELAY_PROVIDER_ALLOWED_HOSTS). @default none */
  allowedHosts: readonly string[];
  /** Address blocks reached though not public (SYNCRELAY_PROVIDER_ALLOWED_CIDRS). @default none */
  allowedCidrs: readonly string[];
  /** Opening a connection, TLS included (SYNC_PROVIDER_CONNECT_TIMEOUT_SECONDS). @default 10 s */
  connectTimeoutMs: number;
  /** From sending a request to its answer's headers (SYNC_PROVIDER_HEADERS_TIMEOUT_SECONDS). @default 30 s */
  headersTimeoutMs: number;
  /** Reading an answer's whole body (SYNC_PROVIDER_BODY_TIMEOUT_SECONDS). @default 60 s */
  bodyTimeoutMs: number;
}

export const DEFAULT_OUTBOUND: OutboundSettings = {
  allowInsecure: false,
  allowedHosts: [],
  allowedCidrs: [],
  connectTimeoutMs: 10_000,
  headersTimeoutMs: 30_000,
  bodyTimeoutMs: 60_000,
};

/** Resolves a host name to its addresses (the policy's DNS; tests stub it). */
export type Resolver = (hostname: string) => Promise<readonly LookupAddress[]>;

const systemResolver: Resolver = (hostname) => dnsLookup(hostname, { all: true });

/**
 * A request or connection the policy refused. Its message names the host and the address or rule,
 * never the URL's path or query.
 */
export class OutboundRefusedError extends Error {
  constructor(readonly reason: string) {
    super(`refused to connect: ${reason}`);
    this.name = 'OutboundRefusedError';
  }
}

/** The policy's refusal somewhere in an error's causes (fetch and its callers wrap it). */
export function outboundRefusalIn(err: unknown): OutboundRefusedError | null {
  for (let e = err, depth = 0; e instanceof Error && depth < 8; e = e.cause, depth++) {
    if (e instanceof OutboundRefusedError) return e;
  }
  return null;
}

/** The non-retryable `provider_error` a refused request ends the call with, naming the integration. */
export function outboundRefusedError(integration: string, refused: OutboundRefusedError): NonRetryableError {
  return new NonRetryableError(`${integration}: ${refused.message}`, 'provider_error', { cause: refused });
}

/** An answer whose body took longer than the body timeout to read. */
export class BodyTimeoutError extends Error {
  constructor(ms: number) {
    super(`the answer's body took longer than ${ms} ms to read`);
    this.name = 'BodyTimeoutError';
  }
}

const KIND_NAMES: Record<Exclude<AddressKind, 'public'>, string> = {
  loopback: 'a loopback address',
  private: 'a private address',
  'link-local': 'a link-local address',
  unspecified: 'an unspecified address',
  multicast: 'a multicast address',
  reserved: 'a reserved address',
};

/** The outbound policy of one set of settings; see the module comment. */
export class OutboundPolicy {
  readonly settings: OutboundSettings;
  private readonly hosts: ReadonlySet<string>;
  private readonly blocks: readonly Cidr[];
  private readonly resolve: Resolver;
  private readonly agents = new Map<'https' | 'http', { agent: Agent; dispatcher: Dispatcher }>();

  /** Throws `ValidationError` naming `allowedHosts` / `allowedCidrs` for an entry that is none. */
  constructor(settings: Partial<OutboundSettings> = {}, opts: { resolve?: Resolver } = {}) {
    this.settings = { ...DEFAULT_OUTBOUND, ...settings };
    this.hosts = new Set(this.settings.allowedHosts.map((h) => normalHost(hostEntry(h, 'allowedHosts'))));
    this.blocks = this.settings.allowedCidrs.map((c) => cidrEntry(c, 'allowedCidrs'));
    this.resolve = opts.resolve ?? systemResolver;
  }

  /**
   * What is wrong with sending requests to `url`, or null: its scheme, and its host when that is an
   * IP literal or a loopback name (`localhost`). Other host names are judged when connecting.
   */
  urlProblem(url: URL): string | null {
    const host = url.hostname.toLowerCase();
    if (url.protocol === 'http:') {
      if (!isLoopbackHost(host)) return `must use https: plain http to ${url.host} is refused`;
      if (!this.settings.allowInsecure) {
        const optIn = 'SYNCRELAY_ALLOW_INSECURE_PROVIDER_URLS (local emulators)';
        return `must use https: plain http to ${url.host} only with ${optIn}`;
      }
    } else if (url.protocol !== 'https:') {
      return `must use https, not ${url.protocol}`;
    }
    const literal = addressKind(host) === null ? (isLoopbackName(host) ? '127.0.0.1' : null) : host;
    return literal === null ? null : this.addressProblem(host, literal);
  }

  /** Why `address`, which `hostname` resolved to (or is), may not be connected to; null when it may. */
  addressProblem(hostname: string, address: string): string | null {
    const kind = addressKind(address);
    if (kind === 'public') return null;
    if (kind === null) return `${hostname} resolved to ${address}, which is no IP address`;
    if (this.hosts.has(normalHost(hostname)) || inBlocks(address, this.blocks)) return null;
    if (kind === 'loopback' && this.settings.allowInsecure) return null;
    const at = address === hostname.replace(/^\[|\]$/g, '') ? address : `${hostname} (${address})`;
    const allow =
      kind === 'loopback'
        ? 'SYNCRELAY_PROVIDER_ALLOWED_HOSTS, SYNCRELAY_PROVIDER_ALLOWED_CIDRS or SYNCRELAY_ALLOW_INSECURE_PROVIDER_URLS'
        : 'SYNCRELAY_PROVIDER_ALLOWED_HOSTS or SYNCRELAY_PROVIDER_ALLOWED_CIDRS';
    return `${at} is ${KIND_NAMES[kind]}, refused unless ${allow} allows it`;
  }

  /**
   * The connection lookup (net.connect's `lookup`): resolves `hostname`, then refuses it unless every
   * address it resolved to may be connected to (`plain`: only loopback addresses, for plain http).
   */
  lookup(plain: boolean): LookupFunction {
    return (hostname, options, callback) => {
      this.resolved(hostname, plain, options).then(
        (addresses) => {
          if (options.all) callback(null, addresses);
          else callback(null, addresses[0]!.address, addresses[0]!.family);
        },
        (err: Error) => callback(err as NodeJS.ErrnoException, '', 0),
      );
    };
  }

  private async resolved(hostname: string, plain: boolean, options: LookupOptions): Promise<LookupAddress[]> {
    const all = await this.resolve(hostname);
    for (const { address } of all) {
      const problem =
        this.addressProblem(hostname, address) ??
        (plain && addressKind(address) !== 'loopback'
          ? `${hostname} (${address}) is not loopback: no plain http`
          : null);
      if (problem !== null) throw new OutboundRefusedError(problem);
    }
    const family = options.family === 4 || options.family === 6 ? options.family : 0;
    const usable = all.filter((a) => family === 0 || a.family === family);
    if (usable.length === 0) {
      const what = family === 0 ? 'address' : `IPv${family} address`;
      throw Object.assign(new Error(`${hostname} has no ${what}`), { code: 'ENOTFOUND' });
    }
    return usable;
  }

  /**
   * `fetch` under the policy: the URL is checked before anything is sent, every connection by the
   * lookup, and the connect, headers and body timeouts apply. Redirects are not followed here
   * (call.ts `homeFetch` follows them, each through this fetch).
   */
  readonly fetch: typeof globalThis.fetch = async (input, init) => {
    const url = new URL(input instanceof Request ? input.url : input);
    const problem = this.urlProblem(url);
    if (problem !== null) throw new OutboundRefusedError(problem);
    const dispatcher = this.dispatcher(url.protocol === 'http:' ? 'http' : 'https');
    const request = input instanceof Request ? requestInit(input) : {};
    return undiciFetch(url, { ...request, ...init, dispatcher } as UndiciInit);
  };

  /** Closes the policy's connections (tests; an engine's policy lives as long as its process). */
  async close(): Promise<void> {
    const open = [...this.agents.values()];
    this.agents.clear();
    await Promise.all(open.map(({ agent }) => agent.close()));
  }

  private dispatcher(scheme: 'https' | 'http'): Dispatcher {
    let made = this.agents.get(scheme);
    if (!made) {
      const s = this.settings;
      const agent = new Agent({
        connect: { timeout: s.connectTimeoutMs, lookup: this.lookup(scheme === 'http') },
        headersTimeout: s.headersTimeoutMs,
        bodyTimeout: s.bodyTimeoutMs,
      });
      made = { agent, dispatcher: agent.compose(bodyDeadline(s.bodyTimeoutMs)) };
      this.agents.set(scheme, made);
    }
    return made.dispatcher;
  }
}

/** The global fetch's init, as undici's own fetch reads it (the same fields, typed by undici). */
type UndiciInit = NonNullable<Parameters<typeof undiciFetch>[1]>;

/** What a `Request` given to fetch asks for, besides its URL. */
function requestInit(req: Request): RequestInit {
  const init: RequestInit & { duplex?: 'half' } = { method: req.method, headers: req.headers, signal: req.signal };
  if (req.body !== null) Object.assign(init, { body: req.body, duplex: 'half' });
  return init;
}

/**
 * An interceptor ending a request whose body is not read in full within `ms` of its headers (undici's
 * own body timeout only bounds the pause between two chunks).
 */
function bodyDeadline(ms: number): Dispatcher.DispatcherComposeInterceptor {
  return (dispatch) => (opts, handler) => dispatch(opts, new BodyDeadline(handler, ms));
}

class BodyDeadline implements Dispatcher.DispatchHandler {
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly inner: Dispatcher.DispatchHandler,
    private readonly ms: number,
  ) {}

  onRequestStart(controller: Dispatcher.DispatchController, context: unknown): void {
    this.inner.onRequestStart?.(controller, context);
  }

  onRequestUpgrade(...args: Parameters<NonNullable<Dispatcher.DispatchHandler['onRequestUpgrade']>>): void {
    this.inner.onRequestUpgrade?.(...args);
  }

  onResponseStart(...args: Parameters<NonNullable<Dispatcher.DispatchHandler['onResponseStart']>>): void {
    const [controller, status] = args;
    if (this.timer === undefined && status >= 200) {
      this.timer = setTimeout(() => controller.abort(new BodyTimeoutError(this.ms)), this.ms);
      this.timer.unref();
    }
    this.inner.onResponseStart?.(...args);
  }

  onResponseData(...args: Parameters<NonNullable<Dispatcher.DispatchHandler['onResponseData']>>): void {
    this.inner.onResponseData?.(...args);
  }

  onResponseEnd(...args: Parameters<NonNullable<Dispatcher.DispatchHandler['onResponseEnd']>>): void {
    clearTimeout(this.timer);
    this.inner.onResponseEnd?.(...args);
  }

  onResponseError(...args: Parameters<NonNullable<Dispatcher.DispatchHandler['onResponseError']>>): void {
    clearTimeout(this.timer);
    this.inner.onResponseError?.(...args);
  }
}

/** 127.0.0.0/8, ::1 (any notation), `localhost` and its subdomains. */
function isLoopbackHost(host: string): boolean {
  return addressKind(host) === 'loopback' || isLoopbackName(host);
}

function isLoopbackName(host: string): boolean {
  const h = normalHost(host);
  return h === 'localhost' || h.endsWith('.localhost');
}

/** A host name compared: lower case, without a trailing dot, IPv6 without brackets. */
function normalHost(host: string): string {
  return host
    .toLowerCase()
    .replace(/\.$/, '')
    .replace(/^\[(.*)\]$/, '$1');
}

/**
 * One allowed host, as the URL parser normalizes it (so `0x7f.1` is `127.0.0.1`, `FD00::5` is
 * `[fd00::5]`), without a trailing dot.
 */
function hostEntry(raw: string, field: string): string {
  const text = raw.trim();
  let url: URL | null = null;
  try {
    url = new URL(`https://${isIPv6(text) ? `[${text}]` : text}`);
  } catch {
    // reported below
  }
  if (text === '' || url === null || url.host !== url.hostname || `${url.pathname}${url.search}${url.hash}` !== '/') {
    throw new ValidationError(field, `must be a host name, got ${JSON.stringify(raw.slice(0, 100))}`);
  }
  return url.hostname.replace(/\.$/, '');
}

function cidrEntry(raw: string, field: string): Cidr {
  const cidr = parseCidr(raw);
  if (cidr === null) {
    throw new ValidationError(
      field,
      `must be an address block like 10.0.0.0/8, got ${JSON.stringify(raw.slice(0, 100))}`,
    );
  }
  return cidr;
}

type Env = Record<string, string | undefined>;

/** The policy's settings from the environment; a bad value throws `ValidationError` naming its variable. */
export function outboundSettings(env: Env): OutboundSettings {
  const hosts = list(env, 'SYNCRELAY_PROVIDER_ALLOWED_HOSTS');
  const cidrs = list(env, 'SYNCRELAY_PROVIDER_ALLOWED_CIDRS');
  return {
    allowInsecure: onOff(env, 'SYNCRELAY_ALLOW_INSECURE_PROVIDER_URLS'),
    allowedHosts: hosts.map((h) => hostEntry(h, 'SYNCRELAY_PROVIDER_ALLOWED_HOSTS')),
    allowedCidrs: cidrs.map((c) => cidrEntry(c, 'SYNCRELAY_PROVIDER_ALLOWED_CIDRS').text),
    connectTimeoutMs: seconds(env, 'SYNC_PROVIDER_CONNECT_TIMEOUT_SECONDS', DEFAULT_OUTBOUND.connectTimeoutMs),
    headersTimeoutMs: seconds(env, 'SYNC_PROVIDER_HEADERS_TIMEOUT_SECONDS', DEFAULT_OUTBOUND.headersTimeoutMs),
    bodyTimeoutMs: seconds(env, 'SYNC_PROVIDER_BODY_TIMEOUT_SECONDS', DEFAULT_OUTBOUND.bodyTimeoutMs),
  };
}

function list(env: Env, name: string): string[] {
  return (env[name] ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

function onOff(env: Env, name: string): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '' || raw === 'false' || raw === '0') return false;
  if (raw === 'true' || raw === '1') return true;
  throw new ValidationError(name, `must be true or false (or 1 or 0), got ${JSON.stringify(raw.slice(0, 100))}`);
}

function seconds(env: Env, name: string, defMs: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return defMs;
  const n = raw.trim() === '' ? Number.NaN : Number(raw);
  if (!Number.isFinite(n) || n < 0.001 || n > 86_400) {
    throw new ValidationError(name, `must be a number of seconds from 0.001 to 86400, got ${JSON.stringify(raw)}`);
  }
  return Math.round(n * 1000);
}

let fromProcess: { key: string; policy: OutboundPolicy } | null = null;

/**
 * The policy of this process's environment: what a provider or client built without a policy of
 * its own follows (the engine hands its providers the policy of its settings). Rebuilt when the
 * environment's settings change.
 */
export function processOutboundPolicy(): OutboundPolicy {
  const settings = outboundSettings(process.env);
  const key = JSON.stringify(settings);
  if (fromProcess?.key !== key) fromProcess = { key, policy: new OutboundPolicy(settings) };
  return fromProcess.policy;
}
