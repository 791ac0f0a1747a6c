/**
 * The source a webhook delivery is about: the key it names, or, when it names only a Linear team's
 * id or a work item's id, the key the normalized store has for that (a team or work item never
 * synced names no source: the delivery arms nothing, and the scheduled polls read it).
 */
import type { Tx } from '../db/types.js';
import { storedTeamKey, storedWorkItemContainer } from '../sinks/normalized/lookups.js';
import type { IntegrationRow } from '../store/integrations.js';
import type { WebhookDelivery } from './webhookPayload.js';

export async function sourceKeyOf(
  tx: Tx,
  integration: IntegrationRow,
  d: Pick<WebhookDelivery, 'source' | 'sourceHint'>,
): Promise<string | null> {
  if (d.source !== null || d.sourceHint === null) return d.source;
  const scope = { orgId: integration.org_id, integrationId: integration.id, provider: integration.provider };
  return d.sourceHint.kind === 'team-id'
    ? storedTeamKey(tx, scope, d.sourceHint.id)
    : storedWorkItemContainer(tx, scope, d.sourceHint.id);
}
