/**
 * The outbound policy (src/providers/kit/outbound.ts): a provider URL must be https (plain http only
 * to loopback, with the insecure opt-in) and may not reach link-local, private, loopback or
 * unspecified addresses in any notation unless the operator allows them. Refused when an integration
 * is created (400 naming the field), and when a unit calls: after DNS, before connecting, on every
 * redirect (a `provider_error` naming the integration). Every request has connect, headers and body
 * timeouts; one that runs out got no answer; aborting the unit's signal still ends it at once.
 *
 * Every policy here is built explicitly (the suite's SYNCRELAY_ALLOW_INSECURE_PROVIDER_URLS plays no
 * part), and every host name is resolved by a stub: traffic only ever goes to 127.0.0.1.
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import type { LookupAddress } from 'node:dns';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { InProcessBroker } from '../../src/broker/inprocess.js';
import { ManualClock } from '../../src/clock.js';
import { loadSettings } from '../../src/config.js';
import { classifyError, NonRetryableError, ValidationError } from '../../src/errors.js';
import { createGithubClient, createGithubProvider } from '../../src/providers/github/index.js';
import { authorizationFor, createJiraClient, createJiraProvider } from '../../src/providers/jira/index.js';
import { addressKind } from '../../src/providers/kit/addresses.js';
import {
  BodyTimeoutError,
  DEFAULT_OUTBOUND,
  OutboundPolicy,
  OutboundRefusedError,
  outboundSettings,
  type OutboundSettings,
  type Resolver,
} from '../../src/providers/kit/outbound.js';
import { createLinearProvider } from '../../src/providers/linear/index.js';
import type { Provider, UnitContext } from '../../src/sdk/types.js';
import { call, openApiHarness, type ApiHarness } from '../api/helpers.js';

const TOKEN = 'ghp_outbound-test-secret';

/** Each provider's URL setting and a body that would create an integration but for that URL. */
const PROVIDERS = [
  { provider: 'github', field: 'baseUrl', sources: ['acme/app'], datasets: ['work-items'] },
  { provider: 'linear', field: 'apiUrl', sources: ['ENG'], datasets: ['work-items'] },
  { provider: 'jira', field: 'siteUrl', sources: ['ENG'], datasets: ['work-items'] },
] as const;

/** URLs no integration may hold under the default policy (each a site root, so Jira's rule fits). */
const REFUSED = [
  'http://169.254.169.254',
  'https://169.254.169.254',
  'https://10.0.0.1',
  'http://10.0.0.1',
  'https://172.16.5.4',
  'https://192.168.1.1',
  'https://100.64.0.1',
  'https://0x7f.1',
  'https://127.0.0.1:8443',
  'https://2130706433',
  'https://[::ffff:127.0.0.1]',
  'https://[::ffff:7f00:1]',
  'https://[::ffff:a9fe:a9fe]',
  'https://[::1]',
  'https://[fe80::1]',
  'https://[fd00::1]',
  'https://0.0.0.0',
  'https://[::]',
  'https://localhost',
  'http://ghe.example.com',
  'http://api.github.com',
];

const strict = () => new OutboundPolicy();

describe('addresses are classified in every notation', () => {
  /** The kind of the host the WHATWG URL parser makes of `url` (what the engine classifies). */
  const kindOf = (url: string) => addressKind(new URL(url).hostname);

  it.each([
    ['http://0x7f.1', 'loopback'],
    ['http://127.1', 'loopback'],
    ['http://[::ffff:127.0.0.1]', 'loopback'],
    ['http://[::ffff:7f00:1]', 'loopback'],
    ['http://[0:0:0:0:0:ffff:7f00:1]', 'loopback'],
    ['http://[::1]', 'loopback'],
    ['http://0.0.0.0', 'unspecified'],
    ['http://[::]', 'unspecified'],
    ['http://169.254.169.254', 'link-local'],
    ['http://[fe80::1]', 'link-local'],
    ['http://[::ffff:169.254.169.254]', 'link-local'],
    ['http://10.0.0.1', 'private'],
    ['http://172.31.255.255', 'private'],
    ['http://192.168.0.1', 'private'],
    ['http://100.64.0.1', 'private'],
    ['http://[fd00::1]', 'private'],
    ['http://[fc00::1]', 'private'],
    ['http://[::ffff:10.1.2.3]', 'private'],
    ['http://[64:ff9b::a00:1]', 'private'],
    ['http://172.32.0.1', 'public'],
    ['http://100.128.0.1', 'public'],
    ['http://8.8.8.8', 'public'],
    ['http://[2001:db8::1]', 'public'],
    ['http://[2606:4700::1111]', 'public'],
  ])('%s is %s', (url, kind) => {
    expect(kindOf(url)).toBe(kind);
  });

  it('an address the resolver gives is classified as it is', () => {
    expect(addressKind('::ffff:127.0.0.1')).toBe('loopback');
    expect(addressKind('fe80::1%eth0')).toBe('link-local');
    expect(addressKind('2001:db8:85a3::8a2e:370:7334')).toBe('public');
    expect(addressKind('evil.example')).toBeNull();
  });
});

