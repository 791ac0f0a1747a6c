/**
 * Short-lived tokens a process keeps in memory for its units (a GitHub App installation's token, a
 * Jira OAuth access token): one per key, shared by every unit of the process, renewed when due
 * (`renewAt`) and once more when an answer refuses it. One renewal of a key runs at a time: the
 * other units wait for it; when it fails for its own unit's reasons (that unit aborted), the next
 * waiting unit renews itself.
 */

/** A token held, with its expiry and when it is renewed (epoch ms). */
export interface HeldToken {
  token: string;
  expiresAt: number;
  renewAt: number;
}

/** Renews a key's token; `refused` is the token an answer last refused, if that is why (null otherwise). */
export type Renew = (refused: string | null) => Promise<HeldToken>;

/** A unit's view of a key's token. */
export interface RenewableToken {
  /** The token for the next request (renewed first when due or refused). */
  current(): Promise<string>;
  /** `token` was refused with 401: the next `current()` renews (once per token). */
  refused(token: string): void;
}

/** Renewal starts this long before expiry at most (a quarter of the lifetime when that is shorter). */
export const RENEW_BEFORE_MAX_MS = 5 * 60_000;

/** When a token issued at `issuedAt` and expiring at `expiresAt` is renewed. */
export function renewAt(issuedAt: number, expiresAt: number): number {
  const life = Math.max(0, expiresAt - issuedAt);
  return expiresAt - Math.min(RENEW_BEFORE_MAX_MS, life / 4);
}

interface Entry {
  held: HeldToken | null;
  pending: Promise<HeldToken> | null;
  refused: string | null;
}

/** The tokens of one kind in this process, by key (never a secret itself: hash one into it). */
export class TokenCache {
  private readonly entries = new Map<string, Entry>();

  /** The token of `key`, renewed through `renew`; `now` is the unit's clock. */
  token(key: string, renew: Renew, now: () => number): RenewableToken {
    const entry = (): Entry => {
      let e = this.entries.get(key);
      if (!e) this.entries.set(key, (e = { held: null, pending: null, refused: null }));
      return e;
    };
    /** The renewal under way (another unit's, or one this unit starts), and whether it is this unit's. */
    const renewal = (e: Entry): { pending: Promise<HeldToken>; mine: boolean } => {
      if (e.pending) return { pending: e.pending, mine: false };
      e.pending = renew(e.refused)
        .then((held) => (e.held = held))
        .finally(() => (e.pending = null));
      return { pending: e.pending, mine: true };
    };
    return {
      async current() {
        const e = entry();
        if (e.held && now() < e.held.renewAt) return e.held.token;
        const first = renewal(e);
        try {
          return (await first.pending).token;
        } catch (err) {
          if (first.mine) throw err;
          return (await renewal(e).pending).token;
        }
      },
      refused(token) {
        const e = entry();
        if (e.held?.token !== token) return;
        e.held = null;
        e.refused = token;
      },
    };
  }

  /** Forgets every token (tests; a process never needs to). */
  clear(): void {
    this.entries.clear();
  }
}
