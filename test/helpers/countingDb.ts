/** A Db that records the text of every statement run through it (its transactions' included). */
import type { Db, Tx } from '../../src/db/types.js';

export interface CountingDb {
  db: Db;
  /** Every statement's text, in order. */
  statements: string[];
  /** How many statements contained `fragment`. */
  count(fragment: string): number;
}

export function countingDb(inner: Db): CountingDb {
  const statements: string[] = [];
  const wrapTx = <T extends Tx>(tx: T): T =>
    new Proxy(tx, {
      get(target, prop, receiver) {
        if (prop === 'query') {
          return (text: string, values?: readonly unknown[]) => {
            statements.push(text);
            return target.query(text, values);
          };
        }
        if (prop === 'transaction') {
          return <R>(fn: (t: Tx) => Promise<R>) => (target as unknown as Db).transaction((t) => fn(wrapTx(t)));
        }
        const v: unknown = Reflect.get(target, prop, receiver);
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
  return {
    db: wrapTx(inner),
    statements,
    count: (fragment) => statements.filter((s) => s.includes(fragment)).length,
  };
}
