/**
 * `syncrelay budgets [--org ORG] [--provider P] [--json]`: the shared rate-limit budgets per
 * credential, as recorded: remaining of limit until reset, a limit's lift time, the state, limit
 * responses and deferrals over the last hour and day, and the units waiting on each.
 */
import type { Command } from 'commander';
import { listBudgetOrgs } from '../../store/rateBudgetReport.js';
import { rateBudgetViews, type BudgetView } from '../../store/rateBudgetView.js';
import { isoOrDash, printJson, printTable } from '../output.js';
import { withSession } from '../session.js';

interface BudgetsOptions {
  org?: string;
  provider?: string;
  json?: boolean;
}

type OrgBudget = BudgetView & { org_id: string };

export function registerBudgets(program: Command): void {
  program
    .command('budgets')
    .description('the shared rate-limit budgets per credential: what remains, limits, deferrals, units waiting')
    .option('--org <org>', 'only this org')
    .option('--provider <provider>', "only this provider's budgets (linear includes linear:complexity)")
    .option('--json', 'print the budgets as JSON (as GET /api/v1/rate-budgets answers them, with org_id)')
    .addHelpText(
      'after',
      `
state: LIMITED (a limit response lifts at "limited until"), EXHAUSTED (nothing remains before the
reset), ok, or unknown (no remaining count reported). "limits" and "deferrals" count the last hour /
the last day: limit responses recorded, and rate-limit deferrals of the units of the integrations
using the credential. "waiting" is units deferred by a rate limit now, and the soonest due.`,
    )
    .action(async (opts: BudgetsOptions) => {
      const budgets = await withSession({}, async ({ engine }) => {
        const orgs = opts.org ? [opts.org] : await listBudgetOrgs(engine.db);
        const now = engine.ctx.clock.now();
        const all: OrgBudget[] = [];
        for (const orgId of orgs) {
          const q = { orgId, provider: opts.provider ?? null, now, maxWaitMs: engine.ctx.settings.rateLimitMaxWaitMs };
          for (const v of await rateBudgetViews(engine.db, q)) all.push({ org_id: orgId, ...v });
        }
        return all;
      });
      if (opts.json) return printJson({ items: budgets });
      printBudgets(budgets);
    });
}

const STATE_TEXT: Record<BudgetView['state'], string> = {
  limited: 'LIMITED',
  exhausted: 'EXHAUSTED',
  ok: 'ok',
  unknown: 'unknown',
};

function credentialText(v: BudgetView): string {
  const names = v.credential.integrations.map((i) => i.name).join(', ');
  return names ? `${names} (${v.credential.kind})` : `${v.credential.label} (${v.credential.kind})`;
}

function printBudgets(rows: readonly OrgBudget[]): void {
  printTable(rows, [
    { header: 'org', value: (v) => v.org_id },
    { header: 'provider', value: (v) => v.provider },
    { header: 'credential', value: credentialText },
    { header: 'state', value: (v) => STATE_TEXT[v.state] },
    { header: 'remaining', value: (v) => `${v.remaining ?? '-'}/${v.limit ?? '-'}`, align: 'right' },
    { header: 'resets', value: (v) => isoOrDash(v.reset_at) },
    { header: 'limited until', value: (v) => isoOrDash(v.limited_until) },
    { header: 'observed', value: (v) => isoOrDash(v.observed_at) },
    { header: 'limits 1h/24h', value: (v) => `${v.limit_responses.last_hour}/${v.limit_responses.last_day}` },
    { header: 'deferrals 1h/24h', value: (v) => `${v.deferrals.last_hour}/${v.deferrals.last_day}` },
    { header: 'waiting', value: (v) => v.waiting.units, align: 'right' },
    { header: 'next due', value: (v) => isoOrDash(v.waiting.next_due_at) },
  ]);
}
