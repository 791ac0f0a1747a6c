/**
 * How a rate-limit budget is named to an operator: its key in URLs (provider budget and credential
 * holder, opaque) and what kind of credential holds it. A holder is never a secret: a credential's
 * row id and version (`<uuid>.v<n>`), or a GitHub App installation (`app-<app>-installation-<id>@host`,
 * `app-<app>-owner-<login>@host`), or whatever id a provider gave its credential.
 */

export type BudgetCredentialKind = 'token' | 'app_installation' | 'other';

export interface BudgetCredential {
  kind: BudgetCredentialKind;
  /** A label for people: the App and installation, or the credential's version (never the secret). */
  label: string;
}

const TOKEN = /^([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.v([0-9]+)$/;
const INSTALLATION = /^app-([0-9]+)-installation-([0-9]+)@(.+)$/;
const OWNER = /^app-([0-9]+)-owner-(.*)@(.+)$/;

/** What kind of credential `holder` (rate_budgets.credential_id) names, and a label for it. */
export function describeBudgetHolder(holder: string): BudgetCredential {
  const token = TOKEN.exec(holder);
  if (token) return { kind: 'token', label: `credential ${token[1]!.slice(0, 8)}…, version ${token[2]!}` };
  const inst = INSTALLATION.exec(holder);
  if (inst)
    return { kind: 'app_installation', label: `GitHub App ${inst[1]!}, installation ${inst[2]!} (${inst[3]!})` };
  const owner = OWNER.exec(holder);
  if (owner) return { kind: 'app_installation', label: `GitHub App ${owner[1]!} on ${owner[2]!} (${owner[3]!})` };
  return { kind: 'other', label: holder };
}

/** The opaque key of one budget in URLs: base64url of `provider`, a newline, and the holder. */
export function budgetKeyOf(provider: string, holder: string): string {
  return Buffer.from(`${provider}\n${holder}`, 'utf8').toString('base64url');
}

const CONTROL = /[\u0000-\u001f\u007f]/;

/** The provider budget and holder a key names, or null when it names none. */
export function parseBudgetKey(key: string): { provider: string; holder: string } | null {
  if (!/^[A-Za-z0-9_-]{1,700}$/.test(key)) return null;
  const text = Buffer.from(key, 'base64url').toString('utf8');
  const cut = text.indexOf('\n');
  if (cut <= 0 || cut === text.length - 1) return null;
  if (budgetKeyOf(text.slice(0, cut), text.slice(cut + 1)) !== key) return null;
  const [provider, holder] = [text.slice(0, cut), text.slice(cut + 1)];
  // No stored provider or holder has a control character (PostgreSQL's text cannot even hold a NUL).
  if (CONTROL.test(provider) || CONTROL.test(holder)) return null;
  return { provider, holder };
}
