/**
 * The webhook benchmark's load: a fixed list of signed GitHub `issues` deliveries (each a unique
 * X-GitHub-Delivery spread over the repositories, a share of them redeliveries of an earlier id with
 * that delivery's own body), signed before the clock starts, then posted by C concurrent clients,
 * each on a keep-alive connection of its own (an undici Client) to one of the P API processes (client
 * k to URL k mod P), each taking the next delivery. The load generator's own CPU time is measured
 * beside, so a reader can see whether it took a core.
 */
import { randomUUID } from 'node:crypto';
import { Client } from 'undici';
import { signWebhookBody } from '../../src/secrets/webhookSecrets.js';
import { Rng } from '../../src/chaos/random.js';
import { quantile, round } from './stats.js';

export interface PlannedDelivery {
  id: string;
  body: string;
  signature: string;
  redelivery: boolean;
}

export interface DeliveryPlan {
  deliveries: PlannedDelivery[];
  unique: number;
  redeliveries: number;
}

/** `n` deliveries over `repos`, about `redeliveryShare` of them an earlier delivery sent again. */
export function planDeliveries(
  n: number,
  repos: readonly string[],
  secret: string,
  seed: number,
  redeliveryShare = 0.05,
): DeliveryPlan {
  const rng = new Rng(seed);
  const out: PlannedDelivery[] = [];
  const earlier: PlannedDelivery[] = [];
  let redeliveries = 0;
  for (let i = 0; i < n; i++) {
    if (i > 0 && rng.next() < redeliveryShare && earlier.length > 0) {
      // Picked among the last few hundred: a redelivery follows its original closely, as GitHub's do.
      const pick = earlier[Math.max(0, earlier.length - 1 - rng.int(0, Math.min(300, earlier.length - 1)))]!;
      out.push({ ...pick, redelivery: true });
      redeliveries += 1;
      continue;
    }
    const repo = repos[i % repos.length]!;
    const body = JSON.stringify(issuesPayload(repo, 1 + rng.int(0, 999), i));
    const d = { id: randomUUID(), body, signature: signWebhookBody(body, secret), redelivery: false };
    out.push(d);
    earlier.push(d);
  }
  return { deliveries: out, unique: n - redeliveries, redeliveries };
}

/** A payload shaped like GitHub's `issues` event (`edited`), with the fields syncrelay reads and the usual others. */
function issuesPayload(repo: string, number: number, i: number): Record<string, unknown> {
  const [owner, name] = repo.split('/');
  const user = { login: `user-${i % 50}`, id: 1000 + (i % 50), type: 'User' };
  return {
    action: 'edited',
    issue: {
      id: 5_000_000 + i,
      number,
      title: `Issue ${number}`,
      state: 'open',
      user,
      labels: [],
      created_at: '2025-01-01T00:00:00Z',
      updated_at: new Date().toISOString(),
      html_url: `https://github.com/${repo}/issues/${number}`,
    },
    changes: { title: { from: `Old title ${number}` } },
    repository: { id: 100 + (i % 997), name, full_name: repo, private: false, owner: { login: owner, id: 1 } },
    organization: { login: owner, id: 1 },
    sender: user,
  };
}

export interface LoadResult {
  concurrency: number;
  /** API processes (URLs) the clients were spread over. */
  processes: number;
  sent: number;
  wallMs: number;
  accepted: number;
  acceptedPerS: number;
  p50Ms: number;
  p95Ms: number;
  p99Ms: number;
  maxMs: number;
  non202: number;
  /** Non-202 answers by status (0: the request failed). */
  statuses: Record<string, number>;
  /** This process's CPU time (process.cpuUsage(), user + system) while posting. */
  cpuMs: number;
}

const HEADERS = {
  'content-type': 'application/json',
  'user-agent': 'GitHub-Hookshot/bench',
  'x-github-event': 'issues',
};

/** One delivery posted on `client`: its status (0 when the request failed). */
async function post(client: Client, path: string, d: PlannedDelivery): Promise<number> {
  try {
    const res = await client.request({
      path,
      method: 'POST',
      headers: { ...HEADERS, 'x-github-delivery': d.id, 'x-hub-signature-256': d.signature },
      body: d.body,
    });
    await res.body.dump();
    return res.statusCode;
  } catch {
    return 0;
  }
}

/**
 * Posts every delivery of `plan` to `path` on the API processes at `urls` with `concurrency`
 * clients (client k on `urls[k mod P]`, a keep-alive connection of its own); times each answer.
 */
export async function postAll(
  urls: readonly string[],
  path: string,
  plan: DeliveryPlan,
  concurrency: number,
): Promise<LoadResult> {
  const clients = Array.from(
    { length: concurrency },
    (_, k) => new Client(urls[k % urls.length]!, { pipelining: 1, keepAliveTimeout: 30_000 }),
  );
  const latencies: number[] = [];
  const statuses: Record<string, number> = {};
  let next = 0;
  const run = async (client: Client) => {
    for (let i = next++; i < plan.deliveries.length; i = next++) {
      const t0 = performance.now();
      const status = await post(client, path, plan.deliveries[i]!);
      if (status === 202) latencies.push(performance.now() - t0);
      else statuses[String(status)] = (statuses[String(status)] ?? 0) + 1;
    }
  };
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  try {
    await Promise.all(clients.map(run));
  } finally {
    await Promise.all(clients.map((c) => c.close()));
  }
  const wallMs = performance.now() - started;
  const cpu = process.cpuUsage(cpuBefore);
  const cpuMs = (cpu.user + cpu.system) / 1000;
  return summary(plan, latencies, { concurrency, processes: urls.length, wallMs, statuses, cpuMs });
}

type Measured = Pick<LoadResult, 'concurrency' | 'processes' | 'wallMs' | 'statuses' | 'cpuMs'>;

/** The answers' figures: `latencies` are the 202s'. */
function summary(plan: DeliveryPlan, latencies: readonly number[], m: Measured): LoadResult {
  const { wallMs } = m;
  const accepted = latencies.length;
  return {
    ...m,
    sent: plan.deliveries.length,
    accepted,
    acceptedPerS: round((accepted / wallMs) * 1000),
    p50Ms: round(quantile(latencies, 0.5)),
    p95Ms: round(quantile(latencies, 0.95)),
    p99Ms: round(quantile(latencies, 0.99)),
    maxMs: round(latencies.reduce((a, b) => Math.max(a, b), 0)),
    non202: plan.deliveries.length - accepted,
  };
}
