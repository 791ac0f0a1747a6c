/**
 * Jira Cloud's quota headers (the points-based quota, per hour): `Beta-RateLimit-Policy:
 * "tenant-app-quota";q=100100;w=3600` (the quota `q` per window of `w` seconds) and
 * `Beta-RateLimit: "tenant-app-quota";r=17842;t=2107` (`r` left, `t` seconds to the reset), in the
 * IETF RateLimit-header form; several policies may be listed, comma-separated. The tightest one
 * (least left) is the budget. Jira sends them on success answers; traffic the quota does not
 * govern may get none.
 */
import { headerOf, type HeaderSource } from '../kit/headers.js';

export interface Quota {
  remaining: number;
  /** The policy's quota, when `Beta-RateLimit-Policy` names it. */
  limit: number | null;
  /** When it resets (`t` seconds from `now`), when `t` is given. */
  resetAt: Date | null;
}

type Items = Map<string, Record<string, number>>;

/** `"name";k=v;k=v, "other";k=v` → name → numeric parameters (unreadable items left out). */
function items(raw: string | undefined): Items {
  const out: Items = new Map();
  for (const item of (raw ?? '').split(',')) {
    const [name, ...params] = item.split(';').map((p) => p.trim());
    if (!name) continue;
    const values: Record<string, number> = {};
    for (const p of params) {
      const [k, v] = p.split('=').map((x) => x.trim());
      const n = Number(v);
      if (k && v !== undefined && v !== '' && Number.isFinite(n)) values[k.toLowerCase()] = n;
    }
    out.set(name.replace(/^"|"$/g, ''), values);
  }
  return out;
}

/** The tightest quota the headers show, or null when they show none. */
export function jiraQuota(headers: HeaderSource, now: Date): Quota | null {
  const policies = items(headerOf(headers, 'beta-ratelimit-policy'));
  let best: Quota | null = null;
  for (const [name, v] of items(headerOf(headers, 'beta-ratelimit'))) {
    if (v.r === undefined || v.r < 0) continue;
    const q = policies.get(name)?.q;
    const quota: Quota = {
      remaining: v.r,
      limit: q === undefined ? null : q,
      resetAt: v.t === undefined || v.t < 0 ? null : new Date(now.getTime() + v.t * 1000),
    };
    if (!best || quota.remaining < best.remaining) best = quota;
  }
  return best;
}