describe('the policy’s settings', () => {
  it('default to https, public addresses, and 10 / 30 / 60 s timeouts', () => {
    expect(outboundSettings({})).toEqual(DEFAULT_OUTBOUND);
    expect(DEFAULT_OUTBOUND).toMatchObject({
      connectTimeoutMs: 10_000,
      headersTimeoutMs: 30_000,
      bodyTimeoutMs: 60_000,
    });
    expect(loadSettings({}).providerOutbound).toEqual(DEFAULT_OUTBOUND);
  });

  it('are read from the environment', () => {
    expect(
      outboundSettings({
        SYNCRELAY_ALLOW_INSECURE_PROVIDER_URLS: '1',
        SYNCRELAY_PROVIDER_ALLOWED_HOSTS: 'GHE.corp.example , jira.corp.example.',
        SYNCRELAY_PROVIDER_ALLOWED_CIDRS: '10.0.0.0/8, fd00::/8',
        SYNC_PROVIDER_CONNECT_TIMEOUT_SECONDS: '2',
        SYNC_PROVIDER_HEADERS_TIMEOUT_SECONDS: '0.5',
        SYNC_PROVIDER_BODY_TIMEOUT_SECONDS: '120',
      }),
    ).toEqual({
      allowInsecure: true,
      allowedHosts: ['ghe.corp.example', 'jira.corp.example'],
      allowedCidrs: ['10.0.0.0/8', 'fd00::/8'],
      connectTimeoutMs: 2000,
      headersTimeoutMs: 500,
      bodyTimeoutMs: 120_000,
    });
  });

  it.each([
    ['SYNCRELAY_ALLOW_INSECURE_PROVIDER_URLS', 'yes'],
    ['SYNCRELAY_PROVIDER_ALLOWED_HOSTS', 'ghe.example.com/api'],
    ['SYNCRELAY_PROVIDER_ALLOWED_HOSTS', 'ghe.example.com:8443'],
    ['SYNCRELAY_PROVIDER_ALLOWED_CIDRS', '10.0.0.0/33'],
    ['SYNCRELAY_PROVIDER_ALLOWED_CIDRS', 'intranet'],
    ['SYNC_PROVIDER_CONNECT_TIMEOUT_SECONDS', '0'],
    ['SYNC_PROVIDER_HEADERS_TIMEOUT_SECONDS', 'soon'],
    ['SYNC_PROVIDER_BODY_TIMEOUT_SECONDS', '-1'],
  ])('%s=%j is refused naming the setting', (name, value) => {
    let caught: unknown;
    try {
      loadSettings({ [name]: value });
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(ValidationError);
    expect((caught as ValidationError).field).toBe(name);
  });
});

describe('a refused provider URL is a 400 naming the field when the integration is created', () => {
  let h: ApiHarness;
  beforeAll(async () => {
    // The harness's settings come from an explicit environment: no insecure opt-in, nothing allowed.
    h = await openApiHarness({ broker: new InProcessBroker() });
  });
  afterAll(async () => {
    await h?.close();
  });

  const create = (provider: string, field: string, url: string, rest: object) =>
    call(h.url, 'POST', '/api/v1/integrations', {
      token: h.tokens.admin,
      body: { ...rest, provider, name: `n-${provider}-${url}`, config: { [field]: url } },
    });

  it.each(PROVIDERS.flatMap((p) => REFUSED.map((url) => [p.provider, url, p] as const)))(
    '%s: %s',
    async (_, url, { provider, field, sources, datasets }) => {
      const r = await create(provider, field, url, { sources, datasets });
      expect(r.status).toBe(400);
      expect(r.body.error.details.field).toBe(`config.${field}`);
      expect(r.body.error.message).toContain(`config.${field}`);
    },
  );

  it('a public https URL is still accepted', async () => {
    const r = await create('github', 'baseUrl', 'https://ghe.example.com/api/v3', {
      sources: ['acme/app'],
      datasets: ['work-items'],
    });
    expect(r.status).toBe(201);
  });

  it('the engine’s settings may allow private hosts by name or by block', async () => {
    const settings = loadSettings({
      SYNCRELAY_ALLOW_FAULT_INJECTION: 'true',
      SYNCRELAY_PROVIDER_ALLOWED_HOSTS: '10.9.8.7,[fd00::5]',
      SYNCRELAY_PROVIDER_ALLOWED_CIDRS: '192.168.0.0/16,172.16.0.0/12',
    });
    const allowed = await openApiHarness({ broker: new InProcessBroker(), settings });
    try {
      const post = (provider: string, field: string, url: string, rest: object) =>
        call(allowed.url, 'POST', '/api/v1/integrations', {
          token: allowed.tokens.admin,
          body: { ...rest, provider, name: `n-${url}`, config: { [field]: url } },
        });
      const gh = { sources: ['acme/app'], datasets: ['work-items'] };
      expect((await post('github', 'baseUrl', 'https://192.168.1.20/api/v3', gh)).status).toBe(201);
      expect((await post('github', 'baseUrl', 'https://10.9.8.7/api/v3', gh)).status).toBe(201);
      expect((await post('github', 'baseUrl', 'https://[fd00::5]/api/v3', gh)).status).toBe(201);
      const jira = { sources: ['ENG'], datasets: ['work-items'] };
      expect((await post('jira', 'siteUrl', 'https://172.20.0.9', jira)).status).toBe(201);
      // Still refused: other private addresses, and plain http.
      expect((await post('github', 'baseUrl', 'https://10.0.0.1/api/v3', gh)).status).toBe(400);
      expect((await post('jira', 'siteUrl', 'http://172.20.0.9', jira)).status).toBe(400);
    } finally {
      await allowed.close();
    }
  });
});

describe('validateConfig refuses the same URLs for each provider', () => {
  const providers: Record<string, (outbound: OutboundPolicy) => Provider> = {
    github: (outbound) => createGithubProvider({ outbound }),
    linear: (outbound) => createLinearProvider({ outbound }),
    jira: (outbound) => createJiraProvider({ outbound }),
  };

  it.each(PROVIDERS.flatMap((p) => REFUSED.map((url) => [p.provider, url, p.field] as const)))(
    '%s: %s',
    (provider, url, field) => {
      const p = providers[provider]!(strict());
      expect(() => p.validateConfig!({ [field]: url })).toThrow(
        expect.objectContaining({ field: `config.${field}` }) as Error,
      );
    },
  );

  it('plain http reaches only loopback, and only with the insecure opt-in', () => {
    const insecure = new OutboundPolicy({ allowInsecure: true });
    for (const [provider, , field] of PROVIDERS.map((p) => [p.provider, null, p.field] as const)) {
      const open = providers[provider]!(insecure);
      for (const url of ['http://127.0.0.1:8080', 'http://localhost:9', 'http://[::1]:9', 'http://0x7f.1:9']) {
        expect(() => open.validateConfig!({ [field]: url })).not.toThrow();
      }
      for (const url of ['http://ghe.example.com', 'http://10.0.0.1', 'http://169.254.169.254', 'https://10.0.0.1']) {
        expect(() => open.validateConfig!({ [field]: url })).toThrow(
          expect.objectContaining({ field: `config.${field}` }) as Error,
        );
      }
      expect(() => providers[provider]!(strict()).validateConfig!({ [field]: 'http://127.0.0.1:8080' })).toThrow(
        /must use https/,
      );
    }
  });

  it('allowed hosts and blocks let a private host pass, and nothing else', () => {
    const policy = new OutboundPolicy({ allowedHosts: ['10.1.1.1'], allowedCidrs: ['192.168.0.0/24', 'fd00::/8'] });
    const gh = createGithubProvider({ outbound: policy });
    for (const url of [
      'https://10.1.1.1',
      'https://192.168.0.77',
      'https://[fd00::1]',
      'https://[::ffff:192.168.0.3]',
    ]) {
      expect(() => gh.validateConfig!({ baseUrl: url })).not.toThrow();
    }
    for (const url of ['https://10.1.1.2', 'https://192.168.1.1', 'https://169.254.169.254', 'http://10.1.1.1']) {
      expect(() => gh.validateConfig!({ baseUrl: url })).toThrow(
        expect.objectContaining({ field: 'config.baseUrl' }) as Error,
      );
    }
  });

  it('a stored URL the policy now refuses fails the unit as a provider_error naming the integration', async () => {
    const gh = createGithubProvider({ outbound: strict() });
    const ctx = {
      integration: { name: 'acme', config: { baseUrl: 'https://169.254.169.254/api/v3' } },
      unit: { datasetKey: 'work-items' },
    } as unknown as UnitContext;
    const err = await gh.runUnit(ctx).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(NonRetryableError);
    expect(classifyError(err)).toBe('provider_error');
    expect((err as Error).message).toContain('github integration "acme"');
    expect((err as Error).message).toContain('169.254.169.254');
  });
});

// ---------------------------------------------------------------------------------------------
// When a unit calls: after DNS, before connecting; every redirect; timeouts.

const servers: Server[] = [];
const policies: OutboundPolicy[] = [];
afterEach(async () => {
  await Promise.all(policies.splice(0).map((p) => p.close()));
  for (const s of servers.splice(0)) s.closeAllConnections();
  await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
});

/** A policy with a stubbed resolver that records every name it is asked for. */
function stubbed(settings: Partial<OutboundSettings>, answer: (name: string, n: number) => LookupAddress[]) {
  const asked: string[] = [];
  const resolve: Resolver = (name) => {
    asked.push(name);
    return Promise.resolve(answer(name, asked.length));
  };
  const policy = new OutboundPolicy(settings, { resolve });
  policies.push(policy);
  return { policy, asked };
}

/** A server on 127.0.0.1 counting requests and answering each with `answer`. */
async function serve(answer: (path: string, res: ServerResponse) => void): Promise<{ port: number; paths: string[] }> {
  const paths: string[] = [];
  const server = createServer((req, res) => {
    paths.push(req.url ?? '');
    req.resume();
    answer(req.url ?? '', res);
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as AddressInfo).port, paths };
}

/** Counts the connections undici opens while `run` runs. */
async function connectionsDuring(run: () => Promise<void>): Promise<number> {
  let connected = 0;
  const onConnected = () => void connected++;
  subscribe('undici:client:connected', onConnected);
  try {
    await run();
  } finally {
    unsubscribe('undici:client:connected', onConnected);
  }
  return connected;
}

const common = (subject: string, policy: OutboundPolicy, signal = new AbortController().signal) => ({
  subject,
  clock: new ManualClock(Date.UTC(2026, 2, 2, 12)),
  signal,
  logger: pino({ level: 'silent' }),
  retry: { attempts: 2, baseDelayMs: 1, maxDelayMs: 2 },
  fetch: policy.fetch,
});

function jiraClient(subject: string, siteUrl: string, policy: OutboundPolicy, signal?: AbortSignal) {
  return createJiraClient({
    ...common(subject, policy, signal),
    siteUrl,
    authorization: authorizationFor(`me@acme.io:${TOKEN}`, subject),
    budget: null,
  });
}

async function rejection(p: Promise<unknown>): Promise<Error> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(Error);
  return err as Error;
}

