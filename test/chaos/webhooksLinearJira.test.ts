/**
 * The chaos webhook producer for Linear and Jira: what each delivery builder makes is what the
 * API's own readers accept (signature under the integration's secret, then the reader), a Linear
 * retry is stamped and signed again (a minute later its first stamp is refused), a Jira retry
 * carries its count. The bounded runs of `syncrelay chaos --provider linear|jira --webhooks` are in
 * ./webhooks.test.ts, beside GitHub's.
 */
import { describe, expect, it } from 'vitest';
import { judgeWebhooks, type WebhookFacts } from '../../src/chaos/checkWebhooks.js';
import { deliveryBuilder, type Delivery, type WebhookIssue } from '../../src/chaos/webhookDeliveries.js';
import { readJiraDelivery } from '../../src/planning/jiraWebhooks.js';
import { readLinearDelivery, WEBHOOK_MAX_AGE_MS } from '../../src/planning/linearWebhooks.js';
import { webhookReaderOf } from '../../src/planning/webhookReaders.js';
import { StaleDelivery } from '../../src/planning/webhookPayload.js';
import { verifyWebhookSignature } from '../../src/secrets/webhookSecrets.js';

const SECRET = 'chaos-webhook-secret-0123456789';
const T0 = Date.parse('2030-01-01T00:00:00.000Z');

const LINEAR_ISSUE: WebhookIssue = {
  source: 'ENG',
  sourceId: '6f1c1e2a-3b4d-4e5f-8a9b-0c1d2e3f4a5b',
  id: '117a0edc-b7c4-4293-b39f-b826416b03a5',
  key: 'ENG-150',
  number: 150,
};
const JIRA_ISSUE: WebhookIssue = { source: 'OPS', sourceId: '10001', id: '10397', key: 'OPS-133', number: 133 };

/** Whether the API's check of `provider`'s signature header passes for `d` under SECRET. */
function signed(provider: string, d: Delivery): boolean {
  const reader = webhookReaderOf(provider)!;
  const header = d.headers[reader.signature.header];
  return verifyWebhookSignature(Buffer.from(d.body), header, [SECRET], reader.signature.prefix);
}

describe('the Linear delivery builder', () => {
  const builder = deliveryBuilder('linear', SECRET);

  it('builds a signed Issue update the API reads as the issue of its team', () => {
    const d = builder.build(LINEAR_ISSUE, T0);
    expect(signed('linear', d)).toBe(true);
    const read = readLinearDelivery(d.headers, Buffer.from(d.body), new Date(T0 + 1000));
    expect(read).toMatchObject({
      deliveryId: d.id,
      event: 'Issue',
      action: 'update',
      source: 'ENG',
      datasets: expect.arrayContaining(['work-items']) as unknown,
      deletesWorkItem: null,
    });
    expect(read.summary).toEqual({ id: LINEAR_ISSUE.id, identifier: 'ENG-150' });
  });

  it('stamps and signs a retry again, with the same id: a minute later the first stamp is refused', () => {
    const first = builder.build(LINEAR_ISSUE, T0);
    const later = T0 + WEBHOOK_MAX_AGE_MS + 30_000;
    expect(() => readLinearDelivery(first.headers, Buffer.from(first.body), new Date(later))).toThrow(StaleDelivery);
    const retry = builder.resend(first, 1, later);
    expect(retry.id).toBe(first.id);
    expect(retry.headers['linear-delivery']).toBe(first.id);
    expect(retry.headers['linear-signature']).not.toBe(first.headers['linear-signature']);
    expect(signed('linear', retry)).toBe(true);
    expect(readLinearDelivery(retry.headers, Buffer.from(retry.body), new Date(later)).deliveryId).toBe(first.id);
  });

  it('names the team by id too (what the API resolves when the key is missing)', () => {
    const d = builder.build(LINEAR_ISSUE, T0);
    const payload = JSON.parse(d.body) as { data: Record<string, unknown> };
    expect(payload.data.teamId).toBe(LINEAR_ISSUE.sourceId);
    delete payload.data.team;
    const read = readLinearDelivery(d.headers, Buffer.from(JSON.stringify(payload)), new Date(T0));
    expect(read.sourceHint).toEqual({ kind: 'team-id', id: LINEAR_ISSUE.sourceId });
  });
});

describe('the Jira delivery builder', () => {
  const builder = deliveryBuilder('jira', SECRET);

  it('builds a signed jira:issue_updated the API reads as the issue of its project', () => {
    const d = builder.build(JIRA_ISSUE, T0);
    expect(d.headers['x-hub-signature']).toMatch(/^sha256=[0-9a-f]{64}$/);
    expect(signed('jira', d)).toBe(true);
    expect(d.headers['x-atlassian-webhook-retry']).toBeUndefined();
    const read = readJiraDelivery(d.headers, Buffer.from(d.body));
    expect(read).toMatchObject({
      deliveryId: d.id,
      event: 'jira:issue_updated',
      action: 'issue_updated',
      source: 'OPS',
      namesWorkItem: '10397',
      deletesWorkItem: null,
    });
    expect(read.summary).toEqual({ issue_id: '10397', key: 'OPS-133' });
  });

  it('sends a retry with the same id, body and signature and its retry count', () => {
    const first = builder.build(JIRA_ISSUE, T0);
    const retry = builder.resend(first, 2, T0 + 120_000);
    expect(retry.body).toBe(first.body);
    expect(retry.headers['x-atlassian-webhook-identifier']).toBe(first.id);
    expect(retry.headers['x-atlassian-webhook-retry']).toBe('2');
    expect(signed('jira', retry)).toBe(true);
    expect(readJiraDelivery(retry.headers, Buffer.from(retry.body)).deliveryId).toBe(first.id);
  });
});

describe('the GitHub delivery builder', () => {
  it('still builds what the API reads, and a redelivery is the same post', () => {
    const builder = deliveryBuilder('github', SECRET);
    const d = builder.build({ source: 'acme/api', sourceId: null, id: '7', key: '7', number: 7 }, T0);
    expect(signed('github', d)).toBe(true);
    const read = webhookReaderOf('github')!.read(d.headers, Buffer.from(d.body), new Date(T0));
    expect(read).toMatchObject({ deliveryId: d.id, event: 'issues', source: 'acme/api' });
    expect(builder.resend(d, 1, T0 + 60_000)).toEqual(d);
  });
});

describe('the webhook invariant over a team or project key', () => {
  /** One Linear delivery of team ENG that armed r1, which read the team `read` (lower-cased, as loaded). */
  function facts(read: string): WebhookFacts {
    const at = new Date(T0);
    return {
      deliveries: [
        { delivery_id: 'd1', status: 'received', outcome: 'armed', source: 'ENG', sync_run_id: 'r1', received_at: at },
      ],
      runs: new Map([
        ['r1', { id: 'r1', status: 'success', triggered_by: 'webhook', left_planned: new Date(T0 + 1000) }],
      ]),
      reads: new Map([[`r1 ${read}`, new Date(T0 + 1200)]]),
      pendingRows: 0,
    };
  }
  const input = { integrationId: 'i1', debounceMs: 1000, accepted: new Map([['d1', 1]]), summary: 'hand-built' };

  it('passes a delivery whose run read its team, and fails one whose run read another team only', () => {
    expect(judgeWebhooks(facts('eng'), input).ok).toBe(true);
    const r = judgeWebhooks(facts('ops'), input);
    expect(r.ok).toBe(false);
    expect(r.examples.join('\n')).toMatch(/delivery d1 .*its run r1 planned no unit of ENG/);
  });
});
