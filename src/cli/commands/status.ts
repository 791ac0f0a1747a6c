/**
 * `syncrelay status [--integration ID] [--org ORG] [--json]`: how fresh each source × dataset is —
 * one line each, worst first (failing, deferred by a rate limit, catching up, never synced, fresh),
 * every line but a fresh one marked `!`.
 */
import type { Command } from 'commander';
import { readIntegrationFreshness, type IntegrationFreshness } from '../../api/routes/freshness.js';
import { FRESHNESS_STATES, type FreshnessItem } from '../../domain/freshness.js';
import type { EngineContext } from '../../context.js';
import { getIntegration, listIntegrations, type IntegrationRow } from '../../store/integrations.js';
import { uuid } from '../args.js';
import { CliError, isoOrDash, printJson, printLine, printTable } from '../output.js';
import { withSession } from '../session.js';

interface StatusOptions {
  integration?: string;
  org?: string;
  json?: boolean;
}

/** The integrations to report: the one asked for, else every one (of `org`, when given). */
async function integrationsOf(ctx: EngineContext, opts: StatusOptions): Promise<IntegrationRow[]> {
  if (opts.integration === undefined) return listIntegrations(ctx.db, opts.org ?? null);
  const row = await getIntegration(ctx.db, opts.integration, opts.org === undefined ? {} : { orgId: opts.org });
  if (!row) throw new CliError(`no integration ${opts.integration}`);
  return [row];
}

/** A lag as `45 s`, `12 min`, `5 h 04 min` or `3 d 02 h`. */
export function formatLag(ms: number | null): string {
  if (ms === null) return '-';
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s} s`;
  const min = Math.floor(s / 60);
  if (min < 60) return `${min} min`;
  const h = Math.floor(min / 60);
  if (h < 48) return `${h} h ${String(min % 60).padStart(2, '0')} min`;
  return `${Math.floor(h / 24)} d ${String(h % 24).padStart(2, '0')} h`;
}

/** What else a row's state says: the error category, until when it waits, when it catches up. */
function detailOf(i: FreshnessItem): string | null {
  if (i.state === 'failing') return `${i.last_error_category ?? 'unknown'} in run ${i.last_error_run_id ?? '-'}`;
  if (i.state === 'deferred_by_budget') return `rate limit until ${isoOrDash(i.deferred_until)}`;
  if (i.state === 'catching_up') return i.catch_up_eta ? `caught up ~${isoOrDash(i.catch_up_eta)}` : 'no estimate';
  return null;
}

/** Every report's rows, worst first across integrations. */
function rowsOf(reports: readonly IntegrationFreshness[]): (FreshnessItem & { integration: string })[] {
  const rank = (i: FreshnessItem) => FRESHNESS_STATES.indexOf(i.state);
  return reports.flatMap((r) => r.items.map((i) => ({ ...i, integration: r.name }))).sort((a, b) => rank(a) - rank(b));
}

function printReports(reports: readonly IntegrationFreshness[]): void {
  for (const r of reports) {
    const basis = r.max_lag_basis === 'schedule' ? 'twice the schedule interval' : 'SYNC_FRESHNESS_MAX_LAG_SECONDS';
    const counts = FRESHNESS_STATES.filter((s) => r.counts[s] > 0).map((s) => `${r.counts[s]} ${s}`);
    printLine(
      `${r.name} (${r.integration_id}, ${r.provider}): ${counts.join(' · ') || 'no source'}; ` +
        `fresh within ${formatLag(r.max_lag_ms)} (${basis})`,
    );
  }
  printLine();
  printTable(rowsOf(reports), [
    { header: '', value: (i) => (i.state === 'fresh' ? '' : '!') },
    { header: 'integration', value: (i) => i.integration },
    { header: 'source', value: (i) => i.source_key },
    { header: 'dataset', value: (i) => i.dataset_key },
    { header: 'state', value: (i) => i.state },
    { header: 'lag', value: (i) => formatLag(i.lag_ms), align: 'right' },
    { header: 'watermark', value: (i) => isoOrDash(i.watermark_at) },
    { header: 'last success', value: (i) => isoOrDash(i.last_success_at) },
    { header: 'detail', value: detailOf },
  ]);
}

export function registerStatus(program: Command): void {
  program
    .command('status')
    .description('how fresh each source × dataset is: lag, last success, state (failing and stale first)')
    .option('--integration <id>', 'only this integration', uuid)
    .option('--org <org>', 'only integrations of this org')
    .option('--json', "print the API's freshness answer (an array of them without --integration)")
    .addHelpText(
      'after',
      `
A line is fresh when its lag (now − watermark) is within twice the interval of the integration's
tightest enabled incremental or full_resync schedule, else within SYNC_FRESHNESS_MAX_LAG_SECONDS
(default 86400). States, worst first: failing (the latest finished unit failed), deferred_by_budget
(a rate limit defers its unit), catching_up (lagging; the estimate comes from recent units' drain
rate), never_synced, fresh. Lines that are not fresh are marked with !.`,
    )
    .action(async (opts: StatusOptions) => {
      const reports = await withSession({}, async ({ engine }) => {
        const rows = await integrationsOf(engine.ctx, opts);
        const out: IntegrationFreshness[] = [];
        for (const row of rows) out.push(await readIntegrationFreshness(engine.ctx, row));
        return out;
      });
      if (opts.json) return printJson(opts.integration === undefined ? reports : reports[0]);
      if (reports.length === 0) return printLine('no integration');
      printReports(reports);
    });
}