function causes(err: unknown): unknown[] {
  const out: unknown[] = [];
  for (let e = err; e instanceof Error && out.length < 10; e = e.cause) out.push(e);
  return out;
}

/** A refusal as the unit sees it: non-retryable, naming the integration and `address`, never the query or token. */
function expectRefusal(err: Error, subject: string, address: string): void {
  expect(err).toBeInstanceOf(NonRetryableError);
  expect(classifyError(err)).toBe('provider_error');
  expect(err.message).toContain(subject);
  expect(err.message).toContain(address);
  expect(err.message).not.toContain('secret=');
  expect(err.message).not.toContain(TOKEN);
  expect(causes(err).some((e) => e instanceof OutboundRefusedError)).toBe(true);
}

describe('a host name is judged by the addresses it resolves to, before connecting', () => {
  it.each(['169.254.169.254', '10.0.0.1', '::ffff:169.254.169.254', 'fd00::1'])(
    'evil.example → %s: refused, never connected to, not retried',
    async (address) => {
      const { policy, asked } = stubbed({}, () => [{ address, family: address.includes(':') ? 6 : 4 }]);
      const subject = 'jira integration "acme"';
      const client = jiraClient(subject, 'https://evil.example', policy);
      let err: Error | null = null;
      const connected = await connectionsDuring(async () => {
        err = await rejection(client.get('/rest/api/3/search', { jql: 'x', secret: 'y' }));
      });
      expectRefusal(err!, subject, address);
      expect(asked).toEqual(['evil.example']);
      expect(connected).toBe(0);
    },
  );

  it('GitHub (through Octokit): the same refusal', async () => {
    const { policy, asked } = stubbed({}, () => [{ address: '169.254.169.254', family: 4 }]);
    const subject = 'github integration "acme"';
    const octokit = createGithubClient({
      ...common(subject, policy),
      baseUrl: 'https://evil.example/api/v3',
      auth: { token: TOKEN },
      throttleKey: 'outbound-test',
      budget: null,
    });
    const err = await rejection(octokit.request('GET /repos/{owner}/{repo}', { owner: 'a', repo: 'b' }));
    expectRefusal(err, subject, '169.254.169.254');
    expect(asked).toEqual(['evil.example']);
  });

  it('one refused address among public ones refuses the host', async () => {
    const { policy } = stubbed({}, () => [
      { address: '93.184.216.34', family: 4 },
      { address: '10.0.0.1', family: 4 },
    ]);
    const err = await rejection(jiraClient('jira integration "acme"', 'https://evil.example', policy).get('/x'));
    expectRefusal(err, 'jira integration "acme"', '10.0.0.1');
  });

  it('an allowed host or block is connected to (here: loopback, plain http, on the emulators’ opt-in)', async () => {
    const site = await serve((_, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":1}'));
    const { policy, asked } = stubbed({ allowInsecure: true }, () => [{ address: '127.0.0.1', family: 4 }]);
    const client = jiraClient('jira integration "acme"', `http://localhost:${site.port}`, policy);
    const connected = await connectionsDuring(async () => {
      expect(await client.get('/rest/api/3/myself')).toEqual({ ok: 1 });
    });
    expect(asked).toEqual(['localhost']);
    expect(connected).toBe(1); // the count the refusals above are held to does see connections
  });

  it('a redirect on the origin whose host now resolves to a private address is refused', async () => {
    const site = await serve((path, res) => {
      // `connection: close`: the redirect's request needs a new connection, so a new lookup.
      if (path.startsWith('/rest/api/3/myself'))
        res.writeHead(302, { location: '/moved?secret=1', connection: 'close' }).end();
      else res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
    const { policy, asked } = stubbed({ allowInsecure: true }, (_, n) => [
      n === 1 ? { address: '127.0.0.1', family: 4 } : { address: '10.0.0.1', family: 4 },
    ]);
    const subject = 'jira integration "acme"';
    const err = await rejection(jiraClient(subject, `http://localhost:${site.port}`, policy).get('/rest/api/3/myself'));
    expectRefusal(err, subject, '10.0.0.1');
    expect(asked).toEqual(['localhost', 'localhost']);
    expect(site.paths).toEqual(['/rest/api/3/myself']);
  });

  it('an IP literal is refused before anything is sent, on a redirect too', async () => {
    const { policy, asked } = stubbed({}, () => []);
    const subject = 'jira integration "acme"';
    for (const url of [
      'https://169.254.169.254',
      'https://0x7f.1',
      'https://[::ffff:7f00:1]',
      'http://ghe.example.com',
    ]) {
      const err = await rejection(jiraClient(subject, url, policy).get('/x'));
      expectRefusal(err, subject, new URL(url).hostname);
    }
    expect(asked).toEqual([]);
  });
});

describe('every request has timeouts', () => {
  it('headers that never come: no answer after the headers timeout, retried, then provider_error', async () => {
    const site = await serve(() => {
      // accepts, reads the request, never answers
    });
    const { policy } = stubbed({ allowInsecure: true, headersTimeoutMs: 200 }, () => [
      { address: '127.0.0.1', family: 4 },
    ]);
    const subject = 'jira integration "acme"';
    const started = performance.now();
    const err = await rejection(jiraClient(subject, `http://localhost:${site.port}`, policy).get('/rest/api/3/myself'));
    const took = performance.now() - started;
    expect(err).toBeInstanceOf(NonRetryableError);
    expect(err.message).toBe(`${subject}: GET /rest/api/3/myself: provider unavailable after retries`);
    expect(causes(err).some((e) => (e as { code?: string }).code === 'UND_ERR_HEADERS_TIMEOUT')).toBe(true);
    expect(site.paths).toHaveLength(2); // both attempts sent, each timed out
    expect(took).toBeGreaterThanOrEqual(2 * 190);
    expect(took).toBeLessThan(5000);
  });

  it('a body that trickles forever: no answer after the body timeout (total, not idle)', async () => {
    const timers: NodeJS.Timeout[] = [];
    const site = await serve((_, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('[');
      const t = setInterval(() => (res.destroyed ? clearInterval(t) : res.write(' ')), 20);
      timers.push(t);
    });
    const { policy } = stubbed({ allowInsecure: true, bodyTimeoutMs: 300 }, () => [
      { address: '127.0.0.1', family: 4 },
    ]);
    const subject = 'jira integration "acme"';
    const started = performance.now();
    try {
      const err = await rejection(
        jiraClient(subject, `http://localhost:${site.port}`, policy).get('/rest/api/3/myself'),
      );
      const took = performance.now() - started;
      expect(err).toBeInstanceOf(NonRetryableError);
      expect(err.message).toBe(`${subject}: GET /rest/api/3/myself: provider unavailable after retries`);
      expect(site.paths).toHaveLength(2);
      expect(took).toBeGreaterThanOrEqual(2 * 290);
      expect(took).toBeLessThan(5000);
    } finally {
      timers.forEach(clearInterval);
    }
  });

  it('the body deadline ends the read itself (a policy fetch, read directly)', async () => {
    const timers: NodeJS.Timeout[] = [];
    const site = await serve((_, res) => {
      res.writeHead(200);
      const t = setInterval(() => (res.destroyed ? clearInterval(t) : res.write('.')), 20);
      timers.push(t);
    });
    const { policy } = stubbed({ allowInsecure: true, bodyTimeoutMs: 150 }, () => [
      { address: '127.0.0.1', family: 4 },
    ]);
    try {
      const res = await policy.fetch(`http://localhost:${site.port}/`);
      const err = await rejection(res.text());
      expect(causes(err).some((e) => e instanceof BodyTimeoutError)).toBe(true);
    } finally {
      timers.forEach(clearInterval);
    }
  });

  it('aborting the unit’s signal ends a call waiting for headers at once', async () => {
    let seen!: () => void;
    const arrived = new Promise<void>((resolve) => (seen = resolve));
    const site = await serve(() => seen());
    const { policy } = stubbed({ allowInsecure: true }, () => [{ address: '127.0.0.1', family: 4 }]);
    const unit = new AbortController();
    const pending = rejection(
      jiraClient('jira integration "acme"', `http://localhost:${site.port}`, policy, unit.signal).get('/x'),
    );
    await arrived;
    const reason = new Error('unit cancelled');
    const started = performance.now();
    unit.abort(reason);
    expect(await pending).toBe(reason);
    expect(performance.now() - started).toBeLessThan(1000);
    expect(site.paths).toHaveLength(1);
  });
});
