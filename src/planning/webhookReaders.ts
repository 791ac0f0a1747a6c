/**
 * The providers whose webhook deliveries syncrelay reads, each with where its signature is and how
 * its delivery is read (./githubWebhooks.ts, ./linearWebhooks.ts, ./jiraWebhooks.ts).
 */
import { githubWebhookReader } from './githubWebhooks.js';
import { jiraWebhookReader } from './jiraWebhooks.js';
import { linearWebhookReader } from './linearWebhooks.js';
import type { WebhookReader } from './webhookPayload.js';

export type { WebhookReader };

const READERS: ReadonlyMap<string, WebhookReader> = new Map(
  [githubWebhookReader, linearWebhookReader, jiraWebhookReader].map((r) => [r.provider, r]),
);

/** The providers that take webhooks. */
export const WEBHOOK_PROVIDERS: readonly string[] = [...READERS.keys()];

/** The reader of `provider`'s deliveries, or null when it sends none syncrelay reads. */
export function webhookReaderOf(provider: string): WebhookReader | null {
  return READERS.get(provider) ?? null;
}
