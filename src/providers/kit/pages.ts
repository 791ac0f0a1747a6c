/**
 * The pages a unit reads. Every listing (a `next` link, a cursor, a `startAt` or a page token
 * followed from page to page) walks a `PageTrail`: it visits each page's key before asking for it.
 * - A key seen twice within one listing is a pagination loop: the unit ends at once with a
 *   non-retryable `provider_error` (`pagination loop: … seen twice`) instead of asking again.
 * - Every listing of a unit counts its pages against the unit's one bound (SYNC_UNIT_MAX_PAGES):
 *   the page past it ends the unit with a non-retryable `provider_error` before it is asked for.
 *   A unit that stops there does not hand on a checkpoint: what it wrote stays written (every
 *   normalized write is an idempotent upsert) and its watermark does not move.
 * Messages name the integration and the listing, never a key's content (a cursor or a link may
 * carry more than a position).
 */
import { NonRetryableError } from '../../errors.js';
import { DEFAULT_PROVIDER_LIMITS } from './limits.js';

/** The pages one unit reads, over all its listings. */
export class UnitPages {
  private read = 0;

  /** `subject` names the integration in messages (subjectOf); `max`: pages the unit may read. */
  constructor(
    readonly subject: string,
    readonly max: number = DEFAULT_PROVIDER_LIMITS.unitMaxPages,
  ) {}

  /** Pages counted so far. */
  get count(): number {
    return this.read;
  }

  /** A new listing's trail; `what` names it in messages (e.g. `GET /repos/acme/app/issues`). */
  trail(what: string): PageTrail {
    return new PageTrail(this, what);
  }

  /** Counts one more page of `what`; throws when it would pass the unit's bound. */
  add(what: string): void {
    if (this.read >= this.max) {
      const msg = `${this.subject}: ${what}: more than ${this.max} pages in one unit (SYNC_UNIT_MAX_PAGES)`;
      throw new NonRetryableError(msg, 'provider_error');
    }
    this.read++;
  }
}

/** One listing's pages: each key (URL, cursor, offset, token) visited once. */
export class PageTrail {
  private readonly seen = new Set<string>();

  constructor(
    private readonly unit: UnitPages,
    readonly what: string,
  ) {}

  /** Records the page `key` is about to be asked for; throws on a key seen before or past the unit's bound. */
  visit(key: string | number | null): void {
    const k = key === null ? '' : String(key);
    if (this.seen.has(k)) {
      const loop = `pagination loop: the key of page ${this.seen.size + 1} was seen twice`;
      throw new NonRetryableError(`${this.unit.subject}: ${this.what}: ${loop}`, 'provider_error');
    }
    this.unit.add(this.what);
    this.seen.add(k);
  }
}
