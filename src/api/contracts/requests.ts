/** What clients send: request bodies and query strings, strict (an unknown field is a 400). */
import { z } from 'zod';
import { JOB_RUN_STATUSES, TRIGGERS, UNIT_STATUSES } from '../../domain/statuses.js';
import { INTEGRATION_LIMITS as L, PROVIDER_NAME_RE, PROVIDER_NAME_RULE } from '../../planning/integrations.js';
import { CREDENTIAL_MAX_LENGTH, credentialProblem } from '../../secrets/credentials.js';
import { CursorText, IsoTime, JsonObject, Limit, text, Uuid } from './common.js';

/**
 * A credential: write-only text of at most CREDENTIAL_MAX_LENGTH characters without control
 * characters. The messages never quote the value (it is a secret); no example is documented.
 */
export const CredentialText = z
  .string({ error: 'must be a string' })
  .superRefine((s, ctx) => {
    const problem = credentialProblem(s);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  })
  .meta({
    description:
      `write-only: the integration's credential (e.g. an API token), at most ${CREDENTIAL_MAX_LENGTH} ` +
      'characters, no control characters; stored encrypted, never returned',
    format: 'password',
    writeOnly: true,
  });

export const CredentialBody = z.strictObject({ credential: CredentialText }).meta({ id: 'CredentialRequest' });

const DatasetKeys = z.array(text(L.datasetKey)).max(L.datasets, `must list at most ${L.datasets} datasets`);

/**
 * The sources: a list of keys, or `"all"` for a provider that finds them (a GitHub App integration:
 * the installation's repositories). A bad list is refused naming its first problem.
 */
const SourceKeys = z
  .union([z.array(text(L.sourceKey)).max(L.sources, `must list at most ${L.sources} sources`), z.literal('all')], {
    error: (issue) => {
      const first = issue.errors?.[0]?.[0];
      if (first && first.code !== 'invalid_type') return first.message;
      return 'must be a list of source keys, or "all" (a provider that finds its sources, e.g. a GitHub App)';
    },
  })
  .meta({
    description:
      'source keys (repositories, projects, teams); or "all": the provider finds them before each run ' +
      "(a GitHub App integration: its installation's repositories)",
    example: ['team-a', 'team-b'],
  });

export const NewIntegrationBody = z
  .strictObject({
    provider: z
      .string()
      .regex(PROVIDER_NAME_RE, PROVIDER_NAME_RULE)
      .meta({ description: 'a registered provider', example: 'synthetic' }),
    name: text(L.name).meta({ example: "Acme's Linear" }),
    sources: SourceKeys,
    datasets: DatasetKeys.min(1, 'must list at least one dataset').meta({ example: ['teams', 'work-items'] }),
    config: JsonObject.optional().meta({
      description:
        "the provider's settings, bounded by the provider (the synthetic provider's fault knobs failRate, " +
        'rateLimitRate, hangRate and hangMs need a server running with SYNCRELAY_ALLOW_FAULT_INJECTION=true)',
      example: { itemsPerDay: 5 },
    }),
    credential: CredentialText.optional(),
  })
  .meta({ id: 'NewIntegration' });

export const SyncBody = z
  .strictObject({
    mode: z.enum(['incremental', 'full_resync', 'verify']).meta({
      description:
        'incremental (from the watermark), full_resync (the initial depth to now) or verify (compare the ' +
        "provider's ids and update times with the store, for the datasets whose provider declares verifies)",
    }),
    force: z.boolean().optional().meta({ description: 'start even if a run of this mode has not finished' }),
  })
  .meta({ id: 'SyncRequest' });

export const BackfillBody = z
  .strictObject({
    since: IsoTime.meta({ description: 'window start (inclusive)', example: '2026-01-01T00:00:00Z' }),
    before: IsoTime.meta({ description: 'window end (exclusive); later than since', example: '2026-02-01T00:00:00Z' }),
    datasets: DatasetKeys.min(1, 'must list at least one dataset')
      .optional()
      .meta({ description: 'only these enabled datasets (default: every enabled dataset)' }),
    force: z.boolean().optional().meta({ description: 'start even if a backfill has not finished' }),
  })
  .meta({ id: 'BackfillRequest' });

/** Cancel takes no body; an empty object is accepted too. */
export const CancelBody = z.strictObject({}).optional();

export const JobRunQuery = z.strictObject({
  status: z.enum(JOB_RUN_STATUSES).optional(),
  integration_id: Uuid.optional(),
  triggered_by: z.enum(TRIGGERS).optional(),
  created_after: IsoTime.optional().meta({ description: 'created at or after this time' }),
  created_before: IsoTime.optional().meta({ description: 'created before this time' }),
  cursor: CursorText.optional(),
  limit: Limit.optional(),
});

export const UnitQuery = z.strictObject({
  status: z.enum(UNIT_STATUSES).optional(),
  cursor: CursorText.optional(),
  limit: Limit.optional(),
});

export const PassQuery = z.strictObject({ limit: Limit.optional() });

/** DELETE /integrations/:id: `purge_data=true` also deletes its synced data (normalized tables, metrics). */
export const IntegrationDeleteQuery = z.strictObject({
  purge_data: z
    .enum(['true', 'false'])
    .optional()
    .meta({ description: 'true: also delete its synced data and metrics (default false: they stay)' }),
});
